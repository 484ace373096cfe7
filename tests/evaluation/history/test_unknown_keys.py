"""Keys of the history this version does not know are named, and kept in a backup.

A newer pytest-groove's key, or a tool's annotation, at the top level or inside a
run: the save that would drop it first copies the file aside, and the warning names
it -- once, since the file written then no longer holds it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.evaluation.history.format import (
    encode_history,
    load_history,
    read_history,
)
from pytest_groove.evaluation.history.save import save_history
from pytest_groove.evaluation.history.unknown_keys import (
    COMPACT_QUERY_KEYS,
    COMPACT_RUN_KEYS,
    CORPUS_KEYS,
    FILE_KEYS,
    GATE_KEYS,
)
from pytest_groove.evaluation.runs.gate_record import GateRecord
from pytest_groove.kb.source.records import CorpusSnapshot
from tests.helpers.eval_factories import big_run, finding

RUNS = [
    big_run(minutes=2, queries=2),
    replace(big_run(minutes=1, queries=2), gate=GateRecord(threshold=0.02)),
]
#: where a newer version or a tool would add a key: (label, the object's path in the file)
PLACES = [
    ("top level", ()),
    ("runs[0]", ("runs", 0)),
    ("runs[1].gate", ("runs", 1, "gate")),
    ("runs[0].corpus", ("runs", 0, "corpus")),
    ("runs[1].queries[1]", ("runs", 1, "queries", 1)),
]
KNOWN = FILE_KEYS | COMPACT_RUN_KEYS | COMPACT_QUERY_KEYS | CORPUS_KEYS
NEW_KEY = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1).filter(
    lambda key: key not in KNOWN and key not in GATE_KEYS
)


def _with_key(place: tuple[str | int, ...], key: str, value: object) -> bytes:
    doc = json.loads(encode_history(RUNS))
    target = doc
    for step in place:
        target = target[step]
    target[key] = value
    return json.dumps(doc).encode()


@settings(max_examples=30, deadline=None)
@given(where=st.sampled_from(PLACES), key=NEW_KEY, value=st.sampled_from([1, "x", {"a": [1]}]))
def test_an_unknown_key_anywhere_a_key_is_added_is_named(
    where: tuple[str, tuple[str | int, ...]], key: str, value: object
) -> None:
    label, place = where
    parsed = read_history(_with_key(place, key, value))
    assert len(parsed.runs) == 2 and parsed.damaged
    expected = f"top level: {key}" if label == "top level" else f"{label}.{key}"
    assert parsed.unknown_keys == (expected,)


def test_every_key_this_version_writes_is_known() -> None:
    """A run with every optional part the writer has (a full gate, findings, a corpus
    with files and a later digest version, ranks that are not 1..n): a key the writer
    gains must be added to the known ones, or every save would back the file up."""
    base = big_run(minutes=3, queries=2)
    odd_ranks = replace(
        base.per_query[0],
        top_k=tuple(replace(hit, rank=hit.rank + 1) for hit in base.per_query[0].top_k),
    )
    full = replace(
        base,
        per_query=(odd_ranks, *base.per_query[1:]),
        gate=GateRecord(
            threshold=0.02,
            thresholds=(("recall@5", 0.05),),
            floors=(("recall@5", 0.5),),
            significance=0.05,
            frozen_baseline="2026-04-24T05:33:01Z",
            failed=("recall@5",),
        ),
        findings=(finding("a.md", ("q0", 1)),),
        corpus=CorpusSnapshot(3, 4, "d" * 64, files=(("a.md", "0" * 12),), digest_version=2),
    )
    parsed = read_history(encode_history([full, *RUNS]))
    assert parsed.unknown_keys == () and not parsed.damaged
    assert len(parsed.runs) == 3


def test_the_save_that_drops_a_key_backs_the_file_up_and_the_next_names_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / ".groove-eval-history.json"
    original = _with_key(("runs", 0), "reviewed_by", "ana")
    path.write_bytes(original)
    warnings: list[str] = []
    stored = load_history(path, warnings=warnings)
    assert len(warnings) == 1 and "runs[0].reviewed_by" in warnings[0]
    save_history(path, stored, big_run(minutes=3, queries=2), history_size=10)
    (backup,) = tmp_path.glob(".groove-eval-history.json.bak-*")
    assert backup.read_bytes() == original
    again: list[str] = []
    assert len(load_history(path, warnings=again)) == 3 and again == []
