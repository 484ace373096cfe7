"""The corpus digest: one definition for the index and for the KB's files read directly.

Version 2 (:data:`DIGEST_VERSION`) is a digest of digests: each document's chunks
give a *document digest* (:func:`document_digest`), which the index stores with the
document when its chunks are written, and the corpus digest is taken over the
sorted (path, document digest) pairs (:func:`corpus_digest`).  An eval after a
one-file edit then reads one small row per document instead of every chunk's text.
Version 1 was one SHA-256 over every chunk's fields in path order; a run recorded
with it cannot be compared with a version-2 digest (see
:func:`pytest_groove.evaluation.gate.compare.corpus_change`).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable

from pytest_groove.kb.source.records import ChunkText

#: the definition a digest was made by; a run record stores it beside the digest
#: (no key: version 1, one SHA-256 over every chunk's fields in path order)
DIGEST_VERSION = 2
#: what starts every version-2 corpus digest, so it never equals a version-1 one
_CORPUS_PREFIX = b"groove-corpus-digest-2\x00"

#: one chunk as the document digest reads it: (chunk index, heading, content, context)
ChunkFields = tuple[int, str | None, str, str | None]


_LENGTH = struct.Struct("<Q").pack


def _field_bytes(field: str | None) -> bytes:
    """One field as a digest reads it: a zero byte for None, else one byte, the UTF-8
    length and the UTF-8 bytes."""
    if field is None:
        return b"\x00"
    data = field.encode("utf-8")
    return b"\x01" + _LENGTH(len(data)) + data


def document_digest(chunks: Iterable[ChunkFields]) -> str:
    """SHA-256 hex over (chunk index, heading, content, context) of each of one
    document's chunks in the order given (chunk order), each field length-prefixed
    (None: one zero byte).  The path is not part of it: a renamed document keeps it."""
    # the fields' bytes joined and hashed at once: one call, not four a chunk
    parts = [
        _field_bytes(field)
        for index, heading, content, context in chunks
        for field in (str(index), heading, content, context)
    ]
    return hashlib.sha256(b"".join(parts)).hexdigest()


def corpus_digest(documents: Iterable[tuple[str, str]]) -> str:
    """SHA-256 hex over the (path, document digest) pairs sorted by path.

    Only documents with at least one chunk take part.  Python's str ordering is
    code-point order, the order the digest is defined in.
    """
    # joined and hashed at once (one call, not three a document: a tenth of a second
    # at 100,000 documents)
    parts = [_CORPUS_PREFIX]
    for path, document in sorted(documents):
        parts.append(_field_bytes(path) + bytes.fromhex(document))
    return hashlib.sha256(b"".join(parts)).hexdigest()


def chunk_digest(chunks: Iterable[ChunkText]) -> tuple[str, int]:
    """(corpus digest, chunk count) of these chunks, grouped by path in the order given
    (each path's chunks in chunk order): what an index holding them records."""
    by_path: dict[str, list[ChunkFields]] = {}
    count = 0
    for chunk in chunks:
        count += 1
        by_path.setdefault(chunk.path, []).append(
            (chunk.chunk_index, chunk.heading, chunk.content, chunk.context)
        )
    pairs = ((path, document_digest(fields)) for path, fields in by_path.items())
    return corpus_digest(pairs), count
