"""`groove eval` and the session function behind both doors.

Three layers: :func:`finish_evaluation` directly (history, gate, subset runs),
``run(args)`` in-process with a fake engine (flags, output routing, exit codes), and
the real command through a subprocess with the ``hash`` embedder.
"""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO_ROOT
from pytest_groove.cli import evaluate as command
from pytest_groove.cli.commands import build_parser
from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.finish import finish_evaluation
from pytest_groove.evaluation.golden.file import load_golden
from pytest_groove.evaluation.history.file import HISTORY_FILE_NAME, encode_history, load_history
from pytest_groove.evaluation.lifecycle import Evaluation
from pytest_groove.evaluation.runs.record import QueryResult, evaluate_query
from pytest_groove.kb.source.records import ChunkText, CorpusSnapshot
from pytest_groove.search.hits import SearchHit
from pytest_groove.settings.config import SearchSettings
from tests.helpers.cli_invoke import Groove
from tests.helpers.eval_factories import begun, corpus
from tests.helpers.kb_files import LONG, write_invoices_kb, write_notes

GOLDEN = """\
queries:
  - id: rrf-basics
    query: "What does the k parameter in RRF do?"
    expected:
      - path: "docs/architecture.md"
        heading: "Data flow"
      - path: "src/db.md"
  - query: "How are chunks deduplicated?"
    expected:
      - path: "src/indexer.md"
"""

Answers = dict[str, list[tuple[str, str | None]]]

#: the cap note when no --limit was given: it names the k the number came from
K_CAP_NOTE = (
    "groove eval: note: k 2000 exceeds the retrieval cap; using 1000 (for that k and for the "
    "limit, which defaults to the largest k)\n"
)

#: what the fake engine returns per query text
GOOD: Answers = {
    "What does the k parameter in RRF do?": [
        ("docs/architecture.md", "Data Flow "),
        ("docs/usage.md", "Search"),
        ("src/db.md", None),
    ],
    "How are chunks deduplicated?": [("src/indexer.md", "Dedup"), ("README.md", None)],
}
BAD: Answers = {
    **GOOD,
    "How are chunks deduplicated?": [("README.md", None), ("docs/usage.md", None)],
}


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return write_notes(tmp_path / "kb", {".groove-eval.yml": GOLDEN})


def hits_for(answers: Answers, text: str) -> list[SearchHit]:
    return [
        SearchHit(rank=i, path=p, heading=h, score=1.0 / (i + 1))
        for i, (p, h) in enumerate(answers.get(text, []), start=1)
    ]


# --------------------------------------------------------------------------- session


def context(kb: Path, **options: Any) -> Evaluation:
    """An evaluation begun over ``kb`` (the corpus: 3 documents, 7 chunks)."""
    options.setdefault("corpus", corpus(3, 7))
    evaluation: Evaluation = begun(kb, **options)
    return evaluation


def results(ctx: Evaluation, answers: Answers) -> list[QueryResult]:
    return [
        evaluate_query(q, hits_for(answers, q.query), ctx.fingerprint.k_values)
        for q in ctx.plan.golden.queries
    ]


def finish(kb: Path, answers: Any = GOOD, record: bool = True, **flags: Any) -> Any:
    ctx = context(kb, **flags)
    return finish_evaluation(ctx, results(ctx, answers), record=record)


def test_first_run_is_recorded_and_promises_a_diff(kb: Path) -> None:
    outcome = finish(kb)
    assert outcome.recorded and outcome.exit_code == 0
    assert outcome.text_report.endswith(
        "\n\nOn the next run it will automatically show a diff against this one.\n"
    )
    assert [r.timestamp for r in load_history(kb / HISTORY_FILE_NAME)] == [outcome.run.timestamp]
    assert outcome.json_report["previous"] is None
    assert outcome.run.aggregate.query_count == 2


def test_second_run_diffs_against_the_first(kb: Path) -> None:
    first = finish(kb)
    second = finish(kb, fail_on_regression=True)
    assert second.comparison.compatible
    assert second.comparison.baseline.timestamp == first.run.timestamp
    assert "Aggregate (previous run: " in second.text_report
    assert "On the next run" not in second.text_report
    assert second.gate_failures == [] and second.exit_code == 0
    assert len(load_history(kb / HISTORY_FILE_NAME)) == 2


