"""Which Japanese script a character belongs to.

One definition shared by the query compiler (which cuts queries into runs of one
script) and the term text of the second full-text table (which cuts stored text
the same way), so a word is split identically on both sides.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import re
from typing import Literal

JapaneseScript = Literal["kanji", "hiragana", "katakana"]


#: each script's code points as (first, last) ranges: the one definition both
#: :func:`japanese_script` and the run patterns of :mod:`pytest_groove.text.terms` follow
SCRIPT_RANGES: dict[JapaneseScript, tuple[tuple[int, int], ...]] = {
    "kanji": (
        (0x4E00, 0x9FFF),
        (0x3400, 0x4DBF),
        (0xF900, 0xFAFF),
        (0x2F800, 0x2FA1F),
        (0x3005, 0x3006),
    ),
    "hiragana": ((0x3041, 0x309F),),
    "katakana": ((0x30A1, 0x30FF), (0xFF66, 0xFF9F)),
}


def japanese_script(char: str) -> JapaneseScript | None:
    """``kanji``, ``hiragana``, ``katakana`` or None for any other character.

    Kanji includes the iteration marks ``々`` and ``〆``; katakana includes the
    long-vowel mark ``ー``, the full-width middle dot and half-width katakana.
    """
    # the ranges of SCRIPT_RANGES written out: this runs once per character of
    # every query and chunk opening (a test checks both agree on every code point)
    code = ord(char)
    if (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
        or code in (0x3005, 0x3006)
    ):
        return "kanji"
    if 0x3041 <= code <= 0x309F:
        return "hiragana"
    if 0x30A1 <= code <= 0x30FF or 0xFF66 <= code <= 0xFF9F:
        return "katakana"
    return None


def script_class(script: JapaneseScript) -> str:
    """A regular-expression character class matching one character of ``script``."""
    return "[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in SCRIPT_RANGES[script]) + "]"


#: one character of any Japanese script; ``\s`` matches exactly what :meth:`str.isspace` accepts
_JAPANESE = re.compile("|".join(script_class(script) for script in SCRIPT_RANGES))
_SPACE = re.compile(r"\s")

#: share of Japanese characters (of the non-space ones) from which a text counts as Japanese
JAPANESE_SHARE = 0.2


def script_group(text: str) -> str:
    """``"ja"`` for text written mostly in Japanese scripts, ``"other"`` otherwise.

    Used to group chunks and queries by language for the vector leg's centring
    (see :mod:`pytest_groove.kb.derived.vectors`).  A text counts as Japanese when at
    least a fifth of its non-space characters are kana or kanji, so an English
    identifier or two in a Japanese sentence does not change its group.
    """
    if text.isascii():  # no kana or kanji: most openings of most notes
        return "other"
    # counted by the regular-expression engine, not a Python loop: this runs on the
    # opening of every chunk whenever the vector index is built
    total = len(text) - len(_SPACE.findall(text))
    japanese = len(_JAPANESE.findall(text))
    return "ja" if total and japanese >= JAPANESE_SHARE * total else "other"


#: how much of a chunk (heading + content) decides its script group
OPENING_CHARS = 400


def chunk_opening(heading: str | None, content: str) -> str:
    """The text a chunk's script group is judged by: its heading and the start of its text."""
    return f"{heading or ''} {content}"[:OPENING_CHARS]
