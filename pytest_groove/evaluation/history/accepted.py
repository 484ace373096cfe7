"""The accepted baseline: ``<kb>/.groove-baseline.json``, committed with the code.

The gate's baseline when it exists, in both doors; written only on request (``groove
baseline accept``, ``groove eval --accept``, ``pytest --groove-accept``), never by an
ordinary run.  It holds what the gate needs and nothing that changes when the results
do not, so accepting twice with no change writes the same bytes, and the pull request
that accepts a drop shows in review exactly which queries moved:

- the settings the run was measured with (its fingerprint) and the gate in effect
  (thresholds, floors, significance), one line each;
- every document's path and digest, one line each ("lost" and "displaced by" are
  told against them);
- every golden query as what it asks (id, text, expected entries) on one line, then
  what it got (first rank, metrics, the hits down to its deepest answer, no scores)
  on the next, then its closing bracket.
  A result line is never next to another result line, nor to where a new query is
  added, and list members are separated by leading commas, so two branches that
  accept changes to different queries (or one adds a query) merge without a
  conflict.

No timestamp, no aggregate (it is the mean of the per-query metrics, recomputed on
reading), no corpus counts that two branches would both rewrite.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_groove.errors import GrooveError, clip_path
from pytest_groove.evaluation.gate.verdict import first_rank
from pytest_groove.evaluation.runs.corpus_files import DIGEST_CHARS
from pytest_groove.evaluation.runs.fingerprint import Fingerprint
from pytest_groove.evaluation.runs.gate_record import GateRecord
from pytest_groove.evaluation.runs.record import (
    QueryResult,
    RecordFormatError,
    RunRecord,
    TopHit,
    metrics_from_json,
    metrics_to_json,
)
from pytest_groove.files.atomic import write_atomic
from pytest_groove.files.guarded_io import HISTORY_CAP, read_guarded
from pytest_groove.kb.source.records import CorpusSnapshot
from pytest_groove.scoring.metrics import aggregate, expected_ranks
from pytest_groove.scoring.records import ExpectedEntry
from pytest_groove.shapes import read_items, read_object, read_str
from pytest_groove.text.echo import conversion_reason

__all__ = [
    "ACCEPT_HINT",
    "BASELINE_FILE_NAME",
    "BASELINE_FORMAT",
    "AcceptedBaseline",
    "baseline_path",
    "decode_baseline",
    "encode_baseline",
    "load_baseline",
    "save_baseline",
]

BASELINE_FILE_NAME = ".groove-baseline.json"
#: the layout of the file; a newer one is refused naming the version
BASELINE_FORMAT = 1
#: the run's timestamp as an accepted baseline reads back (the file keeps none)
ACCEPTED_AT = datetime(1970, 1, 1, tzinfo=UTC)
ACCEPT_HINT = "groove baseline accept"
_WHAT = "accepted baseline"
_ABOUT = (
    "pytest-groove's accepted retrieval baseline: the gate compares every run with it. "
    "Change it only on purpose (groove baseline accept, or pytest --groove-accept) and "
    "review it in the pull request."
)


def baseline_path(kb: Path, configured: Path | None = None) -> Path:
    """Where the accepted baseline lives: ``configured`` (relative to the KB) or
    ``<kb>/.groove-baseline.json``."""
    if configured is None:
        return kb / BASELINE_FILE_NAME
    return configured if configured.is_absolute() else kb / configured


@dataclass(frozen=True)
class AcceptedBaseline:
    """The accepted baseline as a run record, and the file it was read from."""

    path: Path
    run: RunRecord


# --------------------------------------------------------------------------- writing


def _line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=False, separators=(", ", ": "))


def _question(result: QueryResult) -> str:
    expected = [
        {"path": e.path, **({} if e.heading is None else {"heading": e.heading})}
        for e in result.expected
    ]
    return _line({"id": result.id, "query": result.query, "expected": expected})


def _kept_hits(result: QueryResult, deepest_k: int) -> list[list[str | None]]:
    """The hits down to the deepest expected one within ``deepest_k`` (none for a miss):
    what a later verdict reads (each answer's rank, what stood above it).  No scores
    and no hits further down, which move whenever any note changes, so an accept
    rewrites only the queries whose ranking moved."""
    ranks = [r for r in expected_ranks(result.expected, result.top_k) if r is not None]
    deepest = max((r for r in ranks if r <= deepest_k), default=0)
    return [[hit.path, hit.heading] for hit in result.top_k if hit.rank <= deepest]


def _answer(result: QueryResult, deepest_k: int) -> str:
    top = _kept_hits(result, deepest_k)
    body = {"rank": first_rank(result), "metrics": metrics_to_json(result.metrics), "top_k": top}
    return _line(body)


def _leading_commas(items: list[str]) -> list[str]:
    """``items`` as JSON list or object members with the separating comma at the start
    of each member after the first: adding a member at the end adds lines and changes
    none, so two branches that each add one do not both edit the last line."""
    return [("     " if i == 0 else "    ,") + item for i, item in enumerate(items)]


def encode_baseline(run: RunRecord) -> bytes:
    """The file's bytes for ``run``: deterministic, one line per setting, document
    and half-query (see the module doc)."""
    gate = run.gate or GateRecord(threshold=0.05)
    gate_json = replace(gate, frozen_baseline=None, failed=()).to_json()
    files = sorted(run.corpus.files or ()) if run.corpus is not None else []
    lines = ["{", f'  "groove_baseline": {BASELINE_FORMAT},', f'  "about": {_line(_ABOUT)},']
    lines.append(f'  "settings": {_line(run.fingerprint.to_json())},')
    lines.append(f'  "gate": {_line(gate_json)},')
    lines.append('  "documents": {')
    lines += _leading_commas([f"{_line(path)}: {_line(d[:DIGEST_CHARS])}" for path, d in files])
    lines.append("  },")
    lines.append('  "queries": [')
    questions = _leading_commas([f"[{_question(result)}," for result in run.per_query])
    for question, result in zip(questions, run.per_query, strict=True):
        # the closing bracket on a line of its own: a query appended after this one
        # is not next to this one's answer line
        lines += [question, f"      {_answer(result, max(run.fingerprint.k_values))}", "     ]"]
    lines += ["  ]", "}"]
    return ("\n".join(lines) + "\n").encode("utf-8")


def save_baseline(path: Path, run: RunRecord) -> bool:
    """Write ``run`` as the accepted baseline at ``path``; False when the file
    already held exactly these bytes (nothing written)."""
    data = encode_baseline(run)
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    try:
        write_atomic(path, data)
    except OSError as exc:
        raise GrooveError(
            f"cannot write the {_WHAT} {clip_path(path)}: {exc.strerror or exc}; "
            "check that its folder is writable"
        ) from None
    return True


# --------------------------------------------------------------------------- reading


def _expected(raw: Any, where: str) -> ExpectedEntry:
    entry = read_object(raw, where)
    heading = entry.get("heading")
    if heading is not None:
        heading = read_str(heading, f"{where}.heading")
    return ExpectedEntry(path=read_str(entry.get("path"), f"{where}.path"), heading=heading)


def _top_hit(raw: Any, where: str, rank: int) -> TopHit:
    if not isinstance(raw, list) or len(raw) != 2:
        raise RecordFormatError(f"{where}: expected [path, heading]")
    path, heading = raw
    if heading is not None:
        heading = read_str(heading, f"{where}[1]")
    # the file keeps no score (it moves with every note): none is read back
    nan = float("nan")
    return TopHit(rank=rank, path=read_str(path, f"{where}[0]"), heading=heading, score=nan)


def _query(raw: Any, where: str) -> QueryResult:
    if not isinstance(raw, list) or len(raw) != 2:
        raise RecordFormatError(f"{where}: expected [question, answer]")
    question, answer = read_object(raw[0], f"{where}[0]"), read_object(raw[1], f"{where}[1]")
    expected = read_items(question.get("expected"), f"{where}[0].expected", _expected)
    top_raw = answer.get("top_k")
    if not isinstance(top_raw, list):
        raise RecordFormatError(f"{where}[1].top_k: expected a list")
    top = tuple(_top_hit(hit, f"{where}[1].top_k[{i}]", i + 1) for i, hit in enumerate(top_raw))
    return QueryResult(
        id=read_str(question.get("id"), f"{where}[0].id"),
        query=read_str(question.get("query"), f"{where}[0].query"),
        expected=tuple(expected),
        top_k=top,
        metrics=metrics_from_json(answer.get("metrics"), f"{where}[1].metrics"),
    )


def _documents(raw: Any) -> tuple[tuple[str, str], ...]:
    documents = read_object(raw, "documents")
    return tuple(sorted((path, read_str(d, f"documents.{path}")) for path, d in documents.items()))


def _run(data: dict[str, Any]) -> RunRecord:
    version = data.get("groove_baseline")
    if not isinstance(version, int) or isinstance(version, bool):
        raise RecordFormatError("groove_baseline: expected the file's format number")
    if version > BASELINE_FORMAT:
        raise RecordFormatError(
            f"groove_baseline: format {version} is newer than this version reads "
            f"({BASELINE_FORMAT}); upgrade pytest-groove"
        )
    files = _documents(data.get("documents"))
    per_query = tuple(
        _query(raw, f"queries[{i}]") for i, raw in enumerate(_list(data.get("queries"), "queries"))
    )
    return RunRecord(
        timestamp=ACCEPTED_AT,
        fingerprint=Fingerprint.from_json(data.get("settings"), "settings"),
        corpus=CorpusSnapshot(len(files), -1, "", files=files, digest_version=0),
        per_query=per_query,
        aggregate=aggregate([q.metrics for q in per_query]),
        gate=GateRecord.from_json(data.get("gate"), "gate"),
    )


def _list(raw: Any, where: str) -> list[Any]:
    if not isinstance(raw, list):
        raise RecordFormatError(f"{where}: expected a list")
    return raw


def decode_baseline(data: bytes, path: Path) -> RunRecord:
    """The run an accepted baseline's bytes hold; one :class:`GrooveError` line
    naming ``path`` and the fix when they are not one."""
    fix = f"restore it from git, or write it anew with `{ACCEPT_HINT}`"
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        reason = (
            "conflict markers: finish the merge"
            if b"<<<<<<<" in data
            else f"not JSON ({conversion_reason(exc) or exc})"
        )
        raise GrooveError(f"{_WHAT} {clip_path(path)} is {reason}; {fix}") from None
    try:
        return _run(read_object(raw, "baseline"))
    except (RecordFormatError, ValueError, TypeError) as exc:
        raise GrooveError(f"{_WHAT} {clip_path(path)}: {exc}; {fix}") from None


def load_baseline(path: Path, within: Path | None = None) -> AcceptedBaseline | None:
    """The accepted baseline at ``path``, None when there is none; read with the
    checks every file eval keeps inside the KB gets (no link, bounded size)."""
    data = read_guarded(path, _WHAT, HISTORY_CAP, within)
    if data is None:
        return None
    return AcceptedBaseline(path, decode_baseline(data, path))
