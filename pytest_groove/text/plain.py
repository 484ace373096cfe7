"""Plain-text primitives shared by the parsers, and the ``.txt`` parser itself.

The chunking rules are defined in terms of a precise notion of "whitespace" and
"line" (the reference implementation's), which differ from Python's built-ins in
small ways; keeping them here means every parser agrees on them:

* :func:`trim` strips only characters with the Unicode ``White_Space`` property.
  ``str.strip()`` would additionally eat U+001C..U+001F, changing chunk text.
* :func:`split_lines` splits on ``\\n`` and drops one trailing ``\\r`` per line;
  a lone ``\\r`` inside a line is kept.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import re

#: Every code point with the Unicode White_Space property.
WHITE_SPACE = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_WHITE_SPACE_CHARS = "".join(sorted(WHITE_SPACE))

BOM = "\ufeff"


def trim(text: str) -> str:
    """Strip Unicode White_Space (and nothing else) from both ends."""
    return text.strip(_WHITE_SPACE_CHARS)


_WHITE_SPACE_RUN = re.compile("[" + re.escape(_WHITE_SPACE_CHARS) + "]+")


def split_white_space(text: str) -> list[str]:
    """Split on runs of White_Space and drop empty pieces (unlike ``str.split()``,
    U+001C..U+001F are not separators)."""
    return [piece for piece in _WHITE_SPACE_RUN.split(text) if piece]


def collapse_whitespace(text: str) -> str:
    """Replace every run of White_Space by one space and trim the ends."""
    return " ".join(split_white_space(text))


def strip_boms(text: str) -> str:
    """Remove any number of leading byte-order marks (U+FEFF)."""
    return text.lstrip(BOM)


def normalise_newlines(text: str) -> str:
    """Turn CRLF and lone CR line endings into LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_lines(text: str) -> list[str]:
    """Split into lines on ``\\n``, removing one trailing ``\\r`` from each line.

    A trailing ``\\n`` does not start an extra empty line, and an empty text has
    no lines at all.
    """
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def plain_text_body(text: str) -> str | None:
    """The single chunk body of a ``.txt`` file, or None when it has no text.

    Plain text has no structure: no frontmatter, and ``##`` lines are literal.
    The body is returned untrimmed (only line endings are normalised) so the
    chunk shows the file as written.
    """
    body = normalise_newlines(strip_boms(text))
    if not trim(body):
        return None
    return body
