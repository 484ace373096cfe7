"""``-term`` exclusion: find the excluded terms of a query and test chunks against them.

The reference search engine has no exclusion syntax; this is our design (DESIGN.md):

* Outside double quotes, a ``-`` that *starts* a whitespace-delimited token marks an
  exclusion when the next character is a word character other than ``-`` or a
  double quote.  ``rust -async`` excludes ``async``; ``-"two words"`` excludes the
  phrase ``two words``; ``-tokio::spawn`` excludes ``tokio::spawn`` (the term runs to
  the next whitespace).
* Everything else keeps its ordinary meaning: a ``-`` inside a token (``sqlite-vec``,
  ``k=-1``), a lone ``-``, ``--``/``---`` and ``--verbose`` are plain text, and so is
  any ``-`` inside a quoted phrase.  To search for a term that starts with ``-``,
  quote it: ``"-async"``.
* A ``-`` followed by an unclosed quote (``-"abc``) excludes the token without that
  stray quote, because the user evidently meant an exclusion.

The excluded tokens are cut out of the query; what remains (the *positive* part) is
what both legs search for.  Excluded terms then remove chunks from both legs: FTS5
gets a ``NOT`` clause and every candidate is post-filtered with :func:`is_excluded`.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from pytest_groove.text.plain import WHITE_SPACE, trim
from pytest_groove.text.querytext import CharClass, char_class, split_quotes


@dataclass(frozen=True)
class ExclusionSplit:
    """A query cut into what to search for and what to exclude."""

    #: the query with every exclusion token removed (unchanged when there is none)
    positive: str
    #: excluded terms without the ``-`` and quotes, first occurrence first, no repeats
    exclusions: tuple[str, ...]


@dataclass(frozen=True)
class _Token:
    start: int  # offset of the "-"
    end: int  # one past the token
    term: str


def _starts_exclusion(char: str) -> bool:
    # "-" is a word character too, but "--x" must stay plain so "---" compiles as text.
    return char == '"' or (char != "-" and char_class(char) is not CharClass.SEPARATOR)


def _find_tokens(text: str) -> list[_Token]:
    quoted = {seg.start: seg for seg in split_quotes(text) if seg.kind == "quoted"}
    tokens: list[_Token] = []
    length = len(text)
    pos = 0
    while pos < length:
        segment = quoted.get(pos)
        if segment is not None:  # never look inside a closed quoted phrase
            pos = segment.end
            continue
        at_token_start = pos == 0 or text[pos - 1] in WHITE_SPACE
        if text[pos] != "-" or not at_token_start or pos + 1 >= length:
            pos += 1
            continue
        if not _starts_exclusion(text[pos + 1]):
            pos += 1
            continue
        target = quoted.get(pos + 1)
        if target is not None:
            term, end = target.text, target.end
        else:
            # A word, or a stray unclosed quote followed by a word: the term runs to the
            # next whitespace or to the next closed quoted phrase, whichever comes first.
            begin = pos + 2 if text[pos + 1] == '"' else pos + 1
            end = begin
            while end < length and text[end] not in WHITE_SPACE and end not in quoted:
                end += 1
            term = text[begin:end]
        if trim(term):  # a blank term would exclude every chunk: not an exclusion
            tokens.append(_Token(pos, end, term))
            pos = end
        else:
            pos += 1
    return tokens


def split_exclusions(text: str) -> ExclusionSplit:
    """Separate the exclusion tokens of ``text`` from its positive part.

    Without exclusions the text is returned untouched, so such queries compile exactly
    like the reference.  With exclusions, the remaining pieces are trimmed where a
    token was cut out and joined by single spaces (a double space left behind would
    otherwise end up inside the verbatim fallback phrase).
    """
    tokens = _find_tokens(text)
    if not tokens:
        return ExclusionSplit(text, ())
    pieces: list[str] = []
    cursor = 0
    for token in tokens:
        pieces.append(text[cursor : token.start])
        cursor = token.end
    pieces.append(text[cursor:])
    positive = " ".join(piece for piece in (trim(p) for p in pieces) if piece)
    exclusions = tuple(dict.fromkeys(token.term for token in tokens))
    return ExclusionSplit(positive, exclusions)


#: Latin letters that may carry a diacritic (Latin-1 Supplement, Extended-A/B,
#: Extended Additional): the only ones the trigram tokenizer's remove_diacritics folds
_LATIN_WITH_MARKS = re.compile("[\u00c0-\u024f\u1e00-\u1eff]")


@lru_cache(maxsize=4096)
def _strip_latin_mark(char: str) -> str:
    decomposed = unicodedata.normalize("NFD", char)
    if decomposed[0].isascii() and all(unicodedata.combining(c) for c in decomposed[1:]):
        return decomposed[0]
    return char


def fold_for_matching(text: str) -> str:
    """Casefold, and strip diacritics from Latin letters, as the FTS tokenizer does.

    The full-text leg's ``NOT`` runs through ``remove_diacritics 1 case_sensitive 0``;
    the post-filter must agree with it, or ``-cafe`` would drop a "café" chunk from one
    leg and keep it in the other.  Only Latin letters lose their marks: Japanese voiced
    kana (バ vs ハ) and full-width forms stay distinct, exactly as in the index.
    """
    folded = text.casefold()
    if folded.isascii():
        return folded
    return _LATIN_WITH_MARKS.sub(lambda m: _strip_latin_mark(m.group()), folded)


def is_excluded(exclusions: tuple[str, ...], *fields: str | None) -> bool:
    """True when any excluded term occurs in any of ``fields``.

    The pipeline passes a chunk's heading, context and content and drops the chunk from
    both legs when this holds.  Matching is a plain substring test after
    :func:`fold_for_matching` (case and diacritics ignored), like the trigram index.
    """
    terms = [fold_for_matching(term) for term in exclusions if term]
    if not terms:
        return False
    for field in fields:
        if not field:
            continue
        folded = fold_for_matching(field)
        if any(term in folded for term in terms):
            return True
    return False
