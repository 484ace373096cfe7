"""A history as this version writes it: each run vouched for by its digest on its text,
its queries read at their first use, and written back by the next save as it was read.

The reading a line at a time must agree with the reading of the file as one JSON
document on every input, so the generated tests compare the two on the same bytes
(laid out another way, which sends them down the other path).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.history.codec import encode_run
from pytest_groove.evaluation.history.format import (
    ParsedHistory,
    encode_history,
    load_history,
    read_history,
)
from pytest_groove.evaluation.history.save import save_history
from pytest_groove.evaluation.history.vouch import Memo, UnreadableRun, laid_out, vouched_head
from pytest_groove.evaluation.runs.gate_record import GateRecord
from pytest_groove.evaluation.runs.record import RunRecord, TopHit
from pytest_groove.evaluation.runs.stored import LazyTuple
from pytest_groove.evaluation.runs.trust import stamp
from pytest_groove.kb.source.records import CorpusSnapshot
from pytest_groove.scoring.records import ExpectedEntry
from tests.helpers.eval_factories import big_run, finding

HEADER_ELSEWHERE = (b'{\n  "format"', b'{ \n "format"')  # the same offsets, another layout


def _full_run() -> RunRecord:
    """A run with every optional part the writer has (as the known-keys test builds)."""
    base = big_run(minutes=4, queries=3, hits=3)
    first = base.per_query[0]
    odd = replace(
        first,
        expected=(ExpectedEntry("docs/x.md", "Heading", grade=2),),
        top_k=(
            *(replace(hit, rank=hit.rank + 1) for hit in first.top_k),
            TopHit(rank=9, path='docs/ü "quoted".md', heading="§ 2\n\t", score=0.1),
        ),
    )
    return replace(
        base,
        per_query=(odd, *base.per_query[1:]),
        gate=GateRecord(threshold=0.02, thresholds=(("recall@5", 0.05),), failed=("recall@5",)),
        findings=(finding("a.md", ("q0", 1)),),
        corpus=CorpusSnapshot(3, 4, "d" * 64, files=(("a.md", "0" * 12),), digest_version=2),
    )


RUNS = [_full_run(), *(big_run(minutes=m, queries=2, hits=3) for m in (3, 2, 1))]


def _lines(data: bytes) -> list[str]:
    layout = laid_out(data.decode("utf-8"))
    assert layout is not None
    return layout.lines


def _outcome(data: bytes) -> Any:
    """What reading ``data`` gives, in a form two readings can be compared in."""
    try:
        parsed = read_history(data)
    except GrooveError as exc:
        return type(exc).__name__, str(exc)
    except ValueError as exc:  # RecordFormatError
        return "not a history", str(exc)
    return _summary(parsed)


def _summary(parsed: ParsedHistory) -> Any:
    return (
        [(run, run.frozen, run.edited) for run in parsed.runs],
        parsed.stored,
        parsed.skipped,
        parsed.repaired,
        parsed.duplicated,
        parsed.salvaged,
        parsed.orphan_marker,
        parsed.unknown_keys,
        parsed.damaged,
    )


def _other_layout(data: bytes) -> bytes:
    assert data.startswith(HEADER_ELSEWHERE[0])
    return data.replace(*HEADER_ELSEWHERE, 1)


def test_a_history_this_version_wrote_is_read_without_its_queries() -> None:
    data = encode_history([replace(RUNS[2], frozen=True), *RUNS[:2], RUNS[3]])
    parsed = read_history(data)
    assert not parsed.damaged
    queries = [run.per_query for run in parsed.runs]
    assert all(isinstance(q, LazyTuple) and not q.loaded for q in queries)
    assert [run.frozen for run in parsed.runs] == [False, False, True, False]
    assert [run.stored_text() for run in parsed.runs] == [_lines(data)[i] for i in (1, 2, 0, 3)]
    assert parsed.runs == RUNS  # reading the queries gives back each run exactly
    assert all(isinstance(q, LazyTuple) and q.loaded for q in queries)
    assert _summary(parsed) == _summary(read_history(_other_layout(data)))


def test_only_a_run_this_version_wrote_is_vouched_for() -> None:
    line = _lines(encode_history(RUNS[:1]))[0]
    assert vouched_head(line, Memo()) is not None
    edited = line.replace('"mrr":0.5', '"mrr":0.9', 1)
    assert edited != line and vouched_head(edited, Memo()) is None
    spaced = line.replace('"documents":3', '"documents": 3', 1)
    assert spaced != line and vouched_head(spaced, Memo()) is None


def _with_repeated_key(line: str, member: str) -> str:
    """``line`` with the first key of the object ``member`` names written twice: first
    with another value, then as it was (so the last value, which reads, is the same)."""
    obj = json.loads(line)
    target = obj["queries"][0] if member == "queries" else obj[member]
    text = json.dumps(target, ensure_ascii=False, separators=(",", ":"))
    key = next(iter(target))
    repeated = "{" + json.dumps(key) + ':"another value",' + text[1:]
    assert text in line
    return line.replace(text, repeated, 1)


@pytest.mark.parametrize("member", ["fingerprint", "corpus", "aggregate", "gate", "queries"])
def test_a_key_written_twice_inside_a_run_is_found_when_its_digest_still_matches(
    member: str,
) -> None:
    data = encode_history(RUNS)
    line = _lines(data)[0]
    repeated = data.replace(line.encode(), _with_repeated_key(line, member).encode(), 1)
    parsed = read_history(repeated)
    assert parsed.duplicated == ("runs[0]",) and parsed.damaged
    assert _summary(parsed) == _summary(read_history(_other_layout(repeated)))


#: characters that change what JSON text means (and a few that only look like it)
EDITS = st.sampled_from(list('{}[],:"\\ 019.eE-+nul\x1f\u00e9\ud800/tfa'))


@settings(max_examples=300, deadline=None)
@given(
    where=st.floats(0, 1, exclude_max=True),
    how=st.sampled_from(["delete", "insert", "replace"]),
    char=EDITS,
    frozen=st.booleans(),
)
def test_reading_a_line_at_a_time_agrees_with_reading_the_whole_file(
    where: float, how: str, char: str, frozen: bool
) -> None:
    runs = [replace(RUNS[1], frozen=True), RUNS[0], *RUNS[2:]] if frozen else RUNS
    data = encode_history(runs).decode("utf-8")
    start = data.index("[\n") + 2
    at = start + int(where * (len(data) - start))
    if how == "delete":
        edited = data[:at] + data[at + 1 :]
    elif how == "insert":
        edited = data[:at] + char + data[at:]
    else:
        edited = data[:at] + char + data[at + 1 :]
    raw = edited.encode("utf-8", "surrogatepass")
    assert _outcome(raw) == _outcome(_other_layout(raw))


def _newer_versions_line(run: RunRecord) -> str:
    """``run`` as a newer version would write it: a key this one does not know, under
    a digest that covers it."""
    obj = encode_run(run)
    del obj["digest"]
    obj["reviewed_by"] = {"name": "ana", "at": [1, 2]}
    stamp(obj, False)
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def test_a_save_writes_each_run_it_did_not_change_back_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / ".groove-eval-history.json"
    data = encode_history(RUNS)
    newer = _newer_versions_line(RUNS[1])
    path.write_bytes(data.replace(_lines(data)[1].encode(), newer.encode(), 1))
    warnings: list[str] = []
    stored = load_history(path, warnings=warnings)
    assert warnings == [] and stored == RUNS
    assert save_history(path, stored, big_run(minutes=9, queries=2), history_size=10) == []
    assert list(tmp_path.glob("*.bak-*")) == []
    before = _lines(data)
    assert _lines(path.read_bytes()) == [
        *_lines(encode_history([big_run(minutes=9, queries=2)])),
        before[0],
        newer,
        *before[2:],
    ]


def test_a_run_made_from_a_stored_one_is_encoded_again() -> None:
    (stored, *_) = read_history(encode_history(RUNS[:1])).runs
    assert stored.stored_text() is not None
    assert replace(stored, frozen=True).stored_text() == stored.stored_text()
    changed = replace(stored, gate=None)
    assert changed.stored_text() is None
    assert read_history(encode_history([changed])).runs == [replace(RUNS[0], gate=None)]


def _forged(run: RunRecord) -> str:
    """``run`` with a hit naming no path of its table, and the digest made again."""
    obj = encode_run(run)
    del obj["digest"]
    obj["queries"][0]["hits"][0][0] = 99
    stamp(obj, False)
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def test_queries_that_do_not_read_back_under_a_matching_digest_are_one_line() -> None:
    data = encode_history(RUNS[:2])
    forged = data.replace(_lines(data)[1].encode(), _forged(RUNS[1]).encode(), 1)
    runs = read_history(forged).runs
    assert len(runs) == 2 and runs[0].per_query == RUNS[0].per_query
    with pytest.raises(UnreadableRun) as caught:
        len(runs[1].per_query)
    message = str(caught.value)
    assert "\n" not in message and "runs[1].queries[0].hits[0][0]" in message
    assert "groove history delete 2026-04-24T05:35:01Z" in message
