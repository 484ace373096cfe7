"""The keys of a history file this version does not know.

A newer pytest-groove may add a key to the file or to a run, and a tool may annotate
a run.  A run whose digest matches its text (a newer version's) is written back as it
was read, its keys with it (:mod:`.vouch`); any other run is read into this version's
records and written back from those, so such a key would be gone after the next save.
:func:`run_unknown_keys` and :func:`file_unknown_keys` name them where a newer version
or a tool would put one (the top level, a run, its corpus, its gate, and each query of
a compact run; a fingerprint keeps the keys it does not know, and they set its runs
apart); the history then counts as damaged, so the save that drops them first copies
the file aside and the warning names them, once.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pytest_groove.evaluation.runs.gate_record import (
    FAILED_KEY,
    FLOORS_SETTING,
    FROZEN_SETTING,
    SIGNIFICANCE_SETTING,
    THRESHOLD_SETTING,
)
from pytest_groove.evaluation.runs.record import RunRecord
from pytest_groove.evaluation.runs.trust import DIGEST_KEY
from pytest_groove.shapes import json_keys

#: the members of the file's top-level object
FILE_KEYS = frozenset({"format", "runs", "baseline"})
#: the members of a compact (format 2) run (:func:`~.codec.encode_run`)
COMPACT_RUN_KEYS = frozenset(
    {"timestamp", "fingerprint", "corpus", "aggregate", "scores", "metric_k", "paths"}
    | {"headings", "queries", "findings", "gate", DIGEST_KEY}
)
#: the members of a compact run's query
COMPACT_QUERY_KEYS = frozenset({"id", "query", "expected", "hits", "ranks", "metrics"})
#: the members of a run's corpus (:func:`~pytest_groove.evaluation.runs.record.corpus_to_json`)
CORPUS_KEYS = frozenset({"documents", "chunks", "digest", "files", "digest_version"})
#: the members of a run's gate (``GateRecord.to_json``)
GATE_KEYS = frozenset(
    {THRESHOLD_SETTING, "thresholds", FLOORS_SETTING, SIGNIFICANCE_SETTING, FROZEN_SETTING}
    | {FAILED_KEY}
)
#: the known members of a run's objects, by the run's key
_RUN_PARTS: dict[str, frozenset[str]] = {
    "corpus": CORPUS_KEYS,
    "gate": GATE_KEYS,
}
#: how many unknown keys are named (a file full of them says so with a count)
NAMED = 5


def _unknown(obj: Any, known: frozenset[str], where: str) -> Iterator[str]:
    if isinstance(obj, Mapping):
        for key in obj:
            if key not in known:
                yield f"{where}.{key}" if where else str(key)


def run_unknown_keys(raw: Any, where: str, *, compact: bool) -> Iterator[str]:
    """The keys of one stored run (and of its parts) this version does not know."""
    if not isinstance(raw, Mapping):
        return
    known = COMPACT_RUN_KEYS if compact else json_keys(RunRecord) | {DIGEST_KEY}
    yield from _unknown(raw, known, where)
    for part, part_keys in _RUN_PARTS.items():
        yield from _unknown(raw.get(part), part_keys, f"{where}.{part}")
    queries = raw.get("queries")
    if compact and isinstance(queries, list):
        for i, query in enumerate(queries):
            yield from _unknown(query, COMPACT_QUERY_KEYS, f"{where}.queries[{i}]")


def file_unknown_keys(doc: Mapping[str, Any]) -> Iterator[str]:
    """The top-level keys of a history file this version does not know."""
    for key in doc:
        if key not in FILE_KEYS:
            yield f"top level: {key}"


__all__ = ["file_unknown_keys", "run_unknown_keys"]
