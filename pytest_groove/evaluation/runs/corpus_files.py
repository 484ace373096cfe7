"""Each document's digest in the run record, and what changed between two runs' corpora.

A run records, beside its corpus counts, every document's path and the first
:data:`DIGEST_CHARS` hex digits of the SHA-256 of its file (the indexer's hash for the
built-in engine, the file on disk for a team's retriever).  Twelve hex digits (48 bits)
keep the committed history small and still make two different files sharing a prefix
a one-in-trillions accident among a KB's documents.

From two runs' digests the explanations follow: an expected path gone since the
baseline is a *removed* answer (scored as a miss, not a golden-file typo); the same
digest under a new path is a *rename*; a document that now outranks the answer is
``added``, ``changed`` or ``unchanged`` since the baseline.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from pytest_groove.kb.source.records import CorpusSnapshot

#: hex digits of each document's SHA-256 kept in the run record
DIGEST_CHARS = 12

#: how a document differs from the baseline run's corpus
Change = Literal["added", "changed", "unchanged", "unknown"]


def with_document_digests(
    corpus: CorpusSnapshot | None, digests: Mapping[str, str] | None
) -> CorpusSnapshot | None:
    """``corpus`` carrying each document's digest prefix (unchanged when either is None)."""
    if corpus is None or digests is None:
        return corpus
    files = tuple(sorted((path, digest[:DIGEST_CHARS]) for path, digest in digests.items()))
    return replace(corpus, files=files)


def document_digests(corpus: CorpusSnapshot | None) -> dict[str, str] | None:
    """The run's path -> digest prefix map (None when the run did not record one)."""
    if corpus is None or corpus.files is None:
        return None
    return dict(corpus.files)


@dataclass(frozen=True)
class CorpusDelta:
    """The documents of this run's corpus against the baseline run's."""

    now: Mapping[str, str]
    before: Mapping[str, str]

    def change(self, path: str) -> Change:
        """How ``path`` (a document of this run) differs from the baseline."""
        if path not in self.now:
            return "unknown"
        if path not in self.before:
            return "added"
        return "unchanged" if self.now[path] == self.before[path] else "changed"

    def removed(self, path: str) -> bool:
        """``path`` was in the baseline's corpus and is not in this run's."""
        return path in self.before and path not in self.now

    def renamed_to(self, path: str) -> str | None:
        """Where a removed document's content lives now (the same digest under a path
        the baseline did not have), None when it is nowhere."""
        digest = self.before.get(path)
        if digest is None or path in self.now:
            return None
        moved = sorted(
            other for other, now in self.now.items() if now == digest and other not in self.before
        )
        return moved[0] if moved else None


def corpus_delta(now: CorpusSnapshot | None, before: CorpusSnapshot | None) -> CorpusDelta | None:
    """The per-document difference of two runs (None when either recorded no digests)."""
    mine, theirs = document_digests(now), document_digests(before)
    if mine is None or theirs is None:
        return None
    return CorpusDelta(now=mine, before=theirs)
