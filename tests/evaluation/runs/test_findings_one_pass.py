"""The quote scan reads each field once for all queries and finds what a substring
test per query and field finds (fuzzed against that naive oracle)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.evaluation.runs.findings import (
    MIN_DISTINCT_QUERIES,
    MIN_QUERY_CODE_POINTS,
    normalise_text,
    scan_golden_quotes,
)
from pytest_groove.kb.source.records import ChunkText
from tests.helpers.eval_factories import query


def _naive_matches(texts: list[str], chunks: list[ChunkText]) -> dict[str, set[str]]:
    needles = {normalise_text(t) for t in texts if len(normalise_text(t)) >= MIN_QUERY_CODE_POINTS}
    found: dict[str, set[str]] = {}
    for chunk in chunks:
        for raw in (chunk.content, chunk.heading or "", chunk.context or ""):
            field = normalise_text(raw)
            for needle in needles:
                if needle in field:
                    found.setdefault(chunk.path, set()).add(needle)
    return found


_WORD = st.sampled_from(["alpha", "beta", "gamma", "delta", "über", "日本語", "x"])
_TEXT = st.lists(_WORD, min_size=1, max_size=8).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(
    queries=st.lists(_TEXT, min_size=1, max_size=6, unique=True),
    bodies=st.lists(st.tuples(st.sampled_from(["a.md", "b.md", "c.md"]), _TEXT), max_size=8),
)
def test_one_pass_scan_agrees_with_a_substring_test_per_query(
    queries: list[str], bodies: list[tuple[str, str]]
) -> None:
    results = [query(f"q{n}", text=text, expected=("answer.md",)) for n, text in enumerate(queries)]
    chunks = [ChunkText(path, n, None, None, body) for n, (path, body) in enumerate(bodies)]
    naive = _naive_matches(queries, chunks)
    reported = {finding.path for finding in scan_golden_quotes(results, chunks)}
    # the rule exactly: in a document, a quoted needle inside another quoted needle is
    # not counted; MIN_DISTINCT_QUERIES or more remaining needles report it (no result
    # expects a.md, b.md or c.md, so no needle is exempt)
    expected = set()
    for path, needles in naive.items():
        independent = [n for n in needles if not any(n != m and n in m for m in needles)]
        if len(independent) >= MIN_DISTINCT_QUERIES:
            expected.add(path)
    assert reported == expected
