"""What a search returns, as people read it: labels and the document-grouping note."""

from __future__ import annotations

from pytest_groove.search.hits import GROUPED_BY_DOCUMENT, grouping_note, hit_label


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
