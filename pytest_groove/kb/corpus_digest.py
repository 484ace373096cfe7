"""The corpus digest: one definition for the index and for the KB's files read directly.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable

from pytest_groove.kb.records import ChunkText


def chunk_digest(chunks: Iterable[ChunkText]) -> tuple[str, int]:
    """(SHA-256 hex, chunk count) over (path, chunk index, heading, content, context) of
    each chunk in the order given, each field length-prefixed (None: one zero byte).

    Python's str ordering is code-point order, the order the digest is defined in;
    SQLite's default BINARY collation on UTF-8 gives the same order.
    """
    digest = hashlib.sha256()
    count = 0
    for chunk in chunks:
        count += 1
        for field in (
            chunk.path,
            str(chunk.chunk_index),
            chunk.heading,
            chunk.content,
            chunk.context,
        ):
            if field is None:
                digest.update(b"\x00")
            else:
                data = field.encode("utf-8")
                digest.update(b"\x01" + struct.pack("<Q", len(data)) + data)
    return digest.hexdigest(), count
