"""Records produced by the parsers and consumed by the store and the indexer.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Chunk:
    """One searchable section of a document."""

    #: 0-based position in the document
    index: int
    #: heading text without the ``##`` marker; None for a preamble / .txt chunk
    heading: str | None
    #: 2 or 3 for Markdown headings, None otherwise
    level: int | None
    content: str
    #: breadcrumb ("Title > Section > Sub"), None when empty
    context: str | None


@dataclass(frozen=True)
class ParsedDocument:
    """A parsed KB file: frontmatter fields plus its chunks."""

    title: str | None
    topic: str | None = None
    date: str | None = None
    depth: str | None = None
    tags: tuple[str, ...] = ()
    chunks: tuple[Chunk, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class CorpusSnapshot:
    """What an eval run measured: counts plus a digest over every indexed chunk."""

    documents: int
    chunks: int
    #: SHA-256 hex over the chunks, by the definition :attr:`digest_version` names
    #: (:mod:`pytest_groove.kb.source.corpus_digest`)
    digest: str
    #: each document's path and the first hex digits of its file's SHA-256, by path
    #: (None = not recorded: runs of older versions, or a searcher that cannot say);
    #: what tells a deleted, renamed, added or edited document since another run
    files: tuple[tuple[str, str], ...] | None = None
    #: the digest's definition (1: runs of older versions, which recorded none);
    #: digests of two definitions are never compared
    digest_version: int = 1


@dataclass(frozen=True)
class ChunkText:
    """The full-text-indexed fields of one stored chunk (for the quote scan)."""

    path: str
    chunk_index: int
    heading: str | None
    context: str | None
    content: str
