"""``not_expected`` and ``within``: which constraints a ranking breaks, and how each reads."""

from __future__ import annotations

from pytest_groove.scoring.constraints import Violation, violations
from pytest_groove.scoring.records import ExpectedEntry
from pytest_groove.search.hits import SearchHit


def hits(*labels: str) -> list[SearchHit]:
    out = []
    for rank, label in enumerate(labels, start=1):
        path, _, heading = label.partition("#")
        out.append(SearchHit(path=path, heading=heading or None, rank=rank, score=1.0 / rank))
    return out


A, B, OLD = ExpectedEntry("a.md"), ExpectedEntry("b.md"), ExpectedEntry("old.md")


def test_a_not_expected_document_in_the_top_k_is_named_with_its_first_rank() -> None:
    found = violations([A], [OLD], None, hits("a.md", "old.md#X", "old.md"), k=10)
    assert found == (Violation("not_expected", 2, entry=OLD),)
    assert found[0].text(10) == "not expected `old.md` at rank 2 in the top 10"


def test_only_the_deepest_k_counts_and_a_heading_narrows_the_entry() -> None:
    assert violations([A], [OLD], None, hits("a.md", "b.md", "old.md"), k=2) == ()
    section = ExpectedEntry("old.md", "Draft")
    assert violations([A], [section], None, hits("a.md", "old.md#Final"), k=10) == ()
    (found,) = violations([A], [section], None, hits("a.md", "old.md# draft "), k=10)
    assert found.text(10) == "not expected `old.md # Draft` at rank 2 in the top 10"


def test_within_fails_when_the_first_expected_hit_ranks_lower() -> None:
    assert violations([A, B], [], 1, hits("a.md", "b.md"), k=10) == ()
    (found,) = violations([A, B], [], 1, hits("x.md", "b.md", "a.md"), k=10)
    assert found == Violation("within", 2, within=1)
    assert found.text(10) == "first expected hit at rank 2, within 1"
    assert violations([A], [], 2, hits("x.md", "a.md"), k=10) == ()


def test_a_miss_is_no_within_failure() -> None:
    assert violations([A], [], 1, hits("x.md", "y.md", "a.md"), k=2) == ()


def test_a_grade_zero_entry_does_not_answer_within() -> None:
    judged_not = ExpectedEntry("z.md", grade=0)
    (found,) = violations([judged_not, A], [], 1, hits("z.md", "a.md"), k=10)
    assert found.rank == 2
