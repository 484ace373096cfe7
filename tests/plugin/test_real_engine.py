"""pytest-groove plugin over the real engine: indexing, xdist, the scripted regression.

Most tests use ``--groove-model hash`` (lexical, instant); one test, kept in the
default run (~4 s), runs the default multilingual model over the shipped example KB.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import copy_example_kb
from tests.helpers.kb_files import write_notes

pytest_plugins = ["pytester"]


XDIST = ["-n", "2"]

DOCS = {
    "deploys.md": """\
---
title: Deploys
---

## Release schedule

Releases leave on Tuesday and Thursday mornings; nothing ships on Friday.

## Rollback procedure

Run the rollback command with the previous tag; it takes two minutes.
""",
    "oncall.md": """\
---
title: On-call
---

## Pager rotation

Each engineer carries the pager for one week, Monday to Monday.

## Escalation path

Page the secondary after thirty minutes without mitigation.
""",
    "tokens.md": """\
## Token rotation

API tokens expire after ninety days; create the new token before revoking the old.
""",
    "caching.md": """\
## Cache invalidation

The ingest worker deletes the cached parcel status before writing a new event.
""",
}

GOLDEN = """\
queries:
  - id: schedule
    query: "release schedule tuesday thursday"
    expected:
      - path: "deploys.md"
  - id: pager
    query: "pager rotation engineer week"
    expected:
      - path: "oncall.md"
        heading: "Pager rotation"
  - id: tokens
    query: "token rotation ninety days"
    expected:
      - path: "tokens.md"
  - id: cache
    query: "cache invalidation ingest worker"
    expected:
      - path: "caching.md"
