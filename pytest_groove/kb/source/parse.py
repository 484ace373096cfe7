"""Turn the raw bytes of one KB file into a :class:`ParsedDocument`.

This is the single entry point the indexer calls per file.  It decodes, picks
the parser from the file extension, and assembles :class:`Chunk` records with
their breadcrumb (``context``).  Every per-file problem surfaces as
:class:`ParseFailure`, which the indexer reports as a warning and skips; no
other exception is meant to escape for any input bytes.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import PurePosixPath

from pytest_groove.kb.source.markdown import Section, parse_markdown, split_long_sections
from pytest_groove.kb.source.records import Chunk, ParsedDocument
from pytest_groove.kb.source.walk import file_extension
from pytest_groove.settings.config import IndexSettings
from pytest_groove.text.plain import collapse_whitespace, plain_text_body, trim

#: breadcrumbs are cut to this many code points
CONTEXT_MAX_CHARS = 200
CONTEXT_SEPARATOR = " > "


class ParseFailure(Exception):
    """One file could not be parsed; the indexer skips it with a warning."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def title_from_filename(path: str) -> str | None:
    """A readable title from a file name: ``notes/deep-dive-2026.txt`` → ``deep dive 2026``.

    The extension is dropped unless its dot is the name's first character
    (``.hidden`` stays), ``-`` and ``_`` become spaces, whitespace is collapsed.
    """
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    dot = name.rfind(".")
    if dot > 0:
        name = name[:dot]
    title = collapse_whitespace(name.replace("-", " ").replace("_", " "))
    return title or None


def build_context(parts: Iterable[str]) -> str | None:
    """Join breadcrumb parts with `` > ``, or None when nothing is left.

    Parts are trimmed, blank ones dropped, and a part equal to the one kept just
    before it is dropped (a title repeated as the first heading shows once).
    The result is cut to 200 code points.
    """
    kept: list[str] = []
    for part in parts:
        text = trim(part)
        if text and (not kept or kept[-1] != text):
            kept.append(text)
    if not kept:
        return None
    return CONTEXT_SEPARATOR.join(kept)[:CONTEXT_MAX_CHARS]


def path_category_topic(rel_path: str) -> tuple[str | None, str | None]:
    """Category and topic implied by the folders of a KB-relative path.

    ``index.md`` → (None, None); ``news/x.md`` → (``news``, None);
    ``watch/anthropic/sub/x.md`` → (``watch``, ``anthropic``).
    """
    segments = rel_path.split("/")
    if len(segments) < 2:
        return None, None
    if len(segments) == 2:
        return segments[0], None
    return segments[0], segments[1]


def _chunks(sections: Iterable[Section], title: str | None) -> tuple[Chunk, ...]:
    head = [title] if title is not None else []
    chunks: list[Chunk] = []
    for index, section in enumerate(sections):
        own = [section.heading] if section.heading is not None else []
        context = build_context([*head, *section.ancestry, *own])
        chunks.append(Chunk(index, section.heading, section.level, section.content, context))
    return tuple(chunks)


def _parse_markdown_file(
    rel_path: str,
    text: str,
    settings: IndexSettings,
    on_warning: Callable[[str], None] | None,
) -> ParsedDocument:
    doc = parse_markdown(text, settings.exclude_headings, on_warning)
    fm = doc.frontmatter
    # the breadcrumb needs some title: the frontmatter's, else the body's `# Title`,
    # else one made from the file name; the stored title is the author's own
    crumb_title = fm.title if fm.title is not None and trim(fm.title) else doc.h1_title
    if crumb_title is None:
        crumb_title = title_from_filename(rel_path)
    topic = fm.topic if fm.topic is not None else path_category_topic(rel_path)[1]
    return ParsedDocument(
        title=fm.title if fm.title is not None else doc.h1_title,
        topic=topic,
        date=fm.date,
        depth=fm.depth,
        tags=fm.tags,
        chunks=_chunks(doc.sections, crumb_title),
    )


def _parse_text_file(rel_path: str, text: str) -> ParsedDocument:
    title = title_from_filename(rel_path)
    body = plain_text_body(text)
    sections = [] if body is None else split_long_sections([Section(None, None, (), body)])
    return ParsedDocument(
        title=title,
        topic=path_category_topic(rel_path)[1],
        chunks=_chunks(sections, title),
    )


def parse_document(
    rel_path: str,
    data: bytes,
    settings: IndexSettings,
    *,
    on_warning: Callable[[str], None] | None = None,
) -> ParsedDocument:
    """Parse one KB file (``rel_path`` is KB-relative, forward slashes).

    Raises :class:`ParseFailure` for bytes that are not UTF-8, an extension with
    no parser, or any unexpected parser error.  Non-fatal problems (unreadable
    frontmatter) go to ``on_warning`` and parsing continues.  A document may
    come back with no chunks (empty file); the indexer decides what that means.
    """
    ext = file_extension(rel_path)
    if ext not in ("md", "txt"):
        raise ParseFailure(f"no parser for the extension of {PurePosixPath(rel_path).name!r}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseFailure(
            f"not valid UTF-8 (bad byte at offset {exc.start}); save the file as UTF-8"
        ) from None
    try:
        if ext == "md":
            return _parse_markdown_file(rel_path, text, settings, on_warning)
        return _parse_text_file(rel_path, text)
    except Exception as exc:
        # a parser bug must cost one file, not the whole index run
        raise ParseFailure(f"internal parser error ({type(exc).__name__}: {exc})") from exc
