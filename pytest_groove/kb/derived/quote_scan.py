"""Which documents quote which texts: the matching rule of the golden-quote scan.

Texts (*needles*) and indexed fields are whitespace-normalised (Unicode White_Space
runs -> one space, trimmed) and lowercased; every chunk's heading, breadcrumb
(context) and body are scanned **separately**, exactly the three fields full-text
search indexes; nothing is concatenated.  What the quotes mean for a golden set is
the evaluation's (:mod:`pytest_groove.evaluation.runs.findings`); here the corpus
only answers "document path -> the needles it quotes", from every chunk or from the
scan kept in the index (:mod:`.quote_cache`).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import ahocorasick

from pytest_groove.kb.source.records import ChunkText
from pytest_groove.text.plain import collapse_whitespace

if TYPE_CHECKING:
    # the index's modules bring numpy along: only the kept scan needs them
    from pytest_groove.kb.store.database import Store

__all__ = ["QUOTE_SCAN_VERSION", "kept_quote_scan", "normalise_text", "quoted_needles"]

#: names the matching rule below (normalisation, fields) for the kept scans of
#: :mod:`.quote_cache`: change it whenever the rule changes
QUOTE_SCAN_VERSION = "1"


def normalise_text(text: str) -> str:
    """Collapse whitespace runs to one space, trim, lowercase."""
    return collapse_whitespace(text).lower()


def quoted_needles(needles: Sequence[str], chunks: Iterable[ChunkText]) -> dict[str, set[int]]:
    """Document path -> indices of the ``needles`` quoted in any one of its fields.

    ``needles`` are normalised texts.  One Aho-Corasick automaton over all needles
    reads each field once, whatever the number of golden queries (a substring test
    per needle and field read every field once per query: 2.3 s for 100 queries x
    10k chunks).
    """
    found: dict[str, set[int]] = {}
    if not needles:
        return found
    automaton = ahocorasick.Automaton()
    for index, needle in enumerate(needles):
        automaton.add_word(needle, index)
    automaton.make_automaton()
    for chunk in chunks:
        fields = [chunk.content]
        if chunk.heading:
            fields.append(chunk.heading)
        if chunk.context:
            fields.append(chunk.context)
        for raw in fields:
            for _end, index in automaton.iter(normalise_text(raw)):
                found.setdefault(chunk.path, set()).add(index)
    return found


def kept_quote_scan(store: Store, needles: Sequence[str]) -> dict[str, set[int]]:
    """:func:`quoted_needles` over every chunk of ``store``, from its kept scan.

    The same answer, but the per-document scan is kept in the index: an
    unchanged index is not read again, and after writes only the changed documents
    are.  Call inside ``store.read_snapshot()``, the snapshot that answered the
    searches.
    """
    from pytest_groove.kb.derived.quote_cache import cached_scan

    return cached_scan(
        store, needles, QUOTE_SCAN_VERSION, lambda chunks: quoted_needles(needles, chunks)
    )
