"""The coverage numbers on a hand-made index, golden set and set of results."""

from __future__ import annotations

from pytest_groove.evaluation.runs.coverage import FolderCoverage, coverage_text, golden_coverage
from pytest_groove.evaluation.runs.record import QueryResult, evaluate_query
from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery, GoldenSet
from pytest_groove.search.hits import SearchHit

INDEXED: dict[str, list[str | None]] = {
    "README.md": [None],
    "ops/deploy.md": [None, "Canary", "Rollback", "canary "],
    "ops/oncall.md": ["Rotation"],
    "api/errors.md": ["Retries", "Limits"],
}


def _query(qid: str, *entries: ExpectedEntry) -> GoldenQuery:
    return GoldenQuery(id=qid, query=qid, expected=entries)


GOLDEN = GoldenSet(
    path="g.yml",
    hash="0" * 64,
    queries=(
        _query("a", ExpectedEntry("ops/deploy.md", "CANARY")),
        _query("b", ExpectedEntry("api/errors.md")),  # the document, no section
        _query(
            "c", ExpectedEntry("ops/oncall.md", "Rotation", grade=0), ExpectedEntry("README.md")
        ),
    ),
)


def _results(*rankings: list[str]) -> list[QueryResult]:
    return [
        evaluate_query(q, [SearchHit(r, p, None, 1.0) for r, p in enumerate(ranking, 1)], (1, 2))
        for q, ranking in zip(GOLDEN.queries, rankings, strict=True)
    ]


def test_documents_and_sections_expected_per_folder() -> None:
    results = _results(["README.md"], ["README.md"], ["README.md"])
    coverage = golden_coverage(GOLDEN, INDEXED, results, k=2)
    assert coverage.folders == (
        FolderCoverage(".", 1, 1, 0, 0),
        FolderCoverage("api", 1, 1, 2, 0),  # a heading-less entry expects no section
        FolderCoverage("ops", 2, 1, 3, 1),  # grade 0 expects nothing; `canary ` is Canary
    )
    assert coverage.total == FolderCoverage("", 4, 3, 5, 1)
    assert coverage.never_returned == ("api/errors.md", "ops/deploy.md", "ops/oncall.md")


def test_displacers_are_returned_unexpected_by_enough_queries_within_k() -> None:
    results = _results(
        ["README.md", "ops/deploy.md"],
        ["README.md", "api/errors.md", "ops/oncall.md"],
        ["README.md", "ops/oncall.md"],
    )
    coverage = golden_coverage(GOLDEN, INDEXED, results, k=2)
    # README: unexpected by a and b (c expects it); oncall only once within k 2
    assert [(d.path, d.queries) for d in coverage.displacers] == [("README.md", 2)]
    assert coverage.never_returned == ()
    text = coverage_text(coverage)
    assert "documents expected: 3/4 (75%)" in text and "README.md  (2 queries)" in text