def test_regression_fails_the_gate_but_the_run_is_still_recorded(kb: Path) -> None:
    finish(kb)
    outcome = finish(kb, BAD, fail_on_regression=True)
    assert outcome.exit_code == 1
    names = ["recall@1", "recall@5", "recall@10", "MRR", "nDCG@1", "nDCG@5", "nDCG@10"]
    assert outcome.gate_failures == names
    assert outcome.gate_message.startswith(
        "groove eval: retrieval quality regressed by more than 0.050 since the run of "
    )
    assert f"({', '.join(names)})." in outcome.gate_message
    assert outcome.gate_message.endswith("Exit status 1 because --fail-on-regression was set.")
    assert outcome.gate_message.isascii()
    assert load_history(kb / HISTORY_FILE_NAME)[0].timestamp == outcome.run.timestamp
    assert "  ✗ How are chunks deduplicated? recall@10: 1.00 → 0.00" in outcome.text_report


def test_regression_message_mentions_a_changed_corpus(kb: Path) -> None:
    finish(kb)
    ctx = context(kb, fail_on_regression=True, corpus=corpus(4, 9))
    outcome = finish_evaluation(ctx, results(ctx, BAD), record=True)
    assert outcome.gate_message is not None
    assert (
        " The indexed corpus changed since that run as well (3 -> 4 documents, 7 -> 9 chunks)"
        in outcome.gate_message
    )


def test_without_the_flag_a_regression_does_not_fail(kb: Path) -> None:
    finish(kb)
    outcome = finish(kb, BAD)
    assert outcome.exit_code == 0 and outcome.gate_failures == []
    assert outcome.comparison.regressions


@pytest.mark.parametrize("flag", ["no_diff", "no_history"])
def test_gate_is_a_no_op_without_a_comparison(kb: Path, flag: str) -> None:
    finish(kb)
    outcome = finish(kb, BAD, fail_on_regression=True, **{flag: True})
    assert outcome.exit_code == 0 and outcome.gate_failures == []
    assert outcome.json_report["previous"] is None and outcome.json_report["diff"] is None
    assert "previous run" not in outcome.text_report


def test_no_history_neither_reads_nor_writes(kb: Path) -> None:
    history = kb / HISTORY_FILE_NAME
    history.write_bytes(b"not even json")
    outcome = finish(kb, no_history=True)
    assert history.read_bytes() == b"not even json"
    assert outcome.warnings == [] and not outcome.recorded
    assert outcome.json_report["recorded"] is False


def test_no_diff_still_records(kb: Path) -> None:
    finish(kb)
    outcome = finish(kb, no_diff=True)
    assert outcome.recorded
    assert len(load_history(kb / HISTORY_FILE_NAME)) == 2


def test_incompatible_history_disables_diff_and_gate(kb: Path) -> None:
    finish(kb)
    ctx = context(kb, fail_on_regression=True, fingerprint_changes={"golden_hash": "0" * 64})
    outcome = finish_evaluation(ctx, results(ctx, BAD), record=True)
    assert "⚠️ golden changed since last run, diff disabled" in outcome.text_report
    assert outcome.exit_code == 0
    assert outcome.json_report["previous"] is not None and outcome.json_report["diff"] is None


def test_an_experiment_does_not_switch_the_gate_off(kb: Path) -> None:
    finish(kb)
    ctx = context(kb, fingerprint_changes={"reranker": "bge-reranker-v2-m3"})
    finish_evaluation(ctx, results(ctx, GOOD), record=True)
    outcome = finish(kb, BAD, fail_on_regression=True)
    assert outcome.exit_code == 1
    assert "1 newer run(s) with another fingerprint skipped" in outcome.text_report


def test_frozen_baseline_is_compared_instead_of_newer_runs(kb: Path) -> None:
    frozen = finish(kb, freeze_baseline=True)
    finish(kb, BAD)  # newer, worse run: the next BAD run equals it, but not the frozen one
    outcome = finish(kb, BAD, fail_on_regression=True)
    assert outcome.comparison.baseline.timestamp == frozen.run.timestamp
    assert outcome.exit_code == 1
    assert ", frozen baseline)" in outcome.text_report


