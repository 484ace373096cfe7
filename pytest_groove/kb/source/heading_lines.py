"""How a Markdown heading line reads, the KB's way and CommonMark's.

The KB's own reader (:func:`pytest_groove.kb.source.markdown.heading_of`, and the ``# Title``
rule of ``split_title``) keeps everything after the ``##`` marker:
``## Rate limits ##`` is the heading ``Rate limits ##``.  CommonMark drops the closing
run of ``#``: ``Rate limits``.  A retriever's heading may have been read either way
(LangChain's ``MarkdownHeaderTextSplitter`` reads it as the KB does, a service built on
a CommonMark parser the other way), so both readings are offered, the KB's first, and
whichever the document's headings hold is the one matched.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import re

from pytest_groove.kb.source.markdown import heading_of
from pytest_groove.text.plain import trim

#: an ATX heading line of any level, its text kept whole (the KB's reading)
_ATX_LINE = re.compile(r"#{1,6}[ \t]+(.*)", re.DOTALL)
#: CommonMark's closing sequence: a run of ``#`` after a space, at the end
_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*\Z")


def is_heading_line(line: str) -> bool:
    """Whether ``line`` is an ATX heading line (``#`` to ``######``, then a space)."""
    return _ATX_LINE.fullmatch(trim(line)) is not None


def kb_reading(line: str) -> str | None:
    """The heading ``line`` names, read as the KB reads it (a closing ``##`` kept);
    None when it is no heading line or its text is empty."""
    found = heading_of(line)
    if found is not None:
        return found[1] or None
    match = _ATX_LINE.fullmatch(trim(line))
    if match is None:
        return None
    return trim(match.group(1)) or None


def without_closing_hashes(text: str) -> str:
    """``text`` without a CommonMark closing run of ``#`` (``Rate limits ##`` ->
    ``Rate limits``); unchanged when it has none."""
    return trim(_CLOSING.sub("", text))


def readings(text: str) -> tuple[str, ...]:
    """The spellings ``text`` may stand for, the KB's first: for a heading line its
    KB reading, then its CommonMark reading; for plain text the text, then the text
    without closing hashes.  Empty readings are left out; no reading is repeated."""
    base = kb_reading(text) if is_heading_line(text) else trim(text)
    found: list[str] = []
    for reading in (base, None if base is None else without_closing_hashes(base)):
        if reading and reading not in found:
            found.append(reading)
    return tuple(found)


__all__ = ["is_heading_line", "kb_reading", "readings", "without_closing_hashes"]