"""


#: the xdist variants are in the slow run; test_xdist_and_one_process_agree_on_the_engine and
#: the default-model test keep two workers in the default run
@pytest.fixture(params=["one-process", pytest.param("xdist", marks=pytest.mark.slow)])
def dist(request: pytest.FixtureRequest) -> list[str]:
    return [] if request.param == "one-process" else list(XDIST)


@pytest.fixture
def kb(pytester: pytest.Pytester) -> Path:
    return write_notes(pytester.path / "kb", {**DOCS, ".groove-eval.yml": GOLDEN})


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--groove-kb", "kb", "--groove-model", "hash", *args)


def _history(kb: Path) -> list[dict[str, Any]]:
    path = kb / ".groove-eval-history.json"
    if not path.exists():
        return []
    # the stored runs in their full JSON form, whatever the file's compact form
    from pytest_groove.evaluation.history.file import load_history

    return [r.to_json() for r in load_history(path)]


def test_fresh_kb_is_indexed_once_then_reused(
    pytester: pytest.Pytester, kb: Path, dist: list[str]
) -> None:
    first = _run(pytester, *dist)
    assert first.ret == pytest.ExitCode.OK, first.stdout.str()
    first.assert_outcomes(passed=4)
    first.stdout.fnmatch_lines(["groove: indexed: 4 added, *"])
    first.stdout.fnmatch_lines(["  corpus: 4 docs / 6 chunks"])
    assert (kb / ".groove" / "hash").is_dir()

    second = _run(pytester, *dist)
    second.assert_outcomes(passed=4)
    assert "groove: indexed:" not in second.stdout.str()
    second.stdout.fnmatch_lines(["Aggregate (previous run: *)", "  recall@1   1.000  (—)"])
    assert len(_history(kb)) == 2


def test_xdist_and_one_process_agree_on_the_engine(pytester: pytest.Pytester, kb: Path) -> None:
    one = _run(pytester, "--groove-json", "one.json")
    two = _run(pytester, "--groove-json", "two.json", *XDIST)
    assert one.ret == two.ret == pytest.ExitCode.OK
    a = json.loads((pytester.path / "one.json").read_text())
    b = json.loads((pytester.path / "two.json").read_text())
    for key in ("aggregate", "fingerprint", "corpus"):
        assert a[key] == b[key], key
    # the runs' own results (the second run also has a baseline, and verdicts against it)
    run_keys = ("id", "query", "expected", "top_k", "metrics")
    assert [{k: q[k] for k in run_keys} for q in a["per_query"]] == [
        {k: q[k] for k in run_keys} for q in b["per_query"]
    ]
    assert len(_history(kb)) == 2  # one record per session, not one per worker


def test_losing_an_expected_answer_trips_the_gate_and_restoring_passes(
    pytester: pytest.Pytester, kb: Path, dist: list[str]
) -> None:
    assert _run(pytester, *dist).ret == pytest.ExitCode.OK
    original = (kb / "tokens.md").read_text(encoding="utf-8")
    (kb / "tokens.md").write_text(
        "## Gardening\n\nTomatoes want sun and water.\n\n## Weather\n\nRain today.\n",
        encoding="utf-8",
    )

    broken = _run(pytester, "--groove-fail-on-regression", *dist)
    assert broken.ret == pytest.ExitCode.TESTS_FAILED
    broken.stdout.fnmatch_lines(["*golden query 'tokens' regressed*"])
    broken.stdout.fnmatch_lines(["    ⚠️ corpus changed since last run (*"])
    broken.stderr.fnmatch_lines(
        ["groove: retrieval quality regressed by more than 0.050 *(recall@1, *"]
    )

    (kb / "tokens.md").write_text(original, encoding="utf-8")
    restored = _run(pytester, "--groove-fail-on-regression", *dist)
    assert restored.ret == pytest.ExitCode.OK
    restored.assert_outcomes(passed=4)


def test_renaming_an_expected_document_is_a_miss_that_names_the_new_path(
    pytester: pytest.Pytester, kb: Path, dist: list[str]
) -> None:
    """An expected path the baseline's corpus held is a lost answer, not a golden-file
    mistake: the query misses, and the same content under a new path is named."""
    assert _run(pytester, *dist).ret == pytest.ExitCode.OK
    recorded = len(_history(kb))
    (kb / "tokens.md").rename(kb / "token.md")

    broken = _run(pytester, *dist)
    assert broken.ret == pytest.ExitCode.TESTS_FAILED
    broken.assert_outcomes(passed=3, failed=1)
    broken.stdout.fnmatch_lines(
        [
            "*golden query 'tokens' missed: nothing expected in the top 10*",
            "Per-query (regressions and misses, 1 of 4)",
            "  ✗ tokens * `tokens.md` renamed to `token.md`? update the golden file",
        ]
    )
    assert "Traceback" not in broken.stderr.str() + broken.stdout.str()
    assert len(_history(kb)) == recorded + 1

    (kb / "token.md").rename(kb / "tokens.md")
    assert _run(pytester, *dist).ret == pytest.ExitCode.OK


def test_no_reindex_uses_the_index_as_it_is(pytester: pytest.Pytester, kb: Path) -> None:
    assert _run(pytester).ret == pytest.ExitCode.OK
    (kb / "extra.md").write_text("## Extra\n\nSomething new.\n", encoding="utf-8")
    result = _run(pytester, "--groove-no-reindex")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["  corpus: 4 docs / 6 chunks"])
    refreshed = _run(pytester)
    refreshed.stdout.fnmatch_lines(["groove: indexed: 1 added, *", "*corpus: 5 docs / 7 chunks"])


def test_index_dir_option_moves_the_index(pytester: pytest.Pytester, kb: Path) -> None:
    result = _run(pytester, "--groove-index-dir", "ci-cache/index")
    assert result.ret == pytest.ExitCode.OK
    assert (pytester.path / "ci-cache" / "index").is_dir()
    assert not (kb / ".groove").exists()


def test_embedder_hook_supplies_the_model(
    pytester: pytest.Pytester, kb: Path, dist: list[str]
) -> None:
    pytester.makeconftest(
        """
        from pytest_groove.embed.hashing import HashEmbedder

        class TeamEmbedder(HashEmbedder):
            name = "team-hash"

        def pytest_groove_embedder(config):
            return TeamEmbedder()
        """
    )
    result = pytester.runpytest("--groove-kb", "kb", "--groove-json", "r.json", *dist)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["fingerprint"]["model"] == "team-hash"
    assert (kb / ".groove" / "team-hash").is_dir()


def test_golden_queries_are_embedded_in_one_batch(pytester: pytest.Pytester, kb: Path) -> None:
    pytester.makeconftest(
        """
        import pathlib
        from pytest_groove.embed.hashing import HashEmbedder

        class Counting(HashEmbedder):
            def embed_queries(self, texts):
                with open(pathlib.Path(__file__).parent / "calls.txt", "a") as log:
                    log.write(f"{len(texts)}\\n")
                return super().embed_queries(texts)

        def pytest_groove_embedder(config):
            return Counting()
        """
    )
    result = pytester.runpytest("--groove-kb", "kb", "--groove-no-history")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    # four golden queries: one call of four, not four calls of one
    assert (pytester.path / "calls.txt").read_text().split() == ["4"]


def test_vector_index_option_reaches_the_fingerprint(
    pytester: pytest.Pytester, kb: Path, dist: list[str]
) -> None:
    result = _run(pytester, "--groove-vector-index", "hnsw", "--groove-json", "r.json", *dist)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["fingerprint"]["vector_index"] == "hnsw"
    bad = _run(pytester, "--groove-vector-index", "ivf")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--groove-vector-index takes one of flat, hnsw*"])


def test_notes_quoting_golden_queries_are_reported_on_stderr(
    pytester: pytest.Pytester, kb: Path
) -> None:
    (kb / "eval-notes.md").write_text(
        "## Our golden set\n\n"
        "We ask 'pager rotation engineer week' and 'token rotation ninety days'.\n",
        encoding="utf-8",
    )
    result = _run(pytester, "--groove-json", "r.json")
    result.stderr.fnmatch_lines(
        [
            "groove: 1 document(s) quote 2 or more golden queries verbatim "
            "(golden-queries-quoted).",
            "  eval-notes.md",
        ]
    )
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["findings"][0]["path"] == "eval-notes.md"


@pytest.mark.slow  # the default run's real-model session is tests/docs/test_regression_sample.py
def test_example_kb_with_the_default_model(pytester: pytest.Pytester) -> None:
    """The shipped example, the real multilingual model: every query passes, twice, the
    second time under xdist (each worker loads the model)."""
    copy_example_kb(pytester.path / "kb")
    first = pytester.runpytest("--groove-kb", "kb")
    assert first.ret == pytest.ExitCode.OK, first.stdout.str()
    first.assert_outcomes(passed=14)
    first.stdout.fnmatch_lines(["  model: e5-small *queries: 14", "  corpus: 11 docs / * chunks"])
    second = pytester.runpytest("--groove-kb", "kb", *XDIST)
    assert second.ret == pytest.ExitCode.OK
    second.stdout.fnmatch_lines(["Aggregate (previous run: *)"])
    assert len(_history(pytester.path / "kb")) == 2


def test_a_retriever_hook_that_returns_none_says_whose_numbers_these_are(
    pytester: pytest.Pytester, kb: Path
) -> None:
    pytester.makeconftest(
        "def pytest_groove_retriever(config):\n"
        "    retriever = object()  # built, then the return was forgotten\n"
    )
    result = pytester.runpytest("--groove-kb", "kb", "--groove-model", "hash")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "groove: the pytest_groove_retriever hook in *conftest.py returned None: measuring "
            "the built-in engine (model hash) instead; return a retriever to measure yours"
        ]
    )


@pytest.mark.parametrize(
    # a two-worker session each: the refusal of a missing index in the slow run
    "extra",
    [[], pytest.param(["--groove-no-reindex"], marks=pytest.mark.slow)],
    ids=["reindex", "no-reindex"],
)
def test_xdist_with_the_golden_queries_deselected_does_no_index_work(
    pytester: pytest.Pytester, kb: Path, extra: list[str]
) -> None:
    # a CI job that runs the project's tests apart from the gate: the controller must
    # not build the index (nor refuse a missing one) for queries nobody selected
    pytester.makeini("[pytest]\ngroove_kb = kb\ngroove_model = hash\n")
    pytester.makepyfile(test_unit="def test_unit():\n    assert True\n")
    result = pytester.runpytest(*XDIST, "-m", "not groove", *extra)
    result.assert_outcomes(passed=1)
    assert not (kb / ".groove").exists()


@pytest.mark.parametrize("workers", [[], XDIST], ids=["one-process", "xdist"])
def test_a_long_first_index_shows_progress_lines_in_the_pytest_output(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    from tests.kb.test_index_group import make_kb

    kb = make_kb(pytester.path / "kb", 300)
    (kb / ".groove-eval.yml").write_text(
        'queries:\n  - query: "alpha backups 77"\n    expected:\n'
        '      - path: "folder1/note-0009.md"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("GROOVE_PROGRESS_SECONDS", "0.01")
    result = _run(pytester, *workers)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    lines = result.stdout.lines
    # printed through the terminal reporter: pytest's capture never holds them back
    progress = [i for i, line in enumerate(lines) if line.startswith("groove: indexing notes: ")]
    summary = next(i for i, line in enumerate(lines) if line.startswith("groove: indexed: 300"))
    assert progress and max(progress) < summary, lines


def test_a_quick_index_shows_no_progress_line(
    pytester: pytest.Pytester, kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GROOVE_PROGRESS_SECONDS", raising=False)
    result = _run(pytester)
    result.stdout.fnmatch_lines(["groove: indexed: 4 added, *"])
    assert "groove: indexing notes" not in result.stdout.str()
    assert "groove: indexing notes" not in result.stderr.str()


def test_a_failure_text_says_when_document_grouping_puts_scores_out_of_order(
    pytester: pytest.Pytester,
) -> None:
    from tests.cli.test_index_search import GROUPED_NOTES

    kb = pytester.path / "kb"
    kb.mkdir()
    for name, text in GROUPED_NOTES.items():
        (kb / name).write_text(text, encoding="utf-8")
    (kb / "groove.toml").write_text("[eval]\nk_values = [1]\n", encoding="utf-8")
    (kb / ".groove-eval.yml").write_text(
        'queries:\n  - id: rollback\n    query: "canary release"\n    expected:\n'
        '      - path: "deploy.md"\n        heading: "Canary rollback"\n',
        encoding="utf-8",
    )
    # a miss at k=1 that lists the hits fetched beyond it
    result = _run(pytester, "--groove-limit", "5")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  top 4 of 4 hits:",
            "      1. deploy.md#Canary release  (0.0328)",
            "      2. auth.md#Tokens  (0.0317)",
            "*",
            "      4. deploy.md#Canary rollback  (0.0323)",
            "  hits are grouped by document ([search] document_first): scores are not in "
            "rank order",
        ]
    )
