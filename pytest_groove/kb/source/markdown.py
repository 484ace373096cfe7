"""Markdown parsing: YAML frontmatter, ``##``/``###`` sections, short-section merge.

This module knows nothing about breadcrumbs or file names; it turns a decoded
Markdown text into frontmatter fields plus an ordered list of :class:`Section`
objects (heading, level, ancestry, content).  :mod:`pytest_groove.kb.source.parse`
turns those into :class:`~pytest_groove.kb.source.records.Chunk` records.

The rules are deliberately simple and exact, because chunk boundaries are part
of what an evaluation run measures:

* only ``## `` and ``### `` lines (after trimming) are headings; there is no
  code-fence awareness, so a ``## `` line inside a fenced block still splits;
* a ``# Title`` line opening the body is the document's title, not text: it
  goes into every chunk's breadcrumb (when the frontmatter has no title);
* the heading line is removed from the body;
* a section is excluded when any ``exclude_headings`` entry is a substring of
  its heading text, until the next heading of any level;
* a heading with no text of its own (``## Setup`` directly followed by
  ``### Linux``) is not a chunk: it lives on in its subsections' ancestry;
* a section under 50 UTF-8 bytes is appended to the previous kept section, its
  heading kept as a line of the text; a short *first* section takes in the
  next one instead, so no chunk is a few words long;
* a section over 64 KiB of UTF-8 (:data:`MAX_CHUNK_BYTES`: a pasted log, a
  minified file, one 10 MB line) is cut into pieces of at most that size, each
  under the section's heading: at a paragraph break when the piece's second half
  has one, else at a line break, else at a space, else between two characters.
  Every piece holds at least a quarter of the size limit (the whitespace
  trimmed from it aside), so none is a few words long; the whitespace at a cut
  is dropped, nothing else.  What one section costs to embed, index and show is
  then bounded whatever its length (a note still costs what its size does);
* a heading or a ``# Title`` over 4,096 characters (:data:`MAX_HEADING_CHARS`)
  keeps its first 4,096, with a warning.

:data:`CHUNKER_VERSION` names these rules: an index records it and is rebuilt
when it differs, and an evaluation run's fingerprint carries it, because chunk
boundaries move every ranking.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any

import yaml

try:  # the libyaml-backed loader is much faster; same safe constructor either way
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

from pytest_groove.text.plain import normalise_newlines, split_lines, strip_boms, trim

#: sections whose content is shorter than this many UTF-8 bytes are merged
#: into the previous section
MERGE_THRESHOLD_BYTES = 50

#: sections longer than this many UTF-8 bytes are cut into pieces of at most this size:
#: a hundred times the largest section of the evaluation corpora (630 bytes), and about
#: 30 windows of the default model; measured on a 10 MB line, search costs the same
#: from 16 KiB to 64 KiB and grows above it (81 MiB peak at 1 MiB against 70 MiB)
MAX_CHUNK_BYTES = 64 * 1024

#: headings and titles are cut to this many characters (as a retriever's hit heading is)
MAX_HEADING_CHARS = 4096

#: version of the chunking rules (1 = the reference's: heading-only chunks, a
#: leading ``# Title`` kept as text, short first sections standing alone; 2 = this
#: page's rules without the size limit; 3 = with it)
CHUNKER_VERSION = 3

#: the line that opens (and closes) YAML frontmatter
FRONTMATTER_FENCE = "---"
_FENCE = FRONTMATTER_FENCE


@dataclass(frozen=True)
class Frontmatter:
    """The recognised frontmatter keys; everything else in the YAML is ignored."""

    title: str | None = None
    date: str | None = None
    topic: str | None = None
    depth: str | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Section:
    """One stretch of body text under (at most) one heading."""

    #: heading text without the ``##`` marker; None for the preamble
    heading: str | None
    #: 2 or 3; None for the preamble
    level: int | None
    #: texts of the enclosing headings, outermost first (never includes ``heading``)
    ancestry: tuple[str, ...]
    content: str


@dataclass(frozen=True)
class MarkdownDocument:
    frontmatter: Frontmatter
    sections: tuple[Section, ...]
    #: text of a ``# Title`` line opening the body, None when there is none
    h1_title: str | None = None


# --------------------------------------------------------------------------- frontmatter


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Return ``(yaml_text, body)``; ``yaml_text`` is None when there is no frontmatter.

    Leading BOMs are removed first.  Frontmatter exists only when the text starts
    with ``---`` and a later line starts with ``---``; otherwise the whole text
    (including an opening ``---``) is the body.  Whatever follows the closing
    ``---`` on its line starts the body.
    """
    text = strip_boms(text)
    if not text.startswith(_FENCE):
        return None, text
    rest = text[len(_FENCE) :].lstrip("\r")
    if rest.startswith("\n"):
        rest = rest[1:]
    end = rest.find("\n" + _FENCE)
    if end < 0:
        return None, text
    body = rest[end + 1 + len(_FENCE) :].lstrip("\r\n")
    return rest[:end], body


