"""TREC run / qrels export: the files trec_eval's reimplementations read give our numbers.

The oracles are the real libraries: ``pytrec_eval`` (trec_eval's own C code behind a
Python binding) on every test, ``ranx`` (numba; its first call compiles for a minute or
more) on the kb-eval corpus under ``-m slow``.  Both read the files as written, through
their own TREC parsers.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO_ROOT
from pytest_groove.cli import main
from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.reports.trec import (
    encode_id,
    entry_id,
    hit_ids,
    qrels_lines,
    query_ids,
    recall_may_differ,
    run_lines,
    write_trec_run,
)
from pytest_groove.scoring.metrics import query_metrics
from pytest_groove.scoring.records import ExpectedEntry

ROOT = REPO_ROOT
KB_EVAL = ROOT / "tests" / "corpora" / "kb-eval"
KB_EVAL_GOLDEN = ROOT / "tests" / "corpora" / "kb-eval-golden.yml"
KS = (1, 3, 5, 10)
TOLERANCE = 1e-12


@dataclass(frozen=True)
class Hit:
    rank: int
    path: str
    heading: str | None


@dataclass(frozen=True)
class Query:
    id: str
    expected: tuple[ExpectedEntry, ...]
    top_k: tuple[Hit, ...]
    query: str = ""


def _ranked(pairs: Sequence[tuple[str, str | None]]) -> tuple[Hit, ...]:
    return tuple(Hit(rank, path, heading) for rank, (path, heading) in enumerate(pairs, 1))


def _trec_numbers(queries: Sequence[Query]) -> list[dict[str, float]]:
    """Per query, what trec_eval computes from our two files (absent query = zeros)."""
    qrels = pytrec_eval.parse_qrel(io.StringIO("".join(f"{x}\n" for x in qrels_lines(queries))))
    run = pytrec_eval.parse_run(io.StringIO("".join(f"{x}\n" for x in run_lines(queries))))
    measures = {
        "recip_rank",
        "recall." + ",".join(map(str, KS)),
        "ndcg_cut." + ",".join(map(str, KS)),
    }
    found = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    return [found.get(qid, {}) for qid in query_ids(queries)]


def _assert_trec_agrees(queries: Sequence[Query]) -> None:
    trec = _trec_numbers(queries)
    divergent = set(recall_may_differ(queries))
    for query, theirs in zip(queries, trec, strict=True):
        ours = query_metrics(query.expected, query.top_k, KS)
        assert theirs.get("recip_rank", 0.0) == pytest.approx(ours.reciprocal_rank, abs=TOLERANCE)
        for k in KS:
            ndcg = theirs.get(f"ndcg_cut_{k}", 0.0)
            assert ndcg == pytest.approx(ours.ndcg_at_k[k], abs=TOLERANCE), (query, k)
            recall = theirs.get(f"recall_{k}", 0.0)
            if query.id in divergent:
                assert recall <= ours.recall_at_k[k] + TOLERANCE
            else:
                assert recall == pytest.approx(ours.recall_at_k[k], abs=TOLERANCE), (query, k)


# --------------------------------------------------------------------------- identifiers


def test_ids_are_one_field_and_keep_readable_characters() -> None:
    assert encode_id("docs/a.md") == "docs/a.md"
    assert encode_id("ops/デプロイ.md") == "ops/デプロイ.md"
    assert encode_id("a b\tc") == "a%20b%09c"
    assert encode_id("50%#1@x") == "50%25%231%40x"
    assert encode_id("a\u3000b") == "a%E3%80%80b"  # Unicode space: str.split() splits it
    assert entry_id(ExpectedEntry("a.md", "  Data Flow ")) == "a.md#data%20flow"
    assert entry_id(ExpectedEntry("a#b.md")) == "a%23b.md"


def test_hits_take_the_id_of_the_entry_they_are_credited_to() -> None:
    expected = (ExpectedEntry("a.md"), ExpectedEntry("a.md", "Setup"), ExpectedEntry("b.md"))
    hits = _ranked(
        [("a.md", "setup"), ("a.md", "Other"), ("a.md", None), ("c.md", "X"), ("a.md", "Other")]
    )
    assert hit_ids(expected, hits) == [
        "a.md#setup",  # the heading entry first: the more specific claim
        "a.md",  # then the path-only entry
        "a.md@3",  # nothing left to credit; its own id is taken, so @rank
        "c.md#x",
        "a.md#other",
    ]


def test_repeated_chunks_keep_their_place_in_the_ranking() -> None:
    query = Query(
        "q", (ExpectedEntry("b.md"),), _ranked([("a.md", "x"), ("a.md", "x"), ("b.md", None)])
    )
    lines = run_lines([query])
    assert lines == [
        "q Q0 a.md#x 1 3 groove",
        "q Q0 a.md#x@2 2 2 groove",
        "q Q0 b.md 3 1 groove",
    ]
    assert qrels_lines([query]) == ["q 0 b.md 1"]


def test_scores_strictly_decrease_and_query_ids_are_encoded() -> None:
    query = Query("how do I roll back", (ExpectedEntry("a.md"),), _ranked([("x.md", None)] * 4))
    rows = [line.split() for line in run_lines([query], tag="mine")]
    assert {row[0] for row in rows} == {"how%20do%20I%20roll%20back"}
    assert [int(row[3]) for row in rows] == [1, 2, 3, 4]
    assert [float(row[4]) for row in rows] == [4.0, 3.0, 2.0, 1.0]
    assert {row[5] for row in rows} == {"mine"}
    assert len({row[2] for row in rows}) == 4


def test_a_repeated_derived_id_stays_two_queries() -> None:
    first = Query("same start", (ExpectedEntry("a.md"),), _ranked([("a.md", None)]))
    second = Query("same start", (ExpectedEntry("b.md"),), _ranked([("a.md", None)]))
    assert [line.split()[0] for line in run_lines([first, second])] == [
        "same%20start",
        "same%20start@2",
    ]
    assert qrels_lines([first, second]) == ["same%20start 0 a.md 1", "same%20start@2 0 b.md 1"]
    _assert_trec_agrees([first, second])


def test_the_empty_id_is_a_field_the_tools_read() -> None:
    # the golden file allows `id: ""` (the seed's ids are any string)
    empty = Query("", (ExpectedEntry("a.md"),), _ranked([("b.md", None), ("a.md", None)]))
    other = Query("@1", (ExpectedEntry("b.md"),), _ranked([("b.md", None)]))
    assert [line.split()[0] for line in qrels_lines([empty, other])] == ["@1", "%401"]
    assert all(len(line.split()) == 6 for line in run_lines([empty, other]))
    _assert_trec_agrees([empty, other])


def test_a_subset_gives_each_query_the_qid_of_the_whole_run() -> None:
    # two derived ids alike; a run of the second alone (pytest -k, a node id) must not
    # hand it the first one's qid, or the whole run's qrels judge it by the other's answers
    first = Query("same start", (ExpectedEntry("a.md"),), (), query="same start one")
    second = Query("same start", (ExpectedEntry("b.md"),), (), query="same start two")
    whole = query_ids([first, second])
    assert whole == ["same%20start", "same%20start@2"]
    assert query_ids([second], golden=[first, second]) == ["same%20start@2"]
    assert qrels_lines([second], golden=[first, second]) == ["same%20start@2 0 b.md 1"]
    # a query the golden set does not hold keeps its own
    alone = Query("elsewhere", (ExpectedEntry("c.md"),), (), query="elsewhere")
    assert query_ids([alone], golden=[first, second]) == ["elsewhere"]


def test_a_tag_with_a_space_is_refused() -> None:
    with pytest.raises(GrooveError, match="one word"):
        run_lines([], tag="my run")


def test_an_unwritable_path_is_one_line_naming_the_option(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("", encoding="utf-8")
    write_trec_run(tmp_path / "new" / "run.trec", [])  # a missing folder is made
    with pytest.raises(GrooveError) as error:
        write_trec_run(tmp_path / "file" / "run.trec", [])
    assert "--trec-run" in error.value.message
    assert "\n" not in error.value.message


def test_recall_may_differ_names_queries_mixing_a_file_and_its_heading() -> None:
    mixed = Query("mixed", (ExpectedEntry("a.md"), ExpectedEntry("a.md", "H")), ())
    plain = Query("plain", (ExpectedEntry("a.md"), ExpectedEntry("b.md", "H")), ())
    assert recall_may_differ([mixed, plain]) == ["mixed"]


# --------------------------------------------------------------------------- oracle


def test_trec_eval_agrees_on_heading_entries_and_repeated_chunks() -> None:
    queries = [
        Query(
            "headings",
            (ExpectedEntry("a.md", "Setup"), ExpectedEntry("b.md"), ExpectedEntry("c.md", "x")),
            _ranked(
                [
                    ("b.md", "1"),
                    ("b.md", "2"),
                    ("a.md", "other"),
                    ("a.md", " SETUP "),
                    ("c.md", None),
                    ("c.md", "X"),
                ]
            ),
        ),
        Query("empty run", (ExpectedEntry("a.md"),), ()),
        Query("miss", (ExpectedEntry("a.md"),), _ranked([("z.md", None)] * 3)),
    ]
    _assert_trec_agrees(queries)


def test_the_mixed_case_is_the_one_recall_divergence() -> None:
    query = Query(
        "mixed", (ExpectedEntry("a.md"), ExpectedEntry("a.md", "H")), _ranked([("a.md", "H")])
    )
    ours = query_metrics(query.expected, query.top_k, KS)
    (theirs,) = _trec_numbers([query])
    assert ours.recall_at_k[1] == 1.0 and theirs["recall_1"] == 0.5
    assert theirs["ndcg_cut_1"] == pytest.approx(ours.ndcg_at_k[1], abs=TOLERANCE)


_PATHS = st.sampled_from(["a.md", "b.md", "dir/c d.md", "e#f.md", "ü.md"])
_HEADINGS = st.one_of(st.none(), st.sampled_from(["Setup", " setup", "SETUP ", "Data flow", "x"]))


@st.composite
def _queries(draw: Any, mixed: bool) -> Query:
    entries: dict[tuple[str, str | None], ExpectedEntry] = {}
    for path, heading in draw(st.lists(st.tuples(_PATHS, _HEADINGS), min_size=1, max_size=6)):
        key = (path, None if heading is None else heading.strip().lower())
        entries.setdefault(key, ExpectedEntry(path, heading))
    expected = tuple(entries.values())
    if not mixed:
        with_heading = {e.path for e in expected if e.heading is not None}
        expected = tuple(e for e in expected if e.heading is not None or e.path not in with_heading)
    hits = draw(st.lists(st.tuples(_PATHS, _HEADINGS), max_size=14))
    return Query(draw(st.text(min_size=1, max_size=8)), expected, _ranked(hits))


@settings(max_examples=150)
@given(st.lists(_queries(mixed=False), min_size=1, max_size=6))
def test_trec_eval_equals_our_metrics_on_generated_rankings(queries: list[Query]) -> None:
    _assert_trec_agrees(queries)


@settings(max_examples=100)
@given(st.lists(_queries(mixed=True), min_size=1, max_size=6))
def test_only_recall_of_the_named_queries_may_differ(queries: list[Query]) -> None:
    _assert_trec_agrees(queries)


# --------------------------------------------------------------------------- kb-eval


@pytest.fixture(scope="module")
def kb_eval_export(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``groove eval`` on kb-eval (hash model, limit 20) with both TREC files written."""
    base = tmp_path_factory.mktemp("trec")
    kb = base / "kb-eval"
    shutil.copytree(KB_EVAL, kb, ignore=shutil.ignore_patterns(".groove*"))
    out = base / "report.json"
    argv = ["eval", "--kb-path", str(kb), "--golden", str(KB_EVAL_GOLDEN), "--model", "hash",
            "--no-history", "--k", "1,3,5,10", "--limit", "20", "--format", "json",
            "--trec-run", str(base / "run.trec"),
            "--trec-qrels", str(base / "qrels.trec")]  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        buffer = io.StringIO()
        patch.setattr("sys.stdout", buffer)
        assert main(argv) == 0
    out.write_text(buffer.getvalue(), encoding="utf-8")
    report = json.loads(buffer.getvalue())
    return {"base": base, "aggregate": report["aggregate"], "queries": len(report["per_query"])}


