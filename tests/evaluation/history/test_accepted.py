"""The accepted baseline file (evaluation/history/accepted.py) and the comparison
against it (evaluation/gate/accepted.py)."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.gate.accepted import compare_across, golden_changes
from pytest_groove.evaluation.history.accepted import (
    decode_baseline,
    encode_baseline,
    load_baseline,
    save_baseline,
)
from pytest_groove.evaluation.runs.gate_record import GateRecord
from pytest_groove.evaluation.runs.record import QueryResult, RunRecord, build_run
from pytest_groove.kb.source.records import CorpusSnapshot
from tests.helpers.eval_factories import fingerprint, query

FILES = (("a.md", "a" * 12), ("b.md", "b" * 12), ("c.md", "c" * 12))


def accepted_run(*results: QueryResult, files: tuple[tuple[str, str], ...] = FILES) -> RunRecord:
    corpus = CorpusSnapshot(len(files), 9, "d" * 64, files=files, digest_version=2)
    run = build_run(fingerprint(), results, corpus)
    return replace(run, gate=GateRecord(threshold=0.05, floors=(("mrr", 0.5),)))


def five() -> list[QueryResult]:
    return [query(f"q{i}", top=("a.md", "b.md")) for i in range(5)]


def test_accepting_the_same_results_twice_writes_the_same_bytes() -> None:
    first = accepted_run(*five())
    again = replace(accepted_run(*five()), timestamp=first.timestamp.replace(year=2030))
    assert encode_baseline(first) == encode_baseline(again)  # no timestamp in the file


def test_the_file_reads_back_as_the_run_it_was_written_from() -> None:
    run = accepted_run(*five())
    back = decode_baseline(encode_baseline(run), Path("b.json"))
    # each query's hits down to its deepest answer, without their scores
    assert [q.metrics for q in back.per_query] == [q.metrics for q in run.per_query]
    assert [[(h.path, h.rank) for h in q.top_k] for q in back.per_query] == [[("a.md", 1)]] * 5
    assert [(q.id, q.query, q.expected) for q in back.per_query] == [
        (q.id, q.query, q.expected) for q in run.per_query
    ]
    assert back.aggregate == run.aggregate
    assert back.fingerprint == run.fingerprint
    assert back.corpus is not None and back.corpus.files == FILES
    assert back.gate is not None and back.gate.floors == (("mrr", 0.5),)
    assert encode_baseline(back) == encode_baseline(run)


def test_each_query_takes_a_question_line_an_answer_line_and_a_closing_one() -> None:
    text = encode_baseline(accepted_run(*five())).decode()
    lines = text.splitlines()
    questions = [i for i, line in enumerate(lines) if line.lstrip(" ,").startswith('[{"id": ')]
    assert len(questions) == 5
    assert all(lines[i + 1].startswith('      {"rank": ') for i in questions)
    assert all(lines[i + 2] == "     ]" for i in questions)


@given(st.lists(st.integers(0, 4), min_size=2, max_size=2, unique=True))
def test_two_branches_accepting_different_queries_merge_in_git(
    tmp_path_factory: pytest.TempPathFactory, moved: list[int]
) -> None:
    repo = tmp_path_factory.mktemp("repo")
    base = five()

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
            cwd=repo,
            capture_output=True,
            text=True,
        )

    target = repo / ".groove-baseline.json"
    git("init", "-q", "-b", "main")
    save_baseline(target, accepted_run(*base))
    git("add", "-A")
    git("commit", "-qm", "base")
    for branch, position in zip(("one", "two"), moved, strict=True):
        git("checkout", "-q", "-b", branch, "main")
        changed = list(base)
        changed[position] = query(f"q{position}", 0.0, 0.0, top=("c.md",))
        if branch == "one":  # a new golden query too, after the last one
            changed.append(query("q-new", top=("b.md",)))
        save_baseline(target, accepted_run(*changed))
        git("commit", "-qam", branch)
    git("checkout", "-q", "one")
    merged = git("merge", "-q", "two", "-m", "merge")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    both = decode_baseline(target.read_bytes(), target)
    assert {q.id for q in both.per_query if q.metrics.reciprocal_rank == 0.0} == {
        f"q{p}" for p in moved
    }
    assert [q.id for q in both.per_query][-1] == "q-new"


def test_a_damaged_or_conflicted_file_is_one_line_naming_it_and_the_fix(tmp_path: Path) -> None:
    target = tmp_path / ".groove-baseline.json"
    target.write_text('{\n<<<<<<< HEAD\n  "x": 1\n=======\n>>>>>>> b\n}\n')
    with pytest.raises(
        GrooveError, match=r"conflict markers: finish the merge.*groove baseline accept"
    ):
        load_baseline(target)
    target.write_text('{"groove_baseline": 99}')
    with pytest.raises(GrooveError, match="newer than this version reads"):
        load_baseline(target)
    target.write_text('{"groove_baseline": 1, "documents": {}, "queries": [[{}, {}]]}')
    with pytest.raises(GrooveError, match=r"\.groove-baseline\.json: .*queries\[0\]"):
        load_baseline(target)
    assert load_baseline(tmp_path / "absent.json") is None


def test_saving_unchanged_results_leaves_the_file_alone(tmp_path: Path) -> None:
    target = tmp_path / ".groove-baseline.json"
    assert save_baseline(target, accepted_run(*five())) is True
    assert save_baseline(target, accepted_run(*five())) is False


def test_golden_edits_are_listed_and_the_paired_queries_compared() -> None:
    accepted = accepted_run(*five())
    now = [*five()[:3], query("q3", text="reworded"), query("q9")]
    now[0] = query("q0", 0.0, 0.0, top=("c.md",))  # an answer rewritten away
    run = build_run(fingerprint(), now, accepted.corpus)
    changes = golden_changes(run, accepted)
    assert (changes.added, changes.removed, changes.edited, changes.paired) == (
        ("q9",),
        ("q4",),
        ("q3",),
        3,
    )
    comparison = compare_across(run, accepted, 0.05)
    assert comparison.compatible and comparison.across_changes
    assert comparison.diff is not None and comparison.diff.mrr == pytest.approx(-1 / 3)
    assert "recall@1" in comparison.regressions
    assert "the gate compares the 3 paired queries" in changes.describe()


def test_a_settings_change_is_compared_and_named() -> None:
    accepted = accepted_run(*five())
    fusion = {"rrf_k": 2.0, "bm25_heading_weight": 2.0}
    fused = fingerprint(
        model="hash", fusion={**fusion, "bm25_context_weight": 1.0, "bm25_content_weight": 1.0}
    )
    worse = [query(f"q{i}", 0.0, 0.5) for i in range(5)]
    run = build_run(fused, worse, accepted.corpus)
    comparison = compare_across(run, accepted, 0.05)
    assert comparison.settings_changes[0] == "model bge-m3 -> hash"
    assert comparison.settings_changes[1:] == ("[search.fusion] rrf_k 60 -> 2",)
    assert comparison.regressions  # the change under review is gated


def test_a_metric_only_one_side_measures_is_named_and_left_out() -> None:
    accepted = accepted_run(*five())
    at_20 = [query(f"q{i}", {1: 1.0, 5: 1.0, 20: 0.0}, k_values=(1, 5, 20)) for i in range(5)]
    run = build_run(fingerprint(k_values=(1, 5, 20)), at_20, accepted.corpus)
    comparison = compare_across(run, accepted, 0.05)
    assert comparison.left_out == (
        "recall@10 (only the accepted baseline)",
        "recall@20 (only this run)",
        "nDCG@10 (only the accepted baseline)",
        "nDCG@20 (only this run)",
    )
    assert comparison.regressions == ()  # recall@20 = 0 is not compared with nothing


def test_the_corpus_is_told_from_the_accepted_digests() -> None:
    accepted = decode_baseline(encode_baseline(accepted_run(*five())), Path("b.json"))
    files = (("a.md", "a" * 12), ("b.md", "e" * 12), ("d.md", "d" * 12))
    run = build_run(fingerprint(), five(), CorpusSnapshot(3, 9, "f" * 64, files=files))
    comparison = compare_across(run, accepted, 0.05)
    assert comparison.corpus_changed is True
    assert comparison.corpus_phrase == "3 -> 3 documents: 1 changed, 1 added, 1 removed"
