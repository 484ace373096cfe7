"""Reading a history as this version writes it, without parsing what nobody asks for.

A history near its cap holds thousands of runs, and ``groove history``, ``groove eval``
and every pytest session read all of them; the listing needs no run's per-query
results, the gate only its baseline's.  So a file in the exact layout of
:func:`~pytest_groove.evaluation.history.format.encode_history` (the header lines,
then one run a line) is read a line at a time (:func:`laid_out`), and each line is
first checked against its digest *on its text* (:func:`vouched_head`):

- the line is walked as the writer writes a compact run (its members in the writer's
  order, no spaces; a member this version does not know is taken whole); each small
  member (timestamp, fingerprint, corpus, aggregate...) is parsed, and must encode
  back to exactly its text; the paths, the headings and the queries are matched, not
  parsed: a query's members are reordered as text into the digest's sorted form;
- the digest's canonical text is assembled from those pieces and hashed.

When the hash is the stored digest, the line is byte for byte what a writer of this
layout wrote (the pieces are delimited as JSON delimits them, so no other text
assembles to the same bytes): it is valid JSON, repeats no key, and decodes.  Its
run is then built from the small members, with its queries read at their first use
(:class:`~pytest_groove.evaluation.runs.stored.LazyTuple`), and it keeps its text for
the next save.  Anything else -- another layout, a digest that does not match, a
member out of shape -- returns None, and the line (or the whole file) is read the
long way, with every check of :mod:`.format`.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytest_groove.errors import GrooveError, clip
from pytest_groove.evaluation.history.codec import MemberReader, decode_run
from pytest_groove.evaluation.runs.record import QueryResult
from pytest_groove.evaluation.runs.trust import DIGEST_KEY
from pytest_groove.shapes import where

#: a JSON string (the escapes JSON allows; a control character must be escaped)
_STRING = r'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"'
#: a list of strings (a run's paths or headings)
_STRINGS = re.compile(rf"\[(?:{_STRING}(?:,{_STRING})*)?\]")
#: a list holding only numbers, nulls and such lists (expected entries, hits, ranks,
#: metrics); a value this matches but JSON does not read never hashes to a digest
_NUMBERS = r"\[[-+.0-9eEnul,\[\]]*\]"
#: one compact query as the writer writes it (:func:`~.codec.encode_run`)
_QUERY = re.compile(
    rf'\{{"id":({_STRING}),"query":({_STRING}),"expected":({_NUMBERS}),"hits":({_NUMBERS})'
    rf'(?:,"ranks":({_NUMBERS}))?,"metrics":({_NUMBERS})\}}'
)
#: a member's key (every key the writer writes a run with is spelled so)
_KEY = re.compile(r'"([a-z_]+)":')
#: the digest the writer puts last, and the run's closing brace
_DIGEST = re.compile(r'"([0-9a-f]{64})"\}')
_DECODER = json.JSONDecoder()
#: how the writer encodes a member, and how the digest encodes it
_AS_WRITTEN = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_CANONICAL = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode


#: the members matched as text, not parsed (read with the queries, at their first use)
_TABLES = ("paths", "headings", "queries")


def _queries(line: str, pos: int) -> tuple[str, int] | None:
    """(the digest's text of the queries list at ``pos``, where it ends), or None."""
    if line.startswith("[]", pos):
        return "[]", pos + 2
    if not line.startswith("[", pos):
        return None
    pos += 1
    out: list[str] = []
    while True:
        found = _QUERY.match(line, pos)
        if found is None:
            return None
        ident, query, expected, hits, ranks, metrics = found.groups()
        ranked = "" if ranks is None else f',"ranks":{ranks}'
        out.append(
            f'{{"expected":{expected},"hits":{hits},"id":{ident},"metrics":{metrics},'
            f'"query":{query}{ranked}}}'
        )
        pos = found.end()
        if line.startswith("]", pos):
            return "[" + ",".join(out) + "]", pos + 1
        if not line.startswith(",", pos):
            return None
        pos += 1


class Memo:
    """What one read of a history has parsed and decoded, by text: the runs of one KB
    repeat their fingerprint, their gate, often their corpus, and each is read once."""

    def __init__(self) -> None:
        #: a member's text -> (its value, its digest text)
        self.parsed: dict[str, tuple[Any, str]] = {}
        #: (key, a member's text) -> the record read from it
        self.decoded: dict[tuple[str, str], Any] = {}
        #: each key's text in the run read last
        self.last: dict[str, str] = {}

    def member_reader(self, head: Head, path: str) -> MemberReader:
        """How the codec reads ``head``'s members (each text decoded once a read)."""

        def read(key: str, how: Callable[[Any, str], Any]) -> Any:
            cache_key = (key, head.texts[key])
            if cache_key not in self.decoded:
                self.decoded[cache_key] = how(head.values[key], where(path, key))
            return self.decoded[cache_key]

        return read


@dataclass(frozen=True)
class Head:
    """The members of a vouched run other than its tables and queries: each value as
    parsed, and its text in the line."""

    values: dict[str, Any] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)


