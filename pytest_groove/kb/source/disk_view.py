"""The knowledge base as its files say, without an index: paths, headings, digests.

An external retriever answers from its own store, but the golden set is judged
against the KB on disk.  :func:`read_kb_view` walks, reads and parses the KB exactly
as the indexer does (the same exclusion rules, the same reads below the root without
following links, the same parser and chunking) and embeds nothing, so a golden entry
is checked against the same headings whichever searcher answers, and a run records
the corpus it was judged against.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_groove.kb.source.corpus_digest import DIGEST_VERSION, chunk_digest
from pytest_groove.kb.source.markdown import merged_headings
from pytest_groove.kb.source.parse import ParseFailure, parse_document
from pytest_groove.kb.source.read_files import read_collected
from pytest_groove.kb.source.records import ChunkText, CorpusSnapshot
from pytest_groove.kb.source.walk import collect_files
from pytest_groove.settings.config import IndexSettings


@dataclass(frozen=True)
class KBView:
    """What the KB's files hold, as the indexer would see them."""

    #: each document with at least one chunk -> its chunks' headings (None: no heading)
    headings: dict[str, set[str | None]]
    #: each document -> SHA-256 of its bytes (the indexer's change detection)
    documents: dict[str, str]
    #: every chunk's full-text fields, in path and chunk order
    texts: tuple[ChunkText, ...]
    #: what was skipped and why (unreadable, not UTF-8 ...)
    warnings: tuple[str, ...] = ()
    #: whether an index of these settings stores each chunk's breadcrumb (contextual
    #: indexing with full text, ``static``); otherwise it stores none
    stores_context: bool = False

    @property
    def corpus(self) -> CorpusSnapshot:
        """Counts and a digest over every chunk, defined as the index's is: over the
        fields the index stores, so an unchanged KB has one digest whichever searcher
        answered (a breadcrumb the index would not store is left out)."""
        texts = (
            self.texts if self.stores_context else (replace(t, context=None) for t in self.texts)
        )
        digest, chunks = chunk_digest(texts)
        return CorpusSnapshot(
            documents=len(self.headings),
            chunks=chunks,
            digest=digest,
            digest_version=DIGEST_VERSION,
        )


def read_kb_view(kb: Path, settings: IndexSettings) -> KBView:
    """Walk, read and parse every indexable file of ``kb`` (nothing is embedded)."""
    collected = collect_files(kb, settings)
    warnings = list(collected.warnings)
    headings: dict[str, set[str | None]] = {}
    documents: dict[str, str] = {}
    texts: list[ChunkText] = []
    for rel, data in read_collected(kb, collected, warnings).items():
        if data is None:
            continue
        documents[rel] = hashlib.sha256(data).hexdigest()
        try:
            parsed = parse_document(rel, data, settings, on_warning=warnings.append)
        except ParseFailure as exc:
            warnings.append(f"skipped {rel}: {exc}")
            continue
        if not parsed.chunks:
            continue
        headings[rel] = {chunk.heading for chunk in parsed.chunks}
        if rel.endswith(".md"):
            # a retriever chunks in its own way: a short section this parser folds into
            # the one before is still a heading it can answer with
            text = data.decode("utf-8", "replace")
            headings[rel].update(merged_headings(text, settings.exclude_headings))
        texts.extend(
            ChunkText(rel, chunk.index, chunk.heading, chunk.context, chunk.content)
            for chunk in parsed.chunks
        )
    # the indexer's rule (kb/build_record.py: context_mode_for, "static" stores it)
    stores_context = settings.contextual and settings.contextual_full_text
    return KBView(headings, documents, tuple(texts), tuple(warnings), stores_context)
