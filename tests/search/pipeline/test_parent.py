"""Parent retriever (display-only content expansion)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.search.hits import SearchHit
from pytest_groove.search.pipeline.parent import (
    Expansion,
    ParentChunk,
    apply_expansion,
    estimated_tokens,
    expand_parent,
    is_small,
    whole_document_row_cap,
)
from pytest_groove.settings.config import ParentRetrieverSettings

ON = ParentRetrieverSettings(enabled=True)  # threshold 100, cap 2000


@dataclass
class FakeStore:
    """In-memory stand-in for the chunk table, honouring the SQL contracts."""

    chunks: list[ParentChunk]
    calls: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)

    def document_chunks(self, document_id: int, row_cap: int) -> list[ParentChunk]:
        self.calls.append(("document", (document_id, row_cap)))
        rows = sorted(
            (c for c in self.chunks if c.document_id == document_id), key=lambda c: c.chunk_index
        )
        return rows[:row_cap]

    def adjacent(self, document_id: int, first: int, last: int) -> list[ParentChunk]:
        self.calls.append(("adjacent", (document_id, first, last)))
        rows = [
            c
            for c in self.chunks
            if c.document_id == document_id and first <= c.chunk_index <= last
        ]
        return rows[:16]

    def expand(self, hit: ParentChunk, settings: ParentRetrieverSettings = ON) -> Expansion | None:
        return expand_parent(hit, self.document_chunks, self.adjacent, settings)


def doc(*contents: str, tokens: int | None = 150, document_id: int = 1) -> list[ParentChunk]:
    return [ParentChunk(document_id, i, text, tokens) for i, text in enumerate(contents)]


# --------------------------------------------------------------------------- adjacent


def test_long_hit_in_the_middle_merges_both_neighbours() -> None:
    chunks = doc("alpha", "bravo", "charlie", "delta")
    store = FakeStore(chunks)
    expansion = store.expand(chunks[1])
    assert expansion == Expansion(
        "alpha\n\nbravo\n\ncharlie", {"kind": "adjacent", "from_index": 0, "to_index": 2}
    )
    assert ("document", (1, whole_document_row_cap(ON))) not in store.calls


def test_hit_at_index_zero_has_no_left_neighbour() -> None:
    chunks = doc("alpha", "bravo", "charlie")
    expansion = FakeStore(chunks).expand(chunks[0])
    assert expansion is not None
    assert expansion.content == "alpha\n\nbravo"
    assert expansion.expanded_from == {"kind": "adjacent", "from_index": 0, "to_index": 1}


def test_last_chunk_has_no_right_neighbour() -> None:
    chunks = doc("alpha", "bravo", "charlie")
    expansion = FakeStore(chunks).expand(chunks[2])
    assert expansion is not None
    assert expansion.expanded_from == {"kind": "adjacent", "from_index": 1, "to_index": 2}


def test_other_documents_are_never_merged() -> None:
    chunks = doc("alpha", "bravo") + doc("other", tokens=150, document_id=2)
    expansion = FakeStore(chunks).expand(chunks[1])
    assert expansion is not None and "other" not in expansion.content


def test_low_quality_neighbours_are_included() -> None:
    chunks = [
        ParentChunk(1, 0, "junk-left", 150, quality=0.05),
        ParentChunk(1, 1, "the hit", 150, quality=0.9),
        ParentChunk(1, 2, "junk-right", 150, quality=0.05),
    ]
    expansion = FakeStore(chunks).expand(chunks[1])
    assert expansion is not None
    assert expansion.content == "junk-left\n\nthe hit\n\njunk-right"


def test_heading_level_is_ignored() -> None:
    chunks = [
        ParentChunk(1, 0, "top", 150, level=2),
        ParentChunk(1, 1, "no heading level", 150, level=None),
        ParentChunk(1, 2, "deeper", 150, level=3),
    ]
    expansion = FakeStore(chunks).expand(chunks[1])
    assert expansion is not None
    assert expansion.expanded_from == {"kind": "adjacent", "from_index": 0, "to_index": 2}


def test_cjk_and_emoji_merge_without_boundary_errors() -> None:
    chunks = doc("日本語の説明です。", "🦀 Rust と 🐍 Python", "最後の段落 👍🏽")
    expansion = FakeStore(chunks).expand(chunks[1])
    assert expansion is not None
    assert expansion.content == "日本語の説明です。\n\n🦀 Rust と 🐍 Python\n\n最後の段落 👍🏽"
    expansion.content.encode("utf-8")  # valid text throughout


def test_neighbours_over_the_cap_keep_only_the_hit() -> None:
    chunks = doc("A" * 20_000, "B" * 20_000, "C" * 20_000, tokens=5000)
    expansion = FakeStore(chunks).expand(chunks[1])
    assert expansion == Expansion(
        "B" * 20_000, {"kind": "adjacent", "from_index": 1, "to_index": 1}
    )


def test_null_token_count_cannot_bypass_the_cap() -> None:
    huge = "x" * 40_000  # 10,000 estimated tokens
    chunks = doc("left", huge, "right", tokens=None)
    expansion = FakeStore(chunks).expand(chunks[1])
    assert expansion == Expansion(huge, {"kind": "adjacent", "from_index": 1, "to_index": 1})


def test_cap_exceeded_with_the_hit_row_missing_keeps_the_hit_content() -> None:
    hit = ParentChunk(1, 1, "what the hit showed", 150)
    store = FakeStore(  # the hit's own row vanished (a gap); its neighbours are huge
        [ParentChunk(1, 0, "L" * 10, 1500), ParentChunk(1, 2, "R" * 10, 1500)]
    )
    expansion = store.expand(hit)
    assert expansion == Expansion(
        "what the hit showed", {"kind": "adjacent", "from_index": 1, "to_index": 1}
    )
    shown = SearchHit(
        rank=1,
        path="a.md",
        heading="H",
        score=0.5,
        content="what the hit showed",
        match_spans=[(0, 4)],
    )
    after = apply_expansion(shown, expansion)
    assert after.content == "what the hit showed"
    assert after.expanded_from == {"kind": "adjacent", "from_index": 1, "to_index": 1}
    assert after.match_spans is None


def test_no_rows_leaves_the_hit_unchanged() -> None:
    assert FakeStore([]).expand(ParentChunk(1, 3, "orphan", 500)) is None
    assert FakeStore([]).expand(ParentChunk(1, 3, "orphan small", 5)) is None


def test_cap_is_inclusive() -> None:
    exact = [ParentChunk(1, i, "y" * 400, None) for i in range(3)]  # 3 x 100 estimated tokens
    at_cap = ParentRetrieverSettings(True, whole_doc_threshold_tokens=10, max_expanded_tokens=300)
    expansion = FakeStore(exact).expand(exact[1], at_cap)
    assert expansion is not None
    assert expansion.expanded_from == {"kind": "adjacent", "from_index": 0, "to_index": 2}
    below = ParentRetrieverSettings(True, whole_doc_threshold_tokens=10, max_expanded_tokens=299)
    capped = FakeStore(exact).expand(exact[1], below)
    assert capped is not None
    assert capped.expanded_from == {"kind": "adjacent", "from_index": 1, "to_index": 1}


# --------------------------------------------------------------------------- whole document


def test_small_hit_returns_the_whole_document() -> None:
    chunks = [
        ParentChunk(1, 0, "intro", 150),
        ParentChunk(1, 1, "tiny", 1),
        ParentChunk(1, 2, "outro", 150),
    ]
    expansion = FakeStore(chunks).expand(chunks[1])
    assert expansion == Expansion(
        "intro\n\ntiny\n\noutro", {"kind": "whole_document", "total_chunks": 3}
    )


def test_single_chunk_document_is_still_a_whole_document_expansion() -> None:
    only = ParentChunk(1, 0, "just me", 3)
    assert FakeStore([only]).expand(only) == Expansion(
        "just me", {"kind": "whole_document", "total_chunks": 1}
    )


def test_whole_document_over_the_cap_falls_back_to_adjacent() -> None:
    chunks = [ParentChunk(1, i, f"part {i}", 5 if i == 2 else 600) for i in range(5)]
    expansion = FakeStore(chunks).expand(chunks[2])
    assert expansion is not None
    assert expansion.expanded_from == {"kind": "adjacent", "from_index": 1, "to_index": 3}
    assert expansion.content == "part 1\n\npart 2\n\npart 3"


def test_whole_document_with_too_many_rows_falls_back_to_adjacent() -> None:
    settings = ParentRetrieverSettings(True, whole_doc_threshold_tokens=10, max_expanded_tokens=20)
    row_cap = whole_document_row_cap(settings)
    assert row_cap == 104
    # tokens would fit (0 each, empty content) but the row count alone disqualifies
    chunks = [ParentChunk(1, i, "", 0) for i in range(row_cap)]
    store = FakeStore(chunks)
    expansion = store.expand(chunks[50], settings)
    assert expansion is not None and expansion.expanded_from["kind"] == "adjacent"
    assert store.calls[0] == ("document", (1, row_cap))
    # one row fewer than the cap is still read as a whole document
    fewer = FakeStore(chunks[:-1]).expand(chunks[50], settings)
    assert fewer is not None and fewer.expanded_from == {
        "kind": "whole_document",
        "total_chunks": row_cap - 1,
    }


def test_whole_document_output_is_in_chunk_order() -> None:
    chunks = [ParentChunk(1, 2, "c", 1), ParentChunk(1, 0, "a", 1), ParentChunk(1, 1, "b", 1)]
    expansion = FakeStore(chunks).expand(chunks[0])
    assert expansion is not None and expansion.content == "a\n\nb\n\nc"


def test_threshold_is_strict() -> None:
    chunks = doc("left", "hit", "right", tokens=100)
    expansion = FakeStore(chunks).expand(chunks[1])  # 100 is not < 100
    assert expansion is not None and expansion.expanded_from["kind"] == "adjacent"


# --------------------------------------------------------------------------- switch, errors


def test_disabled_passes_everything_through() -> None:
    chunks = doc("alpha", "bravo", "charlie")
    store = FakeStore(chunks)
    assert store.expand(chunks[1], ParentRetrieverSettings(enabled=False)) is None
    assert store.calls == []
    hit = SearchHit(
        rank=1,
        path="a.md",
        heading=None,
        score=0.1,
        content="bravo",
        expanded_from=None,
        match_spans=[(0, 5)],
    )
    assert apply_expansion(hit, None) is hit
    assert hit.match_spans == [(0, 5)] and hit.content == "bravo"


def test_apply_expansion_keeps_rank_score_and_labels() -> None:
    hit = SearchHit(rank=3, path="p.md", heading="H", score=0.25, content="x", title="T")
    after = apply_expansion(
        hit, Expansion("x\n\ny", {"kind": "adjacent", "from_index": 0, "to_index": 1})
    )
    assert (after.rank, after.path, after.heading, after.score, after.title) == (
        3,
        "p.md",
        "H",
        0.25,
        "T",
    )
    assert after.content == "x\n\ny"
    assert hit.content == "x"  # the original is not mutated


class DbError(Exception):
    pass


def test_tolerated_read_error_keeps_the_hit() -> None:
    def broken(*_: int) -> list[ParentChunk]:
        raise DbError("disk I/O error")

    hit = ParentChunk(1, 0, "x", 5)
    assert expand_parent(hit, broken, broken, ON, tolerate=(DbError,)) is None
    with pytest.raises(DbError):
        expand_parent(hit, broken, broken, ON)


# --------------------------------------------------------------------------- helpers, properties


def test_estimated_tokens() -> None:
    assert estimated_tokens(ParentChunk(1, 0, "abcdefgh", 7)) == 7
    assert estimated_tokens(ParentChunk(1, 0, "abcdefgh", None)) == 2
    assert estimated_tokens(ParentChunk(1, 0, "abcdefgh", 0)) == 2
    assert estimated_tokens(ParentChunk(1, 0, "日本", None)) == 1  # 6 bytes // 4


@settings(deadline=None)  # no per-example deadline: CI machines are busy
@given(token_count=st.none() | st.integers(0, 10_000), threshold=st.integers(0, 8192))
def test_property_small_iff_strictly_below_threshold(
    token_count: int | None, threshold: int
) -> None:
    expected = token_count is not None and token_count < threshold
    assert is_small(token_count, threshold) is expected


@settings(deadline=None)
@given(
    tokens=st.lists(st.none() | st.integers(0, 1500), min_size=1, max_size=8),
    pick=st.integers(0, 7),
)
def test_property_expansion_respects_the_cap_and_contains_the_hit(
    tokens: list[int | None], pick: int
) -> None:
    chunks = [ParentChunk(1, i, f"<chunk {i}>", t) for i, t in enumerate(tokens)]
    hit = chunks[pick % len(chunks)]
    expansion = FakeStore(chunks).expand(hit)
    assert expansion is not None
    assert hit.content in expansion.content
    if expansion.expanded_from["kind"] == "whole_document":
        assert is_small(hit.token_count, ON.whole_doc_threshold_tokens)
        assert sum(estimated_tokens(c) for c in chunks) <= ON.max_expanded_tokens
    else:
        lo, hi = expansion.expanded_from["from_index"], expansion.expanded_from["to_index"]
        assert lo <= hit.chunk_index <= hi and hi - lo <= 2
        merged = [c for c in chunks if lo <= c.chunk_index <= hi]
        assert lo == hi or sum(estimated_tokens(c) for c in merged) <= ON.max_expanded_tokens