def _member(line: str, key: str, pos: int, memo: Memo) -> tuple[Any, str, int] | None:
    """(the parsed value or None when not parsed, its digest text, where it ends)."""
    if key in _TABLES[:2]:
        found = _STRINGS.match(line, pos)
        return None if found is None else (None, found.group(), found.end())
    if key == "queries":
        queries = _queries(line, pos)
        return None if queries is None else (None, *queries)
    last = memo.last.get(key)
    if last is not None and line.startswith(last, pos) and line.startswith(",", pos + len(last)):
        # the previous run's value, whole (a JSON value is no prefix of another one
        # followed by a comma): not parsed again
        value, canonical = memo.parsed[last]
        return value, canonical, pos + len(last)
    try:
        value, end = _DECODER.raw_decode(line, pos)
    except (ValueError, RecursionError):  # JSONDecodeError, an overlong integer
        return None
    text = line[pos:end]
    known = memo.parsed.get(text)
    if known is None:
        canonical = _CANONICAL(value)
        if canonical != text and _AS_WRITTEN(value) != text:
            return None  # spaces, escapes or a key written twice: not as written
        known = memo.parsed[text] = (value, canonical)
    memo.last[key] = text
    return known[0], known[1], end


def vouched_head(line: str, memo: Memo) -> Head | None:
    """The members of a stored run other than its tables and queries, when ``line`` is
    a compact run in the writer's form whose digest matches its text; else None."""
    if not line.startswith("{"):
        return None
    pos = 1
    head = Head()
    canonical: dict[str, str] = {}
    while True:
        key_match = _KEY.match(line, pos)
        if key_match is None:
            return None
        key, pos = key_match.group(1), key_match.end()
        if key in canonical:
            return None
        if key == DIGEST_KEY:
            found = _DIGEST.match(line, pos)
            if found is None or found.end() != len(line):
                return None
            stored = found.group(1)
            break
        member = _member(line, key, pos, memo)
        if member is None:
            return None
        value, canonical[key], end = member
        if key not in _TABLES:
            head.values[key] = value
            head.texts[key] = line[pos:end]
        pos = end
        if not line.startswith(",", pos):
            return None
        pos += 1
    text = "{" + ",".join(f'"{key}":{canonical[key]}' for key in sorted(canonical)) + "}"
    return head if hashlib.sha256(text.encode("utf-8")).hexdigest() == stored else None


@dataclass(frozen=True)
class LaidOut:
    """A history file in the writer's layout: its frozen-baseline marker and run lines."""

    #: the ``baseline`` header's value (at most one: the layout has one header line)
    markers: list[str]
    #: each run's text, in file order
    lines: list[str]


#: the layout :func:`~.format.encode_history` writes (format 2: the only one it writes)
_HEAD = '{\n  "format": 2,\n'
_BASELINE_LINE = re.compile(r'  "baseline": ("[^"\\\n]*"),\n')
_OPEN = '  "runs": [\n'
_CLOSE = "\n  ]\n}\n"
_EMPTY = '  "runs": []\n}\n'


def laid_out(text: str) -> LaidOut | None:
    """The header and run lines of ``text``, when it is laid out as this version writes
    a history (format 2); None for anything else (read then as JSON as a whole)."""
    if not text.startswith(_HEAD):
        return None
    pos = len(_HEAD)
    markers: list[str] = []
    baseline = _BASELINE_LINE.match(text, pos)
    if baseline is not None:
        markers.append(json.loads(baseline.group(1)))
        pos = baseline.end()
    if text.startswith(_EMPTY, pos) and len(text) == pos + len(_EMPTY):
        return LaidOut(markers, [])
    if not text.startswith(_OPEN, pos) or not text.endswith(_CLOSE):
        return None
    body = text[pos + len(_OPEN) : len(text) - len(_CLOSE)]
    lines = body.split(",\n")  # a run's text holds no line break (JSON escapes it)
    if any("\n" in line for line in lines):
        return None
    return LaidOut(markers, lines)


class UnreadableRun(GrooveError):
    """A vouched run's queries do not read back (a digest recomputed over a hand edit,
    say): one line when something first asks for them.  ``reason`` says where."""

    def __init__(self, label: str, reason: str) -> None:
        self.reason = reason
        super().__init__(
            f"eval history: the stored run {label} matches its digest, but its queries "
            f"cannot be read ({reason}); `groove history delete {label}` removes it "
            "(`groove history verify` checks every run)"
        )


def reader(line: str, where: str, label: str) -> Callable[[], tuple[QueryResult, ...]]:
    """What reads a vouched run's queries at their first use: the codec's reading of the
    ``line`` of the run stored as ``label``; :class:`UnreadableRun` when that fails."""

    def read() -> tuple[QueryResult, ...]:
        try:
            return tuple(decode_run(json.loads(line), where).per_query)
        except (ValueError, RecursionError) as exc:  # RecordFormatError is a ValueError
            raise UnreadableRun(clip(label), str(exc)) from None

    return read