def _ours(aggregate: dict[str, Any]) -> dict[str, float]:
    numbers = {"mrr": aggregate["mrr"]}
    for k in KS:
        numbers[f"recall@{k}"] = aggregate["recall_at_k"][str(k)]
        numbers[f"ndcg@{k}"] = aggregate["ndcg_at_k"][str(k)]
    return numbers


def test_pytrec_eval_reads_the_exported_kb_eval_run(kb_eval_export: dict[str, Any]) -> None:
    base: Path = kb_eval_export["base"]
    with open(base / "qrels.trec", encoding="utf-8") as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    with open(base / "run.trec", encoding="utf-8") as handle:
        run = pytrec_eval.parse_run(handle)
    assert len(qrels) == kb_eval_export["queries"] == 30
    assert all(len(docs) == 20 for docs in run.values())
    measures = {"recip_rank", "recall.1,3,5,10", "ndcg_cut.1,3,5,10"}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)

    def mean(name: str) -> float:
        return sum(per_query.get(q, {}).get(name, 0.0) for q in qrels) / len(qrels)

    theirs = {"mrr": mean("recip_rank")}
    for k in KS:
        theirs[f"recall@{k}"] = mean(f"recall_{k}")
        theirs[f"ndcg@{k}"] = mean(f"ndcg_cut_{k}")
    ours = _ours(kb_eval_export["aggregate"])
    assert theirs == pytest.approx(ours, abs=TOLERANCE)
    assert 0.0 < ours["ndcg@10"] < 1.0  # a run with misses, so the comparison has teeth


