"""What the evaluation asks of a searcher beyond its hits.

A :class:`~pytest_groove.engine.searcher.Searcher` answers queries.  To judge the
answers, the evaluation also needs two things only it defines, so it owns their
protocols:

- :class:`CorpusFacts` -- what the answers came from: the documents and their
  headings (the golden entries are checked against them), the corpus snapshot and
  per-document digests a run records, and the golden-quote scan;
- :class:`AnswerChecks` -- the searcher's own checks of its answers: an early stop
  when no answer can be judged, the run's warnings, and the notes a process that
  searched hands to the one that finishes (an xdist worker to its controller).

The built-in engine reads these from its index, a team's retriever from the KB's
files on disk (:mod:`pytest_groove.engine.searcher`); both satisfy
:class:`EvaluatedSearcher` by shape.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from pytest_groove.engine.searcher import Searcher
from pytest_groove.kb.source.records import CorpusSnapshot
from pytest_groove.search.hits import AnsweredQuery, SearchHit


class CorpusFacts(Protocol):
    """The corpus a searcher answers from, as the evaluation reads it."""

    def read_snapshot(self) -> AbstractContextManager[Any]:
        """Searches and corpus reads inside see one state of the corpus."""

    def headings_by_path(self) -> Mapping[str, Collection[str | None]] | None:
        """Every document it can answer with, and each document's section headings
        (None = it cannot say, and the golden entries are not checked)."""

    def corpus_snapshot(self) -> CorpusSnapshot | None:
        """The corpus the answers came from (None = unknown)."""

    def document_digests(self) -> Mapping[str, str] | None:
        """Each document's path and the SHA-256 hex of its file's bytes (None = it
        cannot say); tells a deleted, renamed or edited answer since another run."""

    def quoted_by_document(self, needles: Sequence[str]) -> dict[str, set[int]]:
        """Document path -> indices of the normalised ``needles`` it quotes verbatim
        (what the golden-quote scan asks of the corpus)."""


class AnswerChecks(Protocol):
    """A searcher's checks of its own answers."""

    def check_hits(self, hits: Sequence[SearchHit]) -> None:
        """Raise :class:`~pytest_groove.errors.StopsTheRun` when the hits so far show
        that no answer of this searcher can be judged (they name no KB file); called
        after each query's search, in every process that searches."""

    def answer_warnings(self, results: Sequence[AnsweredQuery], deepest_k: int) -> list[str]:
        """What the run's answers suggest is wrong (too few hits, NaN scores ...);
        raises :class:`~pytest_groove.errors.GrooveError` when most hits name no KB file."""

    def search_notes(self) -> dict[str, Any]:
        """What searching in this process learned that :meth:`answer_warnings` needs
        (JSON-able; empty: nothing), handed to the process that finishes."""

    def add_search_notes(self, notes: Mapping[str, Any]) -> None:
        """Take in another process's :meth:`search_notes`."""


class EvaluatedSearcher(Searcher, CorpusFacts, AnswerChecks, Protocol):
    """A searcher the evaluation can measure: it answers, knows its corpus, and checks
    its answers."""


__all__ = ["AnswerChecks", "CorpusFacts", "EvaluatedSearcher"]