def test_subset_run_is_reported_against_the_same_queries_never_recorded(kb: Path) -> None:
    finish(kb)
    ctx = context(kb, fail_on_regression=True, freeze_baseline=True)
    subset = results(ctx, BAD)[1:]
    outcome = finish_evaluation(ctx, subset, record=False)
    assert not outcome.recorded and outcome.exit_code == 0
    assert len(load_history(kb / HISTORY_FILE_NAME)) == 1
    assert outcome.text_report.endswith(
        "\n\nSubset run (1 of 2 golden queries): not recorded in the history and not gated.\n"
    )
    # the baseline is cut down to the same query, so the diff is like for like
    baseline, diff = outcome.comparison.baseline, outcome.comparison.diff
    assert baseline is not None and diff is not None
    assert baseline.aggregate.query_count == 1
    assert diff.mrr == -1.0
    assert "--freeze-baseline ignored" in outcome.warnings[0]


def test_missing_results_make_a_run_unrecordable(kb: Path) -> None:
    ctx = context(kb)
    outcome = finish_evaluation(ctx, results(ctx, GOOD)[:1], record=True)
    assert not outcome.recorded
    assert "only 1 of 2 golden queries have results" in outcome.warnings[0]
    assert not (kb / HISTORY_FILE_NAME).exists()


def test_results_arriving_out_of_order_are_put_in_golden_order(kb: Path) -> None:
    ctx = context(kb)
    outcome = finish_evaluation(ctx, list(reversed(results(ctx, GOOD))), record=True)
    assert outcome.recorded
    assert [q.id for q in outcome.run.per_query] == [q.id for q in ctx.plan.golden.queries]


def test_refused_history_stops_before_anything_is_written(kb: Path) -> None:
    history = kb / HISTORY_FILE_NAME
    history.mkdir()
    with pytest.raises(GrooveError, match="refusing to read the eval history"):
        finish(kb)
    assert history.is_dir()


def test_unparsable_history_is_replaced_with_a_warning(kb: Path) -> None:
    (kb / HISTORY_FILE_NAME).write_bytes(b"{not json")
    outcome = finish(kb)
    assert outcome.recorded and "starting fresh" in outcome.warnings[0]
    assert len(load_history(kb / HISTORY_FILE_NAME)) == 1


def test_a_failed_save_is_reported_after_the_reports_are_built(kb: Path) -> None:
    ctx = context(kb, fail_on_regression=True, history_cap=256)
    outcome = finish_evaluation(ctx, results(ctx, GOOD), record=True)
    assert outcome.exit_code == 1 and not outcome.recorded
    assert outcome.error is not None and "--no-history" in outcome.error
    assert outcome.text_report.startswith("groove eval — ")
    assert "On the next run" not in outcome.text_report
    assert outcome.json_report["recorded"] is False
    assert not (kb / HISTORY_FILE_NAME).exists()


