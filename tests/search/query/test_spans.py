"""Match spans (spec-search §12.1): byte offsets of query terms in hit content."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_groove.search.query.spans import MAX_CONTENT_BYTES, match_spans

# §12.1 examples: (query, content, spans)
SPEC_EXAMPLES: list[tuple[str, str, list[tuple[int, int]] | None]] = [
    ("tokio spawn", "use tokio::spawn for async", [(4, 9), (11, 16)]),
    ('"Foundry Local"', "Run Foundry Local today", [(4, 17)]),
    ("Rust", "RUST is rusty", [(0, 4), (8, 12)]),
    ("rust 日本語", "rust and 日本語", None),
    ('"Foundry Local" Foundry', "Foundry Local runs the Foundry stack", [(0, 13), (23, 30)]),
    ("index indexing", "indexing rebuilds the index", [(0, 8), (22, 27)]),
    ("groove-svc svc-server", "see groove-svc-server here", [(4, 21)]),
    ("abc abcd abcde", "abcde", [(0, 5)]),
    ("a ab", "ab", [(0, 2)]),
]


@pytest.mark.parametrize(
    ("query", "content", "spans"), SPEC_EXAMPLES, ids=[case[0] for case in SPEC_EXAMPLES]
)
def test_spec_examples(query: str, content: str, spans: list[tuple[int, int]] | None) -> None:
    assert match_spans(query, content) == spans


def test_one_term_gets_the_whole_budget_of_one_hundred() -> None:
    spans = match_spans("a", "a" * 500)
    assert spans == [(i, i + 1) for i in range(100)]  # touching spans are not merged


@pytest.mark.parametrize("query", ["", "   ", "\u3000\t"])
def test_empty_query_gives_no_spans(query: str) -> None:
    assert match_spans(query, "anything") is None


def test_no_match_is_an_empty_list() -> None:
    assert match_spans("zebrafish", "nothing to see") == []


def test_separators_are_removed_before_the_ascii_check() -> None:
    assert match_spans("rust、tokio", "tokio and rust") == [(0, 5), (10, 14)]


def test_offsets_are_utf8_bytes() -> None:
    content = "日本語 rust"
    spans = match_spans("rust", content)
    assert spans == [(10, 14)]
    start, end = spans[0]
    assert content.encode()[start:end] == b"rust"


def test_oversized_content_gives_no_spans() -> None:
    assert match_spans("rust", "rust " + "x" * (MAX_CONTENT_BYTES - 5)) == [(0, 4)]
    assert match_spans("rust", "rust " + "x" * (MAX_CONTENT_BYTES - 4)) is None
    # the cap counts bytes, not characters
    assert match_spans("rust", "rust" + "é" * (MAX_CONTENT_BYTES // 2)) is None


def test_budget_is_shared_between_terms() -> None:
    spans = match_spans("aaa bbb", "aaa bbb " * 80)
    assert spans is not None
    assert len(spans) == 100  # 50 per term
    assert sum(1 for start, _ in spans if start % 8 == 0) == 50


def test_phrase_terms_are_capped_at_thirty_two() -> None:
    words = [f"w{i:03d}" for i in range(150)]
    spans = match_spans(" ".join(words), " ".join(words))
    assert spans == [(5 * i, 5 * i + 4) for i in range(32)]


def test_whitespace_terms_are_capped_at_one_hundred() -> None:
    # Two-letter words yield no phrase, so the terms are the whitespace-split words.
    words = [a + b for a in "abcdefghijklm" for b in "abcdefghijklm"][:150]
    spans = match_spans(" ".join(words), " ".join(words))
    assert spans == [(3 * i, 3 * i + 2) for i in range(100)]  # budget 1 each


def test_overlapping_occurrences_merge() -> None:
    assert match_spans("abcd bcde", "xabcdex") == [(1, 6)]
    assert match_spans("aaa", "aaaaaaa") == [(0, 3), (3, 6)]


def test_excluded_terms_are_not_highlighted() -> None:
    assert match_spans("rust -async", "rust async runtime") == [(0, 4)]
    assert match_spans('rust -"two words"', "two words about rust") == [(16, 20)]


def test_exclusion_only_query_gives_no_spans_instead_of_raising() -> None:
    assert match_spans("-async", "async") is None


def test_non_ascii_term_in_positive_part_only_matters() -> None:
    # The excluded term is Japanese, the positive part is ASCII: spans are computed.
    assert match_spans("rust -日本語", "rust") == [(0, 4)]


@given(st.text(max_size=30), st.text(max_size=200))
def test_property_spans_are_sorted_disjoint_and_bounded(query: str, content: str) -> None:
    spans = match_spans(query, content)
    if spans is None:
        return
    data = content.encode("utf-8", "surrogatepass")
    assert len(spans) <= 100
    previous_end = -1
    for start, end in spans:
        assert previous_end <= start < end <= len(data)
        assert data[start:end].isascii()
        previous_end = end
