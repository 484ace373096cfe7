"""The trigram table's view of text, character by character, as FTS5 itself folds it.

The chunk table's full-text index (``fts_chunks``) uses FTS5's trigram tokenizer with
``remove_diacritics 1 case_sensitive 0``.  It folds each code point on its own (case,
then diacritics; some code points, combining marks among them, fold to nothing and
are skipped) and emits every three consecutive folded characters as a token.  So a
quoted phrase matches a row where its folded characters occur consecutively in the
folded text of one column, each overlapping occurrence is one instance, and a column
of ``n`` folded characters holds ``max(0, n - 2)`` tokens.

Nothing here re-implements the fold: :class:`FoldTable` (:data:`FOLD_EXACT`) asks the
tokenizer itself, through apsw, what each code point becomes (once per code point,
then remembered), so the fold is SQLite's own for whatever version is linked.
:data:`FOLD` is the same fold with every character whose fold is a separator (see
:func:`~pytest_groove.text.querytext.char_class`) written as a space, so
``text.translate(FOLD).split()`` cuts a column into the stretches no separator-free
phrase can cross (:mod:`pytest_groove.kb.derived.word_postings` counts phrases within them).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import apsw

from pytest_groove.text.querytext import CharClass, char_class

__all__ = [
    "FOLD",
    "FOLD_EXACT",
    "TRIGRAM_ARGS",
    "FoldTable",
    "WordFoldTable",
    "count_in",
    "count_overlapping",
    "fold_phrase",
    "fold_words",
]

#: the trigram tokenizer's arguments in ``fts_chunks``'s ``tokenize=`` (store_schema)
TRIGRAM_ARGS = ("remove_diacritics", "1", "case_sensitive", "0")
#: a folded phrase needs this many characters to be a trigram phrase at all
MIN_FOLDED_CHARS = 3


class FoldTable(dict[int, str | None]):
    """Code point -> its folded character, None when FTS5 drops it: the tokenizer's own
    fold, asked once per code point; a ``str.translate`` table filled on first use."""

    def __init__(self) -> None:
        super().__init__()
        connection = apsw.Connection(":memory:")
        self._tokenize = connection.fts5_tokenizer("trigram", list(TRIGRAM_ARGS))
        self._connection = connection  # the tokenizer lives as long as its connection

    def __missing__(self, code: int) -> str | None:
        folded = self._fold(code)
        self[code] = folded
        return folded

    def _fold(self, code: int) -> str | None:
        try:
            probe = ("aa" + chr(code)).encode("utf-8")
        except UnicodeEncodeError:
            return " "  # a lone surrogate: SQLite never stores one, so it only separates
        tokens = list(self._tokenize(probe, apsw.FTS5_TOKENIZE_DOCUMENT, None))
        if not tokens:
            return None  # folded to nothing: FTS5 skips it
        first: object = tokens[0]
        # (start, end, token) with offsets; the token alone without
        text = first[-1] if isinstance(first, tuple) else first
        return str(text)[-1]


class WordFoldTable(dict[int, str | None]):
    """The fold with every separator written as a space, so that
    ``text.translate(FOLD).split()`` gives the folded words (read from
    :data:`FOLD_EXACT`, so each code point is asked of the tokenizer once)."""

    def __missing__(self, code: int) -> str | None:
        char = FOLD_EXACT[code]
        folded = " " if char is not None and char_class(char) is CharClass.SEPARATOR else char
        self[code] = folded
        return folded


#: the fold alone, separators kept: the trigram table's own text
FOLD_EXACT = FoldTable()
#: the fold, separators as spaces: the text cut into words (ASCII costs 128 probes)
FOLD = WordFoldTable()


#: :data:`FOLD` on ASCII as a bytes table (NUL, which FTS5 skips, is deleted by
#: :func:`fold_words`); the bytes of UTF-8 sequences map to themselves
_ASCII_WORDS = bytes(ord(FOLD[code] or "\0") for code in range(128)) + bytes(range(128, 256))


def fold_words(text: str) -> str:
    """``text.translate(FOLD)``, about twice as fast (ASCII text is folded as bytes too).

    ``str.translate`` looks up each character of such a text in the table, one call at
    a time; here the ASCII ones are folded as bytes and each distinct other character
    that folds to something else is replaced throughout.  Every character folds on its
    own, so the order does not matter -- as long as what a character folds to folds to
    itself, which is checked (otherwise the table's own pass).
    """
    if text.isascii():  # a byte table: half the time of str.translate's dict look-ups
        return text.encode("ascii").translate(_ASCII_WORDS, b"\0").decode("latin-1")
    try:
        folded = text.encode("utf-8").translate(_ASCII_WORDS, b"\0").decode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return text.translate(FOLD)
    for char in {char for char in set(folded) if char > "\x7f"}:
        into = FOLD[ord(char)] or ""
        if into == char:
            continue
        if into and FOLD[ord(into)] != into:
            return text.translate(FOLD)
        folded = folded.replace(char, into)
    return folded


def count_overlapping(text: str, phrase: str) -> int:
    """Occurrences of ``phrase`` in ``text``, overlapping ones included (FTS5 counts
    an instance at every position a phrase starts)."""
    count, at = 0, text.find(phrase)
    while at >= 0:
        count += 1
        at = text.find(phrase, at + 1)
    return count


def count_in(text: str | None, folded_phrase: str) -> int:
    """Instances of a folded phrase in one column holding ``text``."""
    return count_overlapping(text.translate(FOLD_EXACT), folded_phrase) if text else 0


def fold_phrase(phrase: str) -> str | None:
    """A phrase's folded characters when they can be counted within words: at least
    three and no separator; None otherwise (SQLite answers such a phrase itself)."""
    folded = phrase.translate(FOLD)
    if len(folded) < MIN_FOLDED_CHARS or " " in folded:
        return None
    return folded