class _FrontmatterLoader(_BaseLoader):
    """A safe YAML loader that leaves plain scalars as the text the author wrote.

    Only ``null`` is still recognised.  Without this, ``date: 2026-04-10`` would
    become a ``datetime.date`` and ``depth: 01`` the number 1, and ``yes`` a bool
    (YAML 1.1); the recognised keys are all meant to be text, so we keep the
    author's spelling instead of re-rendering a converted value.
    """


_FrontmatterLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag == "tag:yaml.org,2002:null"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    if any(tag == "tag:yaml.org,2002:null" for tag, _ in resolvers)
}


class _FrontmatterTypeError(ValueError):
    """A recognised key holds a value of the wrong shape."""


def _scalar_text(key: str, value: object) -> str | None:
    """Text of a scalar value; collections are a type error.

    Explicitly tagged scalars (``!!int 3``, ``!!timestamp ...``) are rendered as
    their natural text.  Collections are refused rather than rendered, which
    also keeps a YAML alias bomb from being expanded into a huge string.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise _FrontmatterTypeError(f"{key} must be a single value, not {type(value).__name__}")


def _tags(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _FrontmatterTypeError(f"tags must be a list, not {type(value).__name__}")
    tags: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise _FrontmatterTypeError("every tag must be a string")
        tags.append(item)
    return tuple(tags)


def read_frontmatter(
    yaml_text: str, on_warning: Callable[[str], None] | None = None
) -> Frontmatter:
    """Parse frontmatter YAML into the recognised fields.

    Any YAML error, or a recognised key holding the wrong kind of value, yields
    an all-empty :class:`Frontmatter` (and one warning through ``on_warning``):
    one bad key must not leave a half-read document behind.
    """
    try:
        data: Any = yaml.load(normalise_newlines(yaml_text), Loader=_FrontmatterLoader)
        if data is None:
            return Frontmatter()
        if not isinstance(data, dict):
            raise _FrontmatterTypeError(f"expected key: value pairs, not {type(data).__name__}")
        return Frontmatter(
            title=_scalar_text("title", data.get("title")),
            date=_scalar_text("date", data.get("date")),
            topic=_scalar_text("topic", data.get("topic")),
            depth=_scalar_text("depth", data.get("depth")),
            tags=_tags(data.get("tags")),
        )
    except Exception as exc:  # any YAML failure means "no frontmatter fields"
        if on_warning is not None:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            on_warning(f"frontmatter ignored ({reason})")
        return Frontmatter()


# --------------------------------------------------------------------------- sections


def heading_of(line: str) -> tuple[int, str] | None:
    """``(level, text)`` when ``line`` is a ``##`` or ``###`` heading, else None;
    the text is cut to :data:`MAX_HEADING_CHARS`."""
    found = _full_heading(line)
    if found is None:
        return None
    return found[0], trim(found[1][:MAX_HEADING_CHARS])


def _full_heading(line: str) -> tuple[int, str] | None:
    if "#" not in line:  # most lines: one scan in C before any copy
        return None
    stripped = trim(line)
    if stripped.startswith("### "):
        return 3, trim(stripped[4:])
    if stripped.startswith("## "):
        return 2, trim(stripped[3:])
    return None


def split_sections(
    body: str, exclude_headings: Sequence[str] = (), cut: list[str] | None = None
) -> list[Section]:
    """Cut ``body`` at headings into raw (unmerged) sections.

    The preamble before the first heading is a section only when it has text; a
    heading always yields a section, even with an empty body.  Excluded headings
    still take part in the ancestry of the headings below them.  ``cut``
    (optional) receives each heading cut to :data:`MAX_HEADING_CHARS`, as cut.
    """
    sections: list[Section] = []
    heading: tuple[int, str] | None = None
    ancestry: tuple[str, ...] = ()
    lines: list[str] = []
    excluded = False
    stack: list[tuple[int, str]] = []

    def flush() -> None:
        content = trim("\n".join(lines))
        if content or heading is not None:
            level, text = heading if heading is not None else (None, None)
            sections.append(Section(text, level, ancestry, content))

    for line in split_lines(body):
        found = heading_of(line)
        if found is None:
            if not excluded:
                lines.append(line)
            continue
        if not excluded:
            flush()
        lines = []
        level, text = found
        if cut is not None and len(line) > MAX_HEADING_CHARS and _is_cut(line):
            cut.append(text)
        while stack and stack[-1][0] >= level:
            stack.pop()
        parents = tuple(t for _, t in stack)
        stack.append(found)
        excluded = any(pattern in text for pattern in exclude_headings)
        heading, ancestry = (None, ()) if excluded else (found, parents)
    if not excluded:
        flush()
    return sections


def _is_cut(line: str) -> bool:
    found = _full_heading(line)
    return found is not None and len(found[1]) > MAX_HEADING_CHARS


def _marker(section: Section) -> str:
    """The heading line a folded section keeps inside the text it is merged into."""
    if section.heading is None:
        return ""
    return "#" * (section.level or 2) + f" {section.heading}\n\n"


def _joined(first: str, second: str) -> str:
    return f"{first}\n\n{second}" if first and second else first or second


def merge_short_sections(
    sections: Sequence[Section], folded: list[tuple[Section, Section]] | None = None
) -> list[Section]:
    """Drop heading-only sections and fold sections under 50 bytes into a neighbour.

    A section with no text is dropped: its heading is already part of the
    ancestry of the sections below it.  A short section is appended to the
    previous kept one with its heading as a ``##``/``###`` line; the receiving
    section keeps its own heading, level and ancestry (no cascading: a section
    that grew by merging does not become "long" for the next one).  A short
    section with nothing before it takes in the next section instead.  Either
    way a merged chunk is named by its first section, and only a document made
    of a single short section has a short chunk.

    ``folded`` (optional) receives ``(section, receiver)`` for each section whose
    heading is no chunk's heading after the merge: what an error names as "merged".
    """
    merged: list[Section] = []
    pending: Section | None = None  # a short first section waiting for a successor
    for section in sections:
        if not section.content:
            continue
        if pending is not None:
            text = _joined(pending.content, _marker(section) + section.content)
            merged.append(Section(pending.heading, pending.level, pending.ancestry, text))
            if folded is not None:
                folded.append((section, pending))
            pending = None
            continue
        short = len(section.content.encode("utf-8")) < MERGE_THRESHOLD_BYTES
        if not short:
            merged.append(section)
        elif merged:
            target = merged[-1]
            text = _joined(target.content, _marker(section) + section.content)
            merged[-1] = Section(target.heading, target.level, target.ancestry, text)
            if folded is not None:
                folded.append((section, target))
        else:
            pending = section
    if pending is not None:
        merged.append(pending)
    return merged


def split_title(body: str) -> tuple[str | None, str]:
    """``(title, rest)`` when the body opens with a ``# Title`` line, else ``(None, body)``.

    Only the first non-blank line counts; a ``#`` line further down is text.
    """
    lines = split_lines(body)
    for position, line in enumerate(lines):
        stripped = trim(line)
        if not stripped:
            continue
        if stripped.startswith("# ") and trim(stripped[2:]):
            return trim(stripped[2:]), "\n".join(lines[position + 1 :])
        break
    return None, body


def parse_markdown(
    text: str,
    exclude_headings: Sequence[str] = (),
    on_warning: Callable[[str], None] | None = None,
) -> MarkdownDocument:
    """Frontmatter plus merged sections of one decoded Markdown file.

    A title or heading over :data:`MAX_HEADING_CHARS` is cut to it, one warning
    through ``on_warning`` saying what was cut; a section over
    :data:`MAX_CHUNK_BYTES` is cut into pieces (:func:`split_long_sections`).
    """
    yaml_text, body = split_frontmatter(text)
    frontmatter = Frontmatter() if yaml_text is None else read_frontmatter(yaml_text, on_warning)
    h1_title, body = split_title(body)
    long_titles = [t for t in (frontmatter.title, h1_title) if t and len(t) > MAX_HEADING_CHARS]
    if long_titles:
        frontmatter = replace(frontmatter, title=_capped(frontmatter.title))
        h1_title = _capped(h1_title)
    cut: list[str] = []
    sections = merge_short_sections(split_sections(body, exclude_headings, cut))
    if on_warning is not None and (long_titles or cut):
        on_warning(_cut_warning(len(long_titles), len(cut)))
    return MarkdownDocument(frontmatter, tuple(split_long_sections(sections)), h1_title)


def _capped(title: str | None) -> str | None:
    return None if title is None else trim(title[:MAX_HEADING_CHARS])


def _cut_warning(titles: int, headings: int) -> str:
    """One line saying how many titles and headings were cut, and to what."""
    what = [
        f"{count} {noun}{'' if count == 1 else 's'}"
        for count, noun in ((titles, "title"), (headings, "heading"))
        if count
    ]
    return (
        f"{' and '.join(what)} over {MAX_HEADING_CHARS:,} characters cut to "
        f"{'its' if titles + headings == 1 else 'their'} first {MAX_HEADING_CHARS:,} "
        f"(shorten {'it' if titles + headings == 1 else 'them'} in the note to index "
        f"{'it' if titles + headings == 1 else 'them'} whole)"
    )


def split_long_sections(sections: Sequence[Section], limit: int = MAX_CHUNK_BYTES) -> list[Section]:
    """``sections`` with each one over ``limit`` UTF-8 bytes cut into pieces
    (:func:`split_text`), each under the section's own heading and ancestry."""
    out: list[Section] = []
    for section in sections:
        content = section.content
        if len(content) <= limit // 4 or len(content.encode("utf-8", "surrogatepass")) <= limit:
            out.append(section)
            continue
        out.extend(replace(section, content=piece) for piece in split_text(content, limit))
    return out


