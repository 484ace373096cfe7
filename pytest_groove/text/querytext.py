r"""Lexical layer shared by the query compiler, ``-term`` exclusion and match spans.

Two facts about query text live here so every consumer agrees on them (what counts
as whitespace is the parsers' rule too, so it lives in :mod:`pytest_groove.text.plain`):

* which of five classes a character belongs to (the FTS compiler cuts groups and runs
  by class, spec-search §4.1);
* how a query splits into plain and double-quoted segments (stage 1, §4.2), with the
  character offsets the exclusion parser needs.

The reference classifies with ``\p{Alphabetic}``, which neither ``str.isalpha`` nor
``str.isalnum`` implement (they miss ``Other_Alphabetic`` marks such as Devanagari
vowel signs).  To avoid a dependency on the third-party ``regex`` module, the word test
is :mod:`unicodedata` (letters, ``Nd``/``Nl``/``No``) plus a table of the remaining
word code points.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import bisect
import enum
import unicodedata
from dataclasses import dataclass
from typing import Literal

from pytest_groove.text.scripts import japanese_script


class CharClass(enum.Enum):
    """The five character classes of the query compiler, in test order."""

    KANJI = "kanji"
    HIRAGANA = "hiragana"
    KATAKANA = "katakana"
    WORD = "word"
    SEPARATOR = "separator"


# Word code points that unicodedata 14.0 (Python 3.11) does not report as letters or
# numbers: Other_Alphabetic marks (vowel signs, nasalisation marks, circled letters, ...)
# and letters/digits assigned after Unicode 14.0.  Generated as the Unicode 17.0 set
# [\p{Alphabetic}\p{Nd}\p{Nl}\p{No}] minus (str.isalpha() or category Nd/Nl/No) under
# Python 3.11, so on newer Pythons the union still gives the Unicode 17.0 answer.
# Space-separated hex code points or inclusive ranges.
_OTHER_ALPHABETIC_TABLE = """
0345 0363-036F 0558 058B-058C 05B0-05BD 05BF 05C1-05C2 05C4-05C5 05C7-05C9 0610-061A
064B-0657 0659-065F 0670 06D6-06DC 06E1-06E4 06E7-06E8 06ED 0711 0730-073F 07A6-07B0
0816-0817 081B-0823 0825-0827 0829-082C 088F 0897 08D4-08DF 08E3-08E9 08F0-0903 093A-093B
093E-094C 094E-094F 0955-0957 0962-0963 0981-0983 09BE-09C4 09C7-09C8 09CB-09CC 09D7
09E2-09E3 0A01-0A03 0A3E-0A42 0A47-0A48 0A4B-0A4C 0A51 0A70-0A71 0A75 0A81-0A83 0ABE-0AC5
0AC7-0AC9 0ACB-0ACC 0AE2-0AE3 0AFA-0AFC 0B01-0B03 0B3E-0B44 0B47-0B48 0B4B-0B4C 0B56-0B57
0B62-0B63 0B82 0BBE-0BC2 0BC6-0BC8 0BCA-0BCC 0BD7 0C00-0C04 0C3E-0C44 0C46-0C48 0C4A-0C4C
0C55-0C56 0C5C 0C62-0C63 0C81-0C83 0CBE-0CC4 0CC6-0CC8 0CCA-0CCC 0CD5-0CD6 0CDC 0CE2-0CE3
0CF3 0D00-0D03 0D3E-0D44 0D46-0D48 0D4A-0D4C 0D57 0D62-0D63 0D81-0D83 0DCF-0DD4 0DD6
0DD8-0DDF 0DF2-0DF3 0E31 0E34-0E3A 0E4D 0EB1 0EB4-0EB9 0EBB-0EBC 0ECD 0F71-0F83 0F8D-0F97
0F99-0FBC 102B-1036 1038 103B-103E 1056-1059 105E-1060 1062-1064 1067-106D 1071-1074
1082-108D 108F 109A-109D 1712-1713 1732-1733 1752-1753 1772-1773 17B6-17C8 1885-1886 18A9
1920-192B 1930-1938 1A17-1A1B 1A55-1A5E 1A61-1A74 1ABF-1AC0 1ACC-1ACE 1B00-1B04 1B35-1B43
1B80-1B82 1BA1-1BA9 1BAC-1BAD 1BE7-1BF1 1C24-1C36 1C89-1C8A 1DD3-1DF4 208F 209D-209F
24B6-24E9 2DE0-2DFF A674-A67B A69E-A69F A7CB-A7CF A7D2 A7D4 A7DA-A7DD A7E2 A7F1 A802 A80B
A823-A827 A880-A881 A8B4-A8C3 A8C5 A8FF A926-A92A A947-A952 A980-A983 A9B4-A9BF A9E5
AA29-AA36 AA43 AA4C-AA4D AA7B-AA7D AAB0 AAB2-AAB4 AAB7-AAB8 AABE AAEB-AAEF AAF5 AB6C-AB6D
ABE3-ABEA FB1E 10376-1037A 105C0-105F3 107BB-107BF 10940-10959 10A01-10A03 10A05-10A06
10A0C-10A0F 10D24-10D27 10D40-10D65 10D69 10D6F-10D85 10EAB-10EAC 10EC2-10EC7 10ECB-10ECD
10ED9-10EEE 10EF3 10EF5 10EF7-10EF8 10EFA-10EFC 11000-11002 11038-11045 11073-11074
11080-11082 110B0-110B8 110C2 11100-11102 11127-11132 11145-11146 11180-11182 111B3-111BF
111CE-111CF 1122C-11234 11237 1123E-11241 112DF-112E8 11300-11303 1133E-11344 11347-11348
1134B-1134C 11357 11362-11363 11380-11389 1138B 1138E 11390-113B5 113B7-113C0 113C2 113C5
113C7-113CA 113CC-113CD 113D1 113D3 11435-11441 11443-11445 114B0-114C1 115AF-115B5
115B8-115BE 115DC-115DD 11630-1163E 11640 116AB-116B5 116D0-116E3 1171D-1172A 1182C-11838
11930-11935 11937-11938 1193B-1193C 11940 11942 119D1-119D7 119DA-119DF 119E4 11A01-11A0A
11A35-11A39 11A3B-11A3E 11A51-11A5B 11A8A-11A97 11B0A 11B60-11B67 11BC0-11BE0 11BF0-11BF9
11C2F-11C36 11C38-11C3E 11C92-11CA7 11CA9-11CB6 11D31-11D36 11D3A 11D3C-11D3D 11D3F-11D41
11D43 11D47 11D8A-11D8E 11D90-11D91 11D93-11D96 11DB0-11DDB 11DE0-11DE9 11DF0-11DF1
11EF3-11EF6 11F00-11F10 11F12-11F3A 11F3E-11F40 11F50-11F59 1246F 12475-1247F 12550-12686
1342F 13441-13446 13460-143FA 16100-1612E 16130-16139 16D40-16D6C 16D70-16D79 16EA0-16EB8
16EBB-16ED3 16F4F 16F51-16F87 16F8F-16F92 16FF0-16FF6 187F8-187FF 18CD6-18CDA 18CFF
18D09-18D20 18D80-18DF2 18E00-19191 191A0-191D2 1B123-1B128 1B132 1B155 1B168 1BC9E
1CCF0-1CCF9 1D2C0-1D2D3 1D6A6 1DF1F-1DF81 1DF90-1DF96 1DFCD-1E006 1E008-1E018 1E01B-1E021
1E023-1E024 1E026-1E02A 1E030-1E06D 1E08F 1E4D0-1E4EB 1E4F0-1E4F9 1E5D0-1E5ED 1E5F0-1E5FA
1E6C0-1E6DE 1E6E0-1E6F5 1E6FE-1E6FF 1E947 1F130-1F149 1F150-1F169 1F170-1F189 2B739-2B73F
2B81E 2CEA2-2CEAD 2EBF0-2EE5D 31350-33479 3D000-3FC3F
"""


def _parse_ranges(table: str) -> tuple[list[int], list[int]]:
    starts: list[int] = []
    ends: list[int] = []
    for item in table.split():
        low, _, high = item.partition("-")
        starts.append(int(low, 16))
        ends.append(int(high or low, 16))
    return starts, ends


_OA_STARTS, _OA_ENDS = _parse_ranges(_OTHER_ALPHABETIC_TABLE)

_NUMERIC_CATEGORIES = frozenset({"Nd", "Nl", "No"})


def _is_other_alphabetic(code: int) -> bool:
    index = bisect.bisect_right(_OA_STARTS, code) - 1
    return index >= 0 and code <= _OA_ENDS[index]


def is_word_char(char: str) -> bool:
    """True for Unicode Alphabetic or numeric (Nd/Nl/No) characters, ``_`` and ``-``."""
    if char.isalpha() or char in "_-":
        return True
    if unicodedata.category(char) in _NUMERIC_CATEGORIES:
        return True
    return _is_other_alphabetic(ord(char))


_SCRIPT_CLASS = {
    "kanji": CharClass.KANJI,
    "hiragana": CharClass.HIRAGANA,
    "katakana": CharClass.KATAKANA,
}


def char_class(char: str) -> CharClass:
    """Classify one character; the Japanese script ranges are tested before "word"."""
    return _CLASS_OF_CODE[_CLASS_CODES[ord(char)]]


_CODE_OF_CLASS = {
    CharClass.KANJI: "K",
    CharClass.HIRAGANA: "H",
    CharClass.KATAKANA: "A",
    CharClass.WORD: "W",
    CharClass.SEPARATOR: "S",
}
_CLASS_OF_CODE = {code: klass for klass, code in _CODE_OF_CLASS.items()}
#: remembered classes; past this many distinct characters new ones are not stored
_MAX_REMEMBERED = 65536


class _ClassCodes(dict[int, str]):
    """Code point -> one-letter class code, computed on first use (a ``str.translate`` table)."""

    def __missing__(self, code: int) -> str:
        letter = _CODE_OF_CLASS[_classify(chr(code))]
        if len(self) < _MAX_REMEMBERED:
            self[code] = letter
        return letter


_CLASS_CODES = _ClassCodes()


def class_codes(text: str) -> str:
    """One class letter per character of ``text`` (see :func:`class_code`).

    The compiler looks at every character of the query; doing it through one
    ``str.translate`` keeps a 1 MiB query well under a second, where a Python call
    per character took tens of seconds.
    """
    return text.translate(_CLASS_CODES)


def class_code(klass: CharClass) -> str:
    """The letter :func:`class_codes` writes for ``klass``."""
    return _CODE_OF_CLASS[klass]


def _classify(char: str) -> CharClass:
    script = japanese_script(char)
    if script is not None:
        return _SCRIPT_CLASS[script]
    return CharClass.WORD if is_word_char(char) else CharClass.SEPARATOR


_ASCII_CLASSES = tuple(_classify(chr(code)) for code in range(128))


def fts_sendable(text: str) -> bool:
    """False if ``text`` holds NUL or a lone surrogate, which no FTS5 phrase can carry.

    NUL ends a C string inside SQLite; lone surrogates (e.g. undecodable bytes that
    ``sys.argv`` smuggles in through ``surrogateescape``) cannot be encoded as UTF-8.
    """
    return not any(char == "\0" or "\ud800" <= char <= "\udfff" for char in text)


@dataclass(frozen=True)
class Segment:
    """A stretch of the query; ``start``/``end`` are offsets into the query text.

    For a quoted segment ``start`` is the opening quote, ``end`` is one past the
    closing quote and ``text`` is the content with every doubled ``""`` collapsed.
    """

    kind: Literal["plain", "quoted"]
    start: int
    end: int
    text: str


def split_quotes(text: str) -> list[Segment]:
    """Stage 1: cut the query into plain and closed double-quoted segments.

    Inside quotes ``""`` stands for one literal quote.  At the first quote that is
    never closed, scanning stops: everything from there (or from the end of the last
    closed quote) to the end is one plain segment that keeps the stray ``"``.
    """
    segments: list[Segment] = []
    plain_from = 0
    pos = 0
    length = len(text)
    while pos < length:
        if text[pos] != '"':
            pos += 1
            continue
        content: list[str] = []
        cursor = pos + 1
        closed_at: int | None = None
        while cursor < length:
            if text[cursor] == '"':
                if cursor + 1 < length and text[cursor + 1] == '"':
                    content.append('"')
                    cursor += 2
                    continue
                closed_at = cursor + 1
                break
            content.append(text[cursor])
            cursor += 1
        if closed_at is None:
            break
        if plain_from < pos:
            segments.append(Segment("plain", plain_from, pos, text[plain_from:pos]))
        segments.append(Segment("quoted", pos, closed_at, "".join(content)))
        plain_from = pos = closed_at
    if plain_from < length:
        segments.append(Segment("plain", plain_from, length, text[plain_from:]))
    return segments