@pytest.mark.slow
def test_ranx_reads_the_exported_kb_eval_run(kb_eval_export: dict[str, Any]) -> None:
    ranx = pytest.importorskip("ranx")
    base: Path = kb_eval_export["base"]
    qrels = ranx.Qrels.from_file(str(base / "qrels.trec"), kind="trec")
    run = ranx.Run.from_file(str(base / "run.trec"), kind="trec")
    names = ["mrr", *(f"{m}@{k}" for m in ("recall", "ndcg") for k in KS)]
    theirs = ranx.evaluate(qrels, run, names, make_comparable=True)
    assert {name: float(value) for name, value in theirs.items()} == pytest.approx(
        _ours(kb_eval_export["aggregate"]), abs=TOLERANCE
    )


def test_a_failed_trec_write_is_one_error_and_the_other_files_are_written(
    kb_eval_export: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    base: Path = kb_eval_export["base"]
    (base / "blocker").write_text("", encoding="utf-8")
    code = main(
        ["eval", "--kb-path", str(base / "kb-eval"), "--golden", str(KB_EVAL_GOLDEN),
         "--model", "hash", "--no-history", "--trec-run", str(base / "blocker" / "run.trec"),
         "--trec-qrels", str(base / "again.qrels")]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert (base / "again.qrels").read_text(encoding="utf-8") == (base / "qrels.trec").read_text(
        encoding="utf-8"
    )
    errors = [line for line in err.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and "TREC run file" in errors[0] and "--trec-run" in errors[0], err
