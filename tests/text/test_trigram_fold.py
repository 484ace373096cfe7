"""The trigram table's fold: :func:`fold_words` is ``str.translate(FOLD)``, faster."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_groove.text.trigram_fold import FOLD, fold_words

#: characters whose folds differ: ASCII letters and controls, Latin with diacritics,
#: full-width forms, Japanese scripts and punctuation, combining marks, Greek, Cyrillic
_MIXED = st.text(
    alphabet=st.one_of(
        st.characters(max_codepoint=0x7F),
        st.sampled_from("ÀÉéÎüßÆøŒĲǅΣσςДжＡａＺ０。、「」・ー漢字かなカナ\u0301\u0308\u200b\ufeff"),
        st.characters(min_codepoint=0x80, max_codepoint=0x2FFF, exclude_categories=["Cs"]),
    ),
    max_size=60,
)


@given(_MIXED)
def test_fold_words_is_the_tables_own_translation(text: str) -> None:
    assert fold_words(text) == text.translate(FOLD)


def test_fold_words_on_the_shapes_a_note_has() -> None:
    shapes = ["", "plain ASCII, Words!", "NUL\0in", "デプロイ手順。Rollback ＡＢＣ", "Émile\u0301"]
    for text in shapes:
        assert fold_words(text) == text.translate(FOLD), text
    assert fold_words("Déploy、Café") == "deploy cafe"


def test_every_ascii_character_folds_as_the_table_folds_it() -> None:
    every = "".join(chr(code) for code in range(128))
    assert fold_words(every) == every.translate(FOLD)
    assert fold_words(every * 3 + " tail") == (every * 3 + " tail").translate(FOLD)
