"""Which Japanese script a character belongs to.

One definition shared by the query compiler (which cuts queries into runs of one
script) and the term text of the second full-text table (which cuts stored text
the same way), so a word is split identically on both sides.
"""

from __future__ import annotations

from typing import Literal

JapaneseScript = Literal["kanji", "hiragana", "katakana"]


def japanese_script(char: str) -> JapaneseScript | None:
    """``kanji``, ``hiragana``, ``katakana`` or None for any other character.

    Kanji includes the iteration marks ``々`` and ``〆``; katakana includes the
    long-vowel mark ``ー``, the full-width middle dot and half-width katakana.
    """
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


#: share of Japanese characters (of the non-space ones) from which a text counts as Japanese
JAPANESE_SHARE = 0.2


def script_group(text: str) -> str:
    """``"ja"`` for text written mostly in Japanese scripts, ``"other"`` otherwise.

    Used to group chunks and queries by language for the vector leg's centring
    (see :mod:`pytest_groove.kb.vectors`).  A text counts as Japanese when at
    least a fifth of its non-space characters are kana or kanji, so an English
    identifier or two in a Japanese sentence does not change its group.
    """
    total = japanese = 0
    for char in text:
        if char.isspace():
            continue
        total += 1
        japanese += japanese_script(char) is not None
    return "ja" if total and japanese >= JAPANESE_SHARE * total else "other"


#: how much of a chunk (heading + content) decides its script group
OPENING_CHARS = 400


def chunk_opening(heading: str | None, content: str) -> str:
    """The text a chunk's script group is judged by: its heading and the start of its text."""
    return f"{heading or ''} {content}"[:OPENING_CHARS]
