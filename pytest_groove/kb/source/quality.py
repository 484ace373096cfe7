"""Cheap per-chunk numbers stored beside each chunk: token estimate and quality score.

Both are heuristics computed at insert time.  ``token_count`` feeds the parent
retriever's "small chunk" test, so it must match the stored value exactly;
``quality_score`` marks stubs ("TODO", one short line) so they can be told
apart from real sections.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import struct

from pytest_groove.text.plain import trim

_INT32_MAX = 2**31 - 1

#: placeholder bodies that say "nothing written here yet" (compared ASCII-case-insensitively)
PLACEHOLDERS = frozenset(
    {
        "tbd",
        "todo",
        "wip",
        "n/a",
        "未定",
        "準備中",
        "(準備中)",
        "詳細は後述",
        "詳細は後述する",
        "ここに書く",
        "後で書く",
        "coming soon",
        "後述",
    }
)
#: punctuation and blanks ignored at the end of a placeholder ("TODO." is still a stub)
_PLACEHOLDER_TAIL = ".。、, \t"
_LONGEST_PLACEHOLDER = max(len(p) for p in PLACEHOLDERS)

_SHORT_CHARS = 30
_ONE_LINE_CHARS = 80
_SHORT_PENALTY = 0.6
_PLACEHOLDER_PENALTY = 0.5
_ONE_LINE_PENALTY = 0.3


def token_count(content: str) -> int:
    """Approximate tokens as UTF-8 bytes // 4 (capped to fit a signed 32-bit int)."""
    return min(len(content.encode("utf-8")) // 4, _INT32_MAX)


def _f32(value: float) -> float:
    """Round to the nearest 32-bit float, so stored scores equal the reference's."""
    result: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return result


def _ascii_lower(text: str) -> str:
    return "".join(c.lower() if c.isascii() else c for c in text)


def is_placeholder(content: str) -> bool:
    """True when the (trimmed) content is only a "to be written" marker."""
    core = trim(content).rstrip(_PLACEHOLDER_TAIL)
    if len(core) > _LONGEST_PLACEHOLDER:
        return False  # cheap exit: most chunks are far longer than any marker
    return _ascii_lower(core) in PLACEHOLDERS


def quality_score(content: str) -> float:
    """Score in [0, 1]: 1.0 minus penalties for very short, placeholder and one-line text."""
    text = trim(content)
    chars = len(text)
    score = _f32(1.0)
    if chars < _SHORT_CHARS:
        score = _f32(score - _f32(_SHORT_PENALTY))
    if is_placeholder(text):
        score = _f32(score - _f32(_PLACEHOLDER_PENALTY))
    if "\n" not in text and chars < _ONE_LINE_CHARS:
        score = _f32(score - _f32(_ONE_LINE_PENALTY))
    return max(score, 0.0)