def split_text(text: str, limit: int = MAX_CHUNK_BYTES) -> list[str]:
    """``text`` in trimmed pieces of at most ``limit`` UTF-8 bytes (``limit`` >= 16).

    Each cut falls at the last paragraph break of the piece's second half, else its
    last line break, else its last space or tab, else between two characters.  A
    cut leaves at least a quarter of ``limit`` after it, so every piece holds a
    quarter of the limit, but for the whitespace trimmed from it.  Only the
    whitespace at the cuts is lost: the pieces hold every other character of
    ``text``, in order.
    """
    data = text.encode("utf-8", "surrogatepass")
    pieces: list[str] = []
    start = 0
    while len(data) - start > limit:
        stop = start + min(limit, len(data) - start - limit // 4)
        end = _cut_at(data, stop - limit // 2, stop)
        pieces.append(trim(data[start:end].decode("utf-8", "surrogatepass")))
        start = end
    pieces.append(trim(data[start:].decode("utf-8", "surrogatepass")))
    return [piece for piece in pieces if piece]


def _cut_at(data: bytes, floor: int, stop: int) -> int:
    """Where a piece ending at or before ``stop`` (and after ``floor``) ends."""
    for separator in (b"\n\n", b"\n", b" ", b"\t"):
        at = data.rfind(separator, floor, stop)
        if at >= 0:
            return at + len(separator)
    end = stop
    while data[end] & 0xC0 == 0x80:  # a UTF-8 continuation byte: not a character start
        end -= 1
    return end


def merged_headings(text: str, exclude_headings: Sequence[str] = ()) -> dict[str, str | None]:
    """Each heading of ``text`` whose section was folded into another because it is short,
    mapped to the heading of the chunk that holds it (None: the document's untitled start).

    Cheap enough for an error path or ``groove init``: frontmatter is skipped, not parsed.
    """
    _, body = split_frontmatter(text)
    _, body = split_title(body)
    folded: list[tuple[Section, Section]] = []
    merge_short_sections(split_sections(body, exclude_headings), folded)
    return {section.heading: into.heading for section, into in folded if section.heading}
