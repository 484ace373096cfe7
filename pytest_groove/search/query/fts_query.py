"""Compile a search query into an FTS5 ``MATCH`` expression (spec-search §4 + exclusion).

The index uses the trigram tokenizer, so a phrase matches as a case-insensitive
substring of one column and a phrase shorter than three characters matches nothing.
The compiler therefore cuts the query into pieces of at least three characters that
are each likely to occur verbatim in a chunk, and ORs them:

1. quote segmentation (:func:`~pytest_groove.text.querytext.split_quotes`): a closed
   ``"..."`` region is one phrase as typed;
2. plain text is cut at separator characters into *groups*;
3. each group is cut into *runs* of one script class (kanji, hiragana, katakana,
   other word characters), so ``再ランキングの評価`` yields units a Japanese reader
   would recognise even though nothing separates them;
4. short runs are glued to their neighbours until they reach three characters
   (:func:`_emit_group`);
5. duplicates are dropped, then at most :data:`MAX_PHRASES` are kept;
6. the phrases are quoted and joined with ``OR``; when none survives, the whole
   trimmed query becomes one phrase, or the FTS leg is skipped if even that is too
   short.

On top of that, ``-term`` exclusion (see :mod:`pytest_groove.search.query.exclusion`) turns
``rust -async`` into ``("rust") NOT ("async")``.  A query without exclusions compiles
byte for byte like the reference implementation.  That is compiler version 3
(:func:`build_fts_query`), run against the trigram table ``fts_chunks``.

Version 4 (:func:`build_terms_query`) targets the second table ``fts_terms``
(:mod:`pytest_groove.text.terms`: words, and Japanese text as character bigrams).
It sends *content words* only: English words outside a short stop list, and the
bigrams of every kanji and katakana run (a one-character run as itself), so
``牛乳はいつ発注すればいいですか`` becomes ``"牛乳" OR "発注"`` instead of the
function-word phrases ``"はいつ" OR "すればいいですか"`` that version 3 sends and
that never name the subject.  Hiragana runs are grammar (particles, endings) and
are dropped.  A quoted region stays one phrase (of its tokens).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from pytest_groove.errors import GrooveError, clip_repr
from pytest_groove.search.query.exclusion import is_excluded, split_exclusions
from pytest_groove.text.plain import trim
from pytest_groove.text.querytext import (
    CharClass,
    char_class,
    class_code,
    class_codes,
    fts_sendable,
    split_quotes,
)
from pytest_groove.text.terms import bigrams, script_runs

__all__ = [
    "FTS_QUERY_VERSION",
    "FTS_QUERY_VERSIONS",
    "MAX_PHRASES",
    "MAX_QUERY_CHARS",
    "MIN_PHRASE_CHARS",
    "ParsedQuery",
    "build_fts_query",
    "build_terms_query",
    "is_excluded",
    "leg_terms",
    "parse_query",
    "query_phrases",
]

#: Bumped whenever the MATCH text produced for some query changes; it is part of the eval
#: fingerprint (1 → 2: per-token phrases; 2 → 3: ``-term`` exclusion).
FTS_QUERY_VERSION = 3
#: the compiler for the ``fts_terms`` table (content words, CJK bigrams)
TERMS_QUERY_VERSION = 4
#: every selectable compiler version and the table its expressions are run against
FTS_QUERY_VERSIONS = {FTS_QUERY_VERSION: "fts_chunks", TERMS_QUERY_VERSION: "fts_terms"}

#: English function words the version-4 compiler leaves out (the stop list of
#: Lucene's English analyzer); everything else is left to bm25's term weights
_STOP_WORD_TEXT = (
    "a an and are as at be but by for if in into is it no not of on or such that the "
    "their then there these they this to was will with"
)
STOP_WORDS = frozenset(_STOP_WORD_TEXT.split())

#: shortest phrase the trigram tokenizer can match
MIN_PHRASE_CHARS = 3
#: longest query accepted, in characters (code points).  The default embedder reads
#: every token of a query, long texts in 512-token windows, so cost grows with
#: length (a 1 MiB golden query took minutes).  One window holds about 2,000
#: characters of English: far past any question a person asks, and one pass of the
#: model at most.
MAX_QUERY_CHARS = 2000
#: most phrases sent to FTS5 in one MATCH (per side: positive phrases, excluded terms)
MAX_PHRASES = 32

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ParsedQuery:
    """A query split for the two retrieval legs."""

    #: the query without its exclusion tokens: what the vector leg embeds
    positive: str
    #: excluded terms (no ``-``, no quotes), used to post-filter both legs
    exclusions: tuple[str, ...]
    #: the FTS5 MATCH expression, or None to skip the FTS leg (vector only)
    fts: str | None
    #: the full-text table ``fts`` is meant for
    fts_table: str = "fts_chunks"


#: a stretch of characters that are not separators, in the class-code string
_GROUP = re.compile(f"[^{class_code(CharClass.SEPARATOR)}]+")
#: a stretch of one class letter repeated, in the class-code string
_RUN = re.compile(r"(.)\1*", re.DOTALL)


def _groups(text: str) -> list[str]:
    """Stage 2: maximal non-empty stretches between separator characters."""
    return [text[m.start() : m.end()] for m in _GROUP.finditer(class_codes(text))]


def _runs(group: str) -> list[str]:
    """Stage 3: maximal stretches of one character class within a group."""
    return [group[m.start() : m.end()] for m in _RUN.finditer(class_codes(group))]


def _emit_group(runs: list[str]) -> list[str]:
    """Stage 4: turn one group's runs into phrases of at least three characters.

    A long run stands alone.  Short runs are concatenated with the following runs
    until the total reaches three; if the last run taken was long by itself it is
    also emitted alone, so ``の再ランキング`` can still match plain ``ランキング``.
    A short tail that never reaches three is glued onto the previous unit instead,
    keeping that unit's old phrase as well.  A group with no unit yields nothing.
    """
    out: list[str] = []
    # (index in ``out`` of the latest unit's phrase, index of that unit's first run)
    last_unit: tuple[int, int] | None = None
    count = len(runs)
    i = 0
    while i < count:
        if len(runs[i]) >= MIN_PHRASE_CHARS:
            out.append(runs[i])
            last_unit = (len(out) - 1, i)
            i += 1
            continue
        taken = 0
        j = i
        while j < count and taken < MIN_PHRASE_CHARS:
            taken += len(runs[j])
            j += 1
        if taken >= MIN_PHRASE_CHARS:
            position = len(out)
            out.append("".join(runs[i:j]))
            if j - i > 1 and len(runs[j - 1]) >= MIN_PHRASE_CHARS:
                out.append(runs[j - 1])
            last_unit = (position, i)
            i = j
            continue
        if last_unit is not None:
            position, first_run = last_unit
            previous_phrase = out[position]
            out[position] = "".join(runs[first_run:])
            out.insert(position + 1, previous_phrase)
        break
    return out


def _phrases_and_overflow(text: str) -> tuple[list[str], int]:
    """Stages 1-5: the distinct phrases kept, and how many distinct ones the cap cut."""
    candidates: list[str] = []
    for segment in split_quotes(text):
        if segment.kind == "quoted":
            # A short quote can never match; NUL or a lone surrogate cannot be sent.
            if len(segment.text) >= MIN_PHRASE_CHARS and fts_sendable(segment.text):
                candidates.append(segment.text)
        else:
            for group in _groups(segment.text):
                candidates.extend(_emit_group(_runs(group)))
    return _dedupe_and_cap(candidates)


def _dedupe_and_cap(candidates: list[str]) -> tuple[list[str], int]:
    """Stage 5: first occurrences only, then the cap, so repeats never use a slot."""
    distinct = list(dict.fromkeys(candidates))
    return distinct[:MAX_PHRASES], max(0, len(distinct) - MAX_PHRASES)


def query_phrases(text: str) -> list[str]:
    """The phrases ``text`` compiles to (stages 1-5), unquoted; no fallback, no warning.

    ``text`` is taken literally: a ``-term`` in it is an ordinary word, so callers pass
    the positive part of a query (:attr:`ParsedQuery.positive`).
    """
    return _phrases_and_overflow(text)[0]


def _quote(phrase: str) -> str:
    return '"' + phrase.replace('"', '""') + '"'


def _positive_expression(text: str) -> str | None:
    phrases, overflow = _phrases_and_overflow(text)
    if overflow:
        _log.warning(
            "query has %d more distinct phrases than the %d the full-text search uses; "
            "the extra ones are ignored",
            overflow,
            MAX_PHRASES,
        )
    if phrases:
        return " OR ".join(_quote(phrase) for phrase in phrases)
    # Nothing reached three characters: search the whole query verbatim instead, unless
    # it is itself too short for the trigram index (then only the vector leg runs).
    whole = trim(text)
    if len(whole) < MIN_PHRASE_CHARS or not fts_sendable(whole):
        return None
    return _quote(whole)


def _exclusion_expression(exclusions: tuple[str, ...]) -> str | None:
    # Terms under three characters cannot be matched by the trigram index and some
    # characters cannot be sent; the post-filter still applies those terms.
    usable = [term for term in exclusions if len(term) >= MIN_PHRASE_CHARS and fts_sendable(term)]
    if not usable:
        return None
    return " OR ".join(_quote(term) for term in usable[:MAX_PHRASES])


# --------------------------------------------------------------------------- version 4


def _term_phrase(text: str) -> str | None:
    """``text`` as one phrase of ``fts_terms`` tokens (quoted regions, exclusions)."""
    tokens = [
        token
        for script, run in script_runs(text)
        for token in (run.split() if script is None else bigrams(run))
    ]
    phrase = " ".join(tokens).strip()
    return phrase if phrase and fts_sendable(phrase) else None


def content_terms(text: str) -> list[str]:
    """The version-4 terms of ``text``: content words and kanji/katakana bigrams.

    Quoted regions come back whole (as a phrase of tokens); duplicates are dropped,
    first occurrence kept, and at most :data:`MAX_PHRASES` are returned.
    """
    terms: list[str] = []
    for segment in split_quotes(text):
        if segment.kind == "quoted":
            phrase = _term_phrase(segment.text)
            if phrase is not None:
                terms.append(phrase)
            continue
        for group in _groups(segment.text):
            for run in _runs(group):
                klass = char_class(run[0])
                if klass is CharClass.HIRAGANA:
                    continue
                if klass is CharClass.WORD:
                    if run.lower() not in STOP_WORDS:
                        terms.append(run)
                else:
                    terms.extend(bigrams(run))
    return _dedupe_and_cap([t for t in terms if fts_sendable(t)])[0]


def leg_terms(parsed: ParsedQuery) -> list[str]:
    """The phrases or terms the full-text expression of ``parsed`` is made of."""
    if parsed.fts_table == FTS_QUERY_VERSIONS[TERMS_QUERY_VERSION]:
        return content_terms(parsed.positive)
    return query_phrases(parsed.positive)


def build_terms_query(text: str) -> str | None:
    """The version-4 MATCH expression for ``fts_terms``, or None to skip the FTS leg."""
    return parse_query(text, require_positive=False, version=TERMS_QUERY_VERSION).fts


def _terms_expressions(split_positive: str, exclusions: tuple[str, ...]) -> str | None:
    terms = content_terms(split_positive)
    positive = " OR ".join(_quote(term) for term in terms) if terms else None
    excluded = [p for p in (_term_phrase(term) for term in exclusions) if p is not None]
    if positive is not None and excluded:
        negative = " OR ".join(_quote(p) for p in excluded[:MAX_PHRASES])
        return f"({positive}) NOT ({negative})"
    return positive


def parse_query(
    text: str, *, require_positive: bool = True, version: int = FTS_QUERY_VERSION
) -> ParsedQuery:
    """Split ``text`` into positive part and exclusions and compile the MATCH expression.

    ``version`` picks the compiler (:data:`FTS_QUERY_VERSIONS`) and so the table.

    Raises :class:`GrooveError` when nothing is left to search for (only whitespace or
    quote marks): always when the query excludes terms, and for an empty query unless
    ``require_positive`` is False (the compiler alone maps an empty query to None).
    """
    if len(text) > MAX_QUERY_CHARS:
        raise GrooveError(
            f"query {clip_repr(text)} is {len(text)} characters long, over the "
            f"{MAX_QUERY_CHARS}-character limit; shorten it (a query is a question, "
            "not a document)"
        )
    split = split_exclusions(text)
    # NUL is dropped before searching (as the golden file's check says), so a query of
    # NULs, quotes and blanks searches for nothing
    if not trim(split.positive.replace('"', "").replace("\x00", " ")):
        if split.exclusions:
            raise GrooveError(
                f"query {clip_repr(text)} only excludes terms (-term) and has nothing to "
                "search for; "
                "add at least one positive term, e.g. 'rust -async'"
            )
        if require_positive:
            raise GrooveError(
                f"query {clip_repr(text)} is empty: give at least one term to search for"
            )
    if version not in FTS_QUERY_VERSIONS:
        raise GrooveError(
            f"unknown fts_query_version {version}; choose one of {sorted(FTS_QUERY_VERSIONS)}"
        )
    if version == TERMS_QUERY_VERSION:
        return ParsedQuery(
            positive=split.positive,
            exclusions=split.exclusions,
            fts=_terms_expressions(split.positive, split.exclusions),
            fts_table=FTS_QUERY_VERSIONS[version],
        )
    positive = _positive_expression(split.positive)
    negative = _exclusion_expression(split.exclusions)
    if positive is not None and negative is not None:
        fts: str | None = f"({positive}) NOT ({negative})"
    else:
        fts = positive
    return ParsedQuery(positive=split.positive, exclusions=split.exclusions, fts=fts)


def build_fts_query(text: str) -> str | None:
    """The FTS5 MATCH expression for ``text``, or None to skip the FTS leg.

    Raises :class:`GrooveError` for a query that only excludes terms.
    """
    return parse_query(text, require_positive=False).fts
