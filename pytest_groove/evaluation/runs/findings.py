"""The ``golden-queries-quoted`` check: documents that quote several golden queries.

A note about the evaluation kept inside the evaluated KB quotes the golden queries
verbatim, so it out-ranks the real answers and the golden set gets harder to pass
the more is written about it.  The scan reports such documents; it never changes
the exit code, the golden file or the corpus.

Rule (spec-eval §10, seed "When the corpus quotes the golden set"):

- queries and indexed text are whitespace-normalised (Unicode White_Space runs -> one
  space, trimmed) and lowercased;
- queries shorter than :data:`MIN_QUERY_CODE_POINTS` after that are not looked for
  (short queries are topic names that occur everywhere); queries with the same
  normalised text fold into one *needle*;
- every chunk's heading, breadcrumb (context) and body are scanned **separately**,
  exactly the three fields full-text search indexes; nothing is concatenated;
- in one document, a matched needle contained in another matched needle is dropped;
  a needle is exempt when any golden entry with that wording expects this document;
- a document is reported when :data:`MIN_DISTINCT_QUERIES` or more needles remain.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pytest_groove.evaluation.runs.record import QUOTE_CHECK, Finding, QueryResult, QuotedQuery
from pytest_groove.kb.derived.quote_scan import (
    QUOTE_SCAN_VERSION,
    normalise_text,
    quoted_needles,
)
from pytest_groove.kb.source.records import ChunkText

if TYPE_CHECKING:
    # the index's modules bring numpy along: only the kept scan needs them
    from pytest_groove.kb.store.database import Store

__all__ = [
    "MIN_DISTINCT_QUERIES",
    "MIN_QUERY_CODE_POINTS",
    "QUOTE_SCAN_VERSION",
    "Finding",
    "QuotedQuery",
    "findings_warning",
    "golden_quote_findings",
    "normalise_text",
    "quote_findings",
    "quoted_needles",
    "scan_golden_quotes",
]

#: measured: 8 and 12 find the same notes on a real corpus, 16 loses the true one
MIN_QUERY_CODE_POINTS = 12
#: one quoted query is what a document about that topic looks like; two is a note
#: about the test
MIN_DISTINCT_QUERIES = 2


class QuoteScanner(Protocol):
    """What the scan needs of a corpus (every searcher is one)."""

    def quoted_by_document(self, needles: Sequence[str]) -> dict[str, set[int]]:
        """Document path -> indices of the normalised ``needles`` it quotes."""
        ...


@dataclass(frozen=True)
class _Needle:
    text: str
    #: positions (in the results list) of every query with this wording; first is
    #: the representative whose id and retrieved list are reported
    members: tuple[int, ...]


def _needles(results: Sequence[QueryResult]) -> list[_Needle]:
    members: dict[str, list[int]] = {}
    for position, result in enumerate(results):
        text = normalise_text(result.query)
        if len(text) >= MIN_QUERY_CODE_POINTS:
            members.setdefault(text, []).append(position)
    # dicts keep insertion order: needles follow the first appearance of each wording
    return [_Needle(text, tuple(positions)) for text, positions in members.items()]


def _rank_of(result: QueryResult, path: str) -> int | None:
    return next((hit.rank for hit in result.top_k if hit.path == path), None)


def scan_golden_quotes(
    results: Sequence[QueryResult], chunks: Iterable[ChunkText]
) -> list[Finding]:
    """Documents that quote two or more of these queries verbatim, sorted by path.

    ``results`` are the queries of this run in golden order (their ids name the
    quotes, their retrieved lists give ``rank_in_top_k``); ``chunks`` is every
    indexed chunk, read in the same snapshot that answered the searches.
    """
    needles = _needles(results)
    return _findings(results, needles, quoted_needles([n.text for n in needles], chunks))


def golden_quote_findings(results: Sequence[QueryResult], store: Store) -> list[Finding]:
    """:func:`scan_golden_quotes` over every chunk of ``store``, from its kept scan
    (:func:`~pytest_groove.kb.derived.quote_scan.kept_quote_scan`).  Call inside
    ``store.read_snapshot()``, the snapshot that answered the searches."""
    from pytest_groove.kb.derived.quote_scan import kept_quote_scan

    needles = _needles(results)
    return _findings(results, needles, kept_quote_scan(store, [n.text for n in needles]))


def quote_findings(results: Sequence[QueryResult], corpus: QuoteScanner) -> list[Finding]:
    """The findings of the scan ``corpus`` answers (a searcher: the kept scan of the
    built-in index, or the KB's files read from disk for a custom retriever)."""
    needles = _needles(results)
    return _findings(results, needles, corpus.quoted_by_document([n.text for n in needles]))


def _findings(
    results: Sequence[QueryResult], needles: Sequence[_Needle], matches: dict[str, set[int]]
) -> list[Finding]:
    findings: list[Finding] = []
    for path, matched in sorted(matches.items()):
        # one quotation of a long query must not also count as one of a shorter
        # query it contains (texts of distinct needles are distinct)
        kept = [
            i
            for i in sorted(matched)
            if not any(j != i and needles[i].text in needles[j].text for j in matched)
        ]
        quoted: list[QuotedQuery] = []
        for i in kept:
            members = [results[m] for m in needles[i].members]
            if any(e.path == path for member in members for e in member.expected):
                continue  # the document is a labelled answer of this wording
            representative = members[0]
            quoted.append(QuotedQuery(representative.id, _rank_of(representative, path)))
        if len(quoted) >= MIN_DISTINCT_QUERIES:
            findings.append(Finding(QUOTE_CHECK, path, tuple(quoted)))
    return findings


def findings_warning(findings: Sequence[Finding], prog: str = "groove eval") -> str | None:
    """The stderr block for the findings (ASCII template), or None when there are none."""
    if not findings:
        return None
    lines = [
        f"{prog}: {len(findings)} document(s) quote {MIN_DISTINCT_QUERIES} or more golden "
        f"queries verbatim ({QUOTE_CHECK})."
    ]
    for finding in findings:
        lines.append(f"  {finding.path}")
        for quote in finding.quoted:
            where = "not in top_k" if quote.rank_in_top_k is None else f"rank {quote.rank_in_top_k}"
            lines.append(f"    {quote.query_id} ({where})")
    lines.append("  Either these notes leaked into the corpus, or the queries came from them")
    lines.append(f"  and the documents belong in `expected`. {prog} changes neither.")
    return "\n".join(lines) + "\n"
