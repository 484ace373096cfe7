"""Where the query's terms occur in a hit's content (spec-search §12.1).

Spans are UTF-8 *byte* offsets ``(start, end)`` into the final content (after parent
expansion), sorted and disjoint, for highlighting.  They are computed only for ASCII
terms: ASCII matches never straddle a multi-byte character, so byte offsets found in
the ASCII-lowercased bytes are valid in the original text.  ``None`` means "not
computed" (no query, a non-ASCII term, oversized content); ``[]`` means "computed,
nothing found".

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from functools import lru_cache

from pytest_groove.search.query.exclusion import split_exclusions
from pytest_groove.search.query.fts_query import query_phrases
from pytest_groove.text.plain import split_white_space, trim

#: content larger than this many UTF-8 bytes gets no spans
MAX_CONTENT_BYTES = 256 * 1024
#: at most this many terms, and at most this many spans in total
MAX_TERMS = 100
MAX_SPANS = 100


@lru_cache(maxsize=16)
def _terms(query: str) -> tuple[str, ...] | None:
    # cached: the pipeline asks once per hit with the same query, and compiling a
    # long query is the costly part (a 1 MiB golden query, ten hits)
    # Excluded terms are not highlighted: they never occur in a returned chunk anyway.
    text = trim(split_exclusions(query).positive)
    if not text:
        return None
    terms = query_phrases(text) or split_white_space(text)
    if any(not term.isascii() for term in terms):
        return None
    return tuple(sorted({term.lower() for term in terms if term})[:MAX_TERMS])


def _occurrences(haystack: bytes, needle: bytes, limit: int) -> list[tuple[int, int]]:
    """Up to ``limit`` non-overlapping occurrences, left to right."""
    found: list[tuple[int, int]] = []
    start = haystack.find(needle)
    while start != -1 and len(found) < limit:
        found.append((start, start + len(needle)))
        start = haystack.find(needle, start + len(needle))
    return found


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge overlapping spans; spans that merely touch stay separate."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def match_spans(query: str, content: str) -> list[tuple[int, int]] | None:
    """Byte spans of the positive query terms in ``content``, or None if not computed.

    Terms are the query's FTS phrases (or, when it has none, its whitespace-separated
    words), ASCII-lowercased, sorted and deduplicated; each term contributes at most
    ``100 // number_of_terms`` occurrences so one frequent term cannot crowd out the
    others.
    """
    terms = _terms(query)
    if terms is None:
        return None
    data = content.encode("utf-8", "surrogatepass")
    if len(data) > MAX_CONTENT_BYTES:
        return None
    if not terms:
        return []
    haystack = data.lower()  # bytes.lower() changes ASCII letters only
    budget = max(1, MAX_SPANS // len(terms))
    spans: list[tuple[int, int]] = []
    for term in terms:
        spans.extend(_occurrences(haystack, term.encode("ascii"), budget))
    return _merge(spans)
