"""Run-level checks of a custom retriever's hits: paths outside the KB, shallow depth."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_groove.search.retrievers.hit_checks import (
    HitCheckReport,
    check_retriever_hits,
    hits_outside_kb,
    kb_file_set,
    shallow_retriever,
)
from pytest_groove.settings.config import IndexSettings

KB_FILES = frozenset({"guide/setup.md", "guide/faq.md", "ops/deploy.md"})


def test_paths_relative_to_the_working_directory_are_one_error_with_the_fix() -> None:
    hits = [["kb/guide/setup.md", "kb/ops/deploy.md"], ["kb/guide/faq.md"]]
    message = hits_outside_kb("lc", hits, KB_FILES, Path("kb"))
    assert message is not None and "\n" not in message
    assert message.startswith(
        "retriever lc: none of its 3 hits name a file of the knowledge base kb "
        "(e.g. 'kb/guide/setup.md'), so no golden entry can match; the paths look "
        "relative to the working directory"
    )
    assert "KB-relative path ('guide/setup.md')" in message


def test_most_hits_outside_is_an_error_and_a_few_are_not() -> None:
    mostly = [["x/guide/setup.md", "x/ops/deploy.md", "guide/faq.md"]]
    message = hits_outside_kb("r", mostly, KB_FILES, Path("/srv/kb"))
    assert message is not None and "only 1 of its 3 hits" in message
    assert "to start with x/" in message
    few = [["guide/setup.md", "stale/removed.md"], ["ops/deploy.md"]]
    assert hits_outside_kb("r", few, KB_FILES, Path("kb")) is None
    assert hits_outside_kb("r", [[], []], KB_FILES, Path("kb")) is None  # no hits: not this


@pytest.mark.parametrize(
    ("path", "fix"),
    [
        ("Guide/Setup.md", "the KB has 'guide/setup.md': paths are compared byte for byte"),
        ("docs/setup.md", "the KB has 'guide/setup.md': return paths relative to the KB"),
        ("elsewhere.md", "no KB file has that name: is the retriever built over another folder"),
    ],
)
def test_the_likely_fix_follows_the_sample_path(path: str, fix: str) -> None:
    message = hits_outside_kb("r", [[path]], KB_FILES, Path("kb"))
    assert message is not None and fix in message


@pytest.mark.parametrize(
    ("kind", "advice"),
    [
        ("langchain", "as_retriever(search_kwargs={'k': 10}), or set BM25Retriever's k = 10"),
        ("llamaindex", "index.as_retriever(similarity_top_k=10)"),
        ("callable", "it is asked for limit=10 hits: return up to that many"),
        ("http", "it is asked for limit=10 hits"),
    ],
)
def test_a_shallow_retriever_is_one_warning_with_the_knob(kind: str, advice: str) -> None:
    message = shallow_retriever("r", kind, [4, 4, 4, 10], 10)  # type: ignore[arg-type]
    assert message is not None and "\n" not in message
    assert message.startswith(
        "retriever r returned fewer than 10 hits for 3 of 4 queries (at most 4), and "
        "recall@10 counts the missing ones as misses"
    )
    assert advice in message


def test_deep_enough_or_a_small_kb_is_not_shallow() -> None:
    assert shallow_retriever("r", "langchain", [10, 10, 3], 10) is None  # a minority
    assert shallow_retriever("r", "langchain", [3, 3, 3], 10, kb_files=3) is None  # all files
    assert shallow_retriever("r", "langchain", [2, 2, 2], 10, kb_files=3) is not None
    assert shallow_retriever("r", "langchain", [], 10) is None


def test_check_retriever_hits_runs_every_check_over_a_run(tmp_path: Path) -> None:
    def check(paths: list[list[str]]) -> HitCheckReport:
        return check_retriever_hits("r", "callable", tmp_path, paths, KB_FILES, 5)

    report = check([["a/guide/faq.md"], []])
    assert report.error is not None and "'a/guide/faq.md'" in report.error
    assert len(report.warnings) == 1 and "it is asked for limit=5" in report.warnings[0]
    empty = check([[], []])
    assert empty.error is not None and "returned no hit for any of the 2 golden queries" in (
        empty.error
    )
    # under the error: a share of the queries with a hit outside the KB is a warning
    some = check([["guide/faq.md"] * 4 + ["elsewhere.md"], ["guide/faq.md"] * 5])
    assert some.error is None and len(some.warnings) == 1
    assert "1 of its 10 hits, in 1 of 2 queries" in some.warnings[0]
    fine = check([["guide/faq.md"] * 5] * 2)
    assert fine.error is None and fine.warnings == ()


def test_kb_file_set_lists_what_the_index_would(tmp_path: Path) -> None:
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "a.md").write_text("## A\n\ntext\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not markdown", encoding="utf-8")
    (tmp_path / ".groove").mkdir()
    assert kb_file_set(tmp_path, IndexSettings()) == {"guide/a.md"}
