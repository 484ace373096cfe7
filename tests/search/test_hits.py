"""What a search returns, as people read it: labels and the document-grouping note."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_groove.search.hits import GROUPED_BY_DOCUMENT, grouping_note, hit_label, hit_snippet


def test_the_grouping_note_only_where_grouped_scores_do_not_descend() -> None:
    assert grouping_note([0.0328, 0.0317, 0.0323], grouped=True) == GROUPED_BY_DOCUMENT
    # in rank order (ties too), or not grouped (a retriever's own order): nothing to explain
    assert grouping_note([0.0328, 0.0317, 0.0317], grouped=True) is None
    assert grouping_note([0.0328, 0.0317, 0.0323], grouped=False) is None
    assert grouping_note([], grouped=True) is None
    assert "\n" not in GROUPED_BY_DOCUMENT


def test_a_label_keeps_one_hit_to_a_line() -> None:
    assert hit_label("a.md", "Intro") == "a.md#Intro"
    assert hit_label("a.md", None) == "a.md"
    assert "\n" not in hit_label("a\nb.md", "x\ny")


@given(st.text(), st.integers(1, 300))
def test_a_snippet_is_one_printable_line_within_its_cap_whatever_the_note_holds(
    content: str, chars: int
) -> None:
    snippet = hit_snippet(content, chars)
    assert snippet.isprintable() and len(snippet) <= chars + len("...")