def test_json_report_is_written_even_when_the_history_save_fails(kb: Path, tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    ctx = context(kb, json=target, history_cap=256)
    outcome = finish_evaluation(ctx, results(ctx, GOOD), record=True)
    assert outcome.error is not None and "--no-history" in outcome.error
    assert json.loads(target.read_text("utf-8"))["recorded"] is False


def test_json_report_file_is_written(kb: Path, tmp_path: Path) -> None:
    target = tmp_path / "out" / "report.json"
    outcome = finish(kb, json=target)
    assert json.loads(target.read_text("utf-8")) == json.loads(json.dumps(outcome.json_report))


def chunks(*bodies: tuple[str, str]) -> list[ChunkText]:
    return [ChunkText(path, i, None, None, body) for i, (path, body) in enumerate(bodies)]


def test_findings_come_from_the_chunk_scan_and_leave_the_exit_code(kb: Path) -> None:
    ctx = context(
        kb,
        texts=chunks(
            ("notes/eval.md", "what does the k parameter in rrf do?"),
            ("notes/eval.md", "Q: How are chunks  deduplicated?"),
            ("src/db.md", "unrelated"),
        ),
    )
    outcome = finish_evaluation(ctx, results(ctx, GOOD), record=True)
    assert outcome.exit_code == 0
    assert [f.path for f in outcome.run.findings] == ["notes/eval.md"]
    assert outcome.json_report["findings"][0]["quoted"] == [
        {"query_id": "rrf-basics", "rank_in_top_k": None},
        {"query_id": "How are chunks deduplicated?", "rank_in_top_k": None},
    ]
    assert outcome.findings_warning is not None
    assert outcome.findings_warning.startswith("groove eval: 1 document(s) quote 2 or more")
    assert load_history(kb / HISTORY_FILE_NAME)[0].findings == outcome.run.findings


# --------------------------------------------------------------------------- run(args), fake engine


class FakeEngine:
    """Answers from a table; records whether work happened inside the read snapshot."""

    model_name = "hash"
    reranker_id: str | None = None
    context_mode = "off"

    def __init__(self, answers: Answers) -> None:
        self.answers = answers
        self.in_snapshot = False
        self.outside: list[str] = []
        self.limits: list[int] = []
        self.closed = False
        #: indexed paths no answer returns
        self.extra_paths: set[str] = set()
        #: (searches done before, queries) of each prepare_queries call
        self.prepared: list[tuple[int, list[str]]] = []

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        # nested snapshots join the outer one, as the store's do
        outer = self.in_snapshot
        self.in_snapshot = True
        try:
            yield
        finally:
            self.in_snapshot = outer

    def read_snapshot(self) -> Any:
        return self._snapshot()

    def _check(self, what: str) -> None:
        if not self.in_snapshot:
            self.outside.append(what)

    def search(
        self, query: str, limit: int, search: SearchSettings | None = None
    ) -> list[SearchHit]:
        self._check("search")
        self.limits.append(limit)
        return hits_for(self.answers, query)[:limit]

    def prepare_queries(self, queries: Sequence[str]) -> None:
        self.prepared.append((len(self.limits), list(queries)))

    def corpus_snapshot(self) -> CorpusSnapshot:
        self._check("corpus")
        return corpus(3, 7)

    def document_digests(self) -> dict[str, str] | None:
        return None

    def headings_by_path(self) -> dict[str, set[str | None]]:
        """Every path and heading any answer holds: the fake KB's index."""
        self._check("headings")
        indexed: dict[str, set[str | None]] = {}
        for answers in (self.answers, GOOD):
            for hits in answers.values():
                for path, heading in hits:
                    indexed.setdefault(path, set()).add(heading)
        for path in self.extra_paths:
            indexed.setdefault(path, {None})
        return indexed

    def iter_chunk_texts(self) -> Iterator[ChunkText]:
        self._check("scan")
        yield ChunkText("src/db.md", 0, "Data flow", None, "body")
        self._check("scan")

    def quoted_by_document(self, needles: Sequence[str]) -> dict[str, set[int]]:
        from pytest_groove.kb.derived.quote_scan import quoted_needles

        return quoted_needles(needles, self.iter_chunk_texts())

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def engine() -> Iterator[FakeEngine]:
    fake = FakeEngine(GOOD)
    _FAKES.append(fake)
    yield fake
    _FAKES.remove(fake)


#: the fake engine of the running test (through the command's engine factory)
_FAKES: list[FakeEngine] = []


def invoke(*argv: str) -> tuple[int, str, str]:
    """``groove eval`` in-process; its engine is the test's fake one when it has one."""
    args = build_parser().parse_args(["eval", *argv])
    out, err = io.StringIO(), io.StringIO()
    opener = (lambda *a, **k: _FAKES[-1]) if _FAKES else None
    code = command.run(args, out=out, err=err, open_engine=opener)
    return code, out.getvalue(), err.getvalue()


def test_run_prints_the_text_report_and_records(kb: Path, engine: FakeEngine) -> None:
    code, out, err = invoke("--kb-path", str(kb))
    assert code == 0, err
    assert out.startswith("groove eval — ")
    assert "  model: hash    reranker: none    limit: 10    queries: 2\n" in out
    assert "  corpus: 3 docs / 7 chunks\n" in out
    assert "\x1b[" not in out  # not a terminal
    assert err == ""
    assert engine.outside == [] and engine.closed
    assert engine.limits == [10, 10]
    # every golden query in one batch, before the first search
    assert engine.prepared == [(0, list(GOOD))]
    assert len(load_history(kb / HISTORY_FILE_NAME)) == 1


def test_run_json_format(kb: Path, engine: FakeEngine) -> None:
    invoke("--kb-path", str(kb))
    code, out, _ = invoke("--kb-path", str(kb), "--format", "json", "--k", "1,3")
    assert code == 0
    data = json.loads(out)
    assert data["fingerprint"]["k_values"] == [1, 3] and data["fingerprint"]["limit"] == 3
    assert data["previous"] is not None and data["diff"] is None  # k changed
    assert data["findings"] == [] and data["corpus_changed"] is False


def test_repeated_k_flags_and_the_limit_cap_note(kb: Path, engine: FakeEngine) -> None:
    code, out, err = invoke("--kb-path", str(kb), "--k", "5", "--k", "1,2000", "--no-history")
    assert code == 0
    assert err == K_CAP_NOTE
    assert "limit: 1000" in out and "recall@1000" in out
    assert engine.limits == [1000, 1000]


def test_a_k_over_the_cap_alone_gives_the_limit_note(kb: Path, engine: FakeEngine) -> None:
    """No --limit was given, yet the note names one: the default limit is the
    largest k as requested, before capping (spec-eval §3.2, as the reference)."""
    code, out, err = invoke("--kb-path", str(kb), "--k", "2000", "--no-history")
    assert code == 0
    # named for where the number came from: no --limit was given, the largest k was
    assert err == K_CAP_NOTE
    assert "limit: 1000" in out and "recall@1000" in out


def test_limit_deepens_the_fetch_without_changing_k(kb: Path, engine: FakeEngine) -> None:
    code, out, _ = invoke("--kb-path", str(kb), "--k", "1", "--limit", "20", "--format", "json")
    assert code == 0
    assert engine.limits == [20, 20]
    assert json.loads(out)["fingerprint"]["k_values"] == [1]


def test_mmr_values_without_mmr_give_a_note(kb: Path, engine: FakeEngine) -> None:
    code, _, err = invoke("--kb-path", str(kb), "--mmr-lambda", "0.5", "--no-history")
    assert code == 0 and "MMR" in err


def test_mmr_on_enters_the_fingerprint(kb: Path, engine: FakeEngine) -> None:
    code, out, _ = invoke(
        "--kb-path", str(kb), "--mmr", "true", "--mmr-lambda", "0.5", "--format", "json"
    )
    assert code == 0
    assert json.loads(out)["fingerprint"]["mmr"] == {"lambda": 0.5, "same_doc_penalty": 0.0}


def test_gate_failure_exits_1_with_the_message_on_stderr(kb: Path, engine: FakeEngine) -> None:
    invoke("--kb-path", str(kb))
    engine.answers = BAD
    code, out, err = invoke("--kb-path", str(kb), "--fail-on-regression")
    assert code == 1
    assert "Per-query (regressions and misses" in out
    assert "retrieval quality regressed" in err
    assert len(load_history(kb / HISTORY_FILE_NAME)) == 2


#: two queries without ids whose derived ids (first 32 code points) are equal
SHARED_PREFIX_GOLDEN = """\
queries:
  - query: "How does the indexer handle the chunks of a big file?"
    expected:
      - path: "big.md"
      - path: "big-2.md"
  - query: "How does the indexer handle the chunks of a small file?"
    expected:
      - path: "small.md"
      - path: "small-2.md"
"""
#: both pass (something expected is retrieved), with different numbers
SHARED_PREFIX_ANSWERS: Answers = {
    "How does the indexer handle the chunks of a big file?": [("big.md", None), ("big-2.md", None)],
    "How does the indexer handle the chunks of a small file?": [
        ("other.md", None),
        ("small.md", None),
    ],
}


def test_queries_sharing_a_derived_id_show_no_regression_when_nothing_changed(
    kb: Path, engine: FakeEngine
) -> None:
    (kb / ".groove-eval.yml").write_text(SHARED_PREFIX_GOLDEN, encoding="utf-8")
    engine.answers = SHARED_PREFIX_ANSWERS
    engine.extra_paths = {"small-2.md"}
    assert invoke("--kb-path", str(kb))[0] == 0
    code, out, err = invoke("--kb-path", str(kb), "--fail-on-regression")
    assert code == 0, err
    assert "Aggregate (previous run: " in out
    assert "Per-query" not in out, out


def test_missing_golden_is_an_error_with_a_hint(tmp_path: Path, engine: FakeEngine) -> None:
    code, out, err = invoke("--kb-path", str(tmp_path))
    assert code == 1 and out == ""
    assert err.startswith("Error: no golden file at ") and "--golden" in err
    assert f"`groove init --kb-path {tmp_path}` writes a starter .groove-eval.yml" in err


def test_missing_kb_is_an_error(tmp_path: Path, engine: FakeEngine) -> None:
    code, _, err = invoke("--kb-path", str(tmp_path / "nope"))
    assert code == 1 and err.startswith("Error: ") and "nope" in err


def test_refused_history_is_an_error_with_nothing_on_stdout(kb: Path, engine: FakeEngine) -> None:
    (kb / HISTORY_FILE_NAME).mkdir()
    code, out, err = invoke("--kb-path", str(kb))
    assert code == 1 and out == ""
    assert err.startswith("Error: refusing to read the eval history")


def test_freeze_baseline_needs_the_history(kb: Path, engine: FakeEngine) -> None:
    code, _, err = invoke("--kb-path", str(kb), "--freeze-baseline", "--no-history")
    assert code == 2 and "--freeze-baseline" in err


def test_freeze_baseline_marks_the_run(kb: Path, engine: FakeEngine) -> None:
    assert invoke("--kb-path", str(kb), "--freeze-baseline")[0] == 0
    assert load_history(kb / HISTORY_FILE_NAME)[0].frozen


@pytest.mark.parametrize(
    "argv", [["--k", "1,x"], ["--k", "0"], ["--format", "xml"], ["--limit", "-1"]]
)
def test_bad_flag_values_are_usage_errors(kb: Path, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["eval", "--kb-path", str(kb), *argv])
    assert exc.value.code == 2


def test_eval_registers_every_documented_flag() -> None:
    parser = build_parser()
    args = parser.parse_args(
        ["eval", "--kb-path", "kb", "--golden", "g.yml", "--k", "1,5,10", "--model", "hash",
         "--reranker", "none", "--limit", "7", "--format", "json", "--no-history", "--no-diff",
         "--no-color", "--fail-on-regression", "--mmr", "false", "--mmr-lambda", "0.6",
         "--mmr-same-doc-penalty", "0.1", "--parent-retriever", "false", "--config", "c.toml",
         "--index-dir", "idx", "--no-reindex"]
    )  # fmt: skip
    assert isinstance(args, argparse.Namespace)
    assert args.func is command.run
    assert (args.k, args.limit, args.mmr, args.parent_retriever) == ([1, 5, 10], 7, False, False)


# --------------------------------------------------------------------------- subprocess


def test_end_to_end_with_the_hash_embedder(kb_eval_copy: Path, groove: Groove) -> None:
    golden = REPO_ROOT / "tests" / "corpora" / "kb-eval-golden.yml"
    # a note quoting two golden queries verbatim: reported, exit code untouched
    queries = [q.query for q in load_golden(golden, kb_eval_copy).queries]
    (kb_eval_copy / "about-the-eval.md").write_text(
        f"# About the eval\n\n## {queries[0]}\n\nWe also ask: {queries[1]}\n", encoding="utf-8"
    )
    done = groove.process(
        "eval", "--kb-path", str(kb_eval_copy), "--golden", str(golden), "--model", "hash"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("groove eval — ")
    assert "queries: 30" in done.stdout and "  corpus: 21 docs / 61 chunks" in done.stdout
    assert "On the next run it will automatically show a diff against this one." in done.stdout
    assert "groove eval: 1 document(s) quote 2 or more golden queries verbatim" in done.stderr
    assert "  about-the-eval.md\n" in done.stderr
    assert load_history(kb_eval_copy / HISTORY_FILE_NAME)[0].findings[0].path == (
        "about-the-eval.md"
    )


def test_vector_index_kind_is_in_the_fingerprint(kb_eval_copy: Path) -> None:
    kb = str(kb_eval_copy)
    golden = str(REPO_ROOT / "tests" / "corpora" / "kb-eval-golden.yml")
    base = ["--kb-path", kb, "--golden", golden, "--model", "hash", "--format", "json"]
    code, exact, err = invoke(*base)
    assert code == 0, err
    assert "vector_index" not in json.loads(exact)["fingerprint"]
    code, approx, err = invoke(*base, "--vector-index", "hnsw", "--no-reindex")
    assert code == 0, err
    data = json.loads(approx)
    assert data["fingerprint"]["vector_index"] == "hnsw"
    # never compared with the exact run before it
    assert data["diff"] is None
    # 62 chunks: the graph's search breadth covers them all, same answers
    assert data["aggregate"] == json.loads(exact)["aggregate"]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["eval", "--kb-path", kb, "--vector-index", "ivf"])


def test_real_engine_diff_then_gate(kb_eval_copy: Path) -> None:
    kb = str(kb_eval_copy)
    golden = str(REPO_ROOT / "tests" / "corpora" / "kb-eval-golden.yml")
    base = ["--kb-path", kb, "--golden", golden, "--model", "hash"]
    code, _, err = invoke(*base)
    assert code == 0, err
    code, second, err = invoke(*base, "--format", "json", "--fail-on-regression", "--no-reindex")
    assert code == 0, err
    data = json.loads(second)
    assert data["previous"] is not None and data["corpus_changed"] is False
    assert data["diff"]["mrr"] == 0.0 and data["findings"] == []

    # a doctored baseline far above what the index delivers makes the gate fail
    history = kb_eval_copy / HISTORY_FILE_NAME
    latest = load_history(history)[0]
    perfect = dict.fromkeys(latest.aggregate.recall_at_k, 1.0)
    history.write_bytes(
        encode_history([replace(latest, aggregate=replace(latest.aggregate, recall_at_k=perfect))])
    )
    code, third, err = invoke(*base, "--fail-on-regression", "--no-reindex")
    assert code == 1
    assert "Aggregate (previous run: " in third and "(↓ " in third
    assert "retrieval quality regressed by more than 0.050" in err
    assert err.rstrip().endswith("because --fail-on-regression was set.")
    assert len(load_history(history)) == 2


def test_a_refused_history_stops_the_run_before_any_index_work(
    kb_eval_copy: Path, groove: Groove
) -> None:
    golden = REPO_ROOT / "tests" / "corpora" / "kb-eval-golden.yml"
    (kb_eval_copy / HISTORY_FILE_NAME).mkdir()  # not a regular file: refused
    done = groove.process(
        "eval", "--kb-path", str(kb_eval_copy), "--golden", str(golden), "--model", "hash"
    )
    assert done.returncode == 1
    assert done.stderr.startswith("Error: refusing to read the eval history")
    assert not (kb_eval_copy / ".groove").exists()  # nothing indexed, nothing searched


# --------------------------------------------------------------------------- corpus changed


def test_corpus_change_names_the_frozen_baseline_it_was_compared_with(
    tmp_path: Path, groove: Groove
) -> None:
    kb = write_invoices_kb(tmp_path / "kb")
    first = groove.process("eval", "--kb-path", kb, "--model", "hash", "--freeze-baseline")
    assert first.returncode == 0, first.stderr
    groove.process("eval", "--kb-path", kb, "--model", "hash")  # a later run, not the baseline
    (kb / "ops" / "extra.md").write_text(f"## Extra\n\n{LONG}\n", encoding="utf-8")
    third = groove.process("eval", "--kb-path", kb, "--model", "hash")
    assert third.returncode == 0, third.stderr
    frozen = first.stdout.splitlines()[0].split(" — ", 1)[1]
    assert f"⚠️ corpus changed since the frozen baseline run of {frozen} (" in third.stdout
    assert "since last run" not in third.stdout
