"""Vectors found by what they embed: an edit embeds only the texts it changed.

Every vector the indexer stores carries a key, :func:`embed_key`: a digest of the
embedder's identity (its name and dimension), the role the text was embedded in (a
passage: the role decides a prefix such as e5's ``passage: ``) and the exact text.
Before the indexer gives the embedder a text it looks the key up in the index
(:meth:`~pytest_groove.kb.store.reader.StoreReader.vectors_by_key`): a chunk's
vector, a note vector, or one this run removed -- a rewritten note's old chunks, or
every vector a ``--force`` wipe removed -- which ``retired_vectors`` keeps until the
run ends.  So an edit to one section of a note embeds that section (and its note
vector only when the title or opening changed); sections reordered, moved to another
note, or a note renamed embed nothing; a rebuild that changes no embedded text embeds
nothing.  Texts repeated within one embedder call are embedded once.

A vector found is the very bytes the embedder gave for that key, and the embedders
give the same bytes for a text whatever batch it comes in (``e5-small`` and ``hash``
are checked for it), so an index updated this way holds what a full rebuild holds.

The look-ups read the index through a second connection: the indexer's writer thread
holds the first, and what it has committed is all a look-up needs (a key's vector is
the same in any state of the index).  A text whose vector is still waiting for the
writer is embedded again, to the same bytes.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_groove.embed.base import Embedder, Matrix

#: the bytes of each key (a BLAKE2b digest: 128 bits keep a collision out of reach)
KEY_BYTES = 16
#: what a look-up is: keys to the stored vectors' bytes of those it finds
Lookup = Callable[[Sequence[bytes]], dict[bytes, bytes]]


def embedder_identity(embedder: Embedder, role: str = "passage") -> bytes:
    """What besides the text decides a vector: the model, its dimension and the role."""
    return f"{embedder.name}\0{embedder.dimension}\0{role}\0".encode("utf-8", "surrogatepass")


def embed_key(identity: bytes, text: str) -> bytes:
    """The key of the vector of ``text`` embedded by the embedder ``identity`` names."""
    digest = hashlib.blake2b(identity, digest_size=KEY_BYTES)
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.digest()


@dataclass(frozen=True)
class KeyedVectors:
    """Vectors of texts in their order, with their keys and which ones the embedder gave."""

    matrix: Matrix
    keys: list[bytes]
    #: the embedder embedded this row now (False: found in the index, or an equal
    #: text earlier in the same call)
    embedded: list[bool]


class KeyedEmbedder:
    """Passages embedded through their keys: found in the index, else embedded."""

    def __init__(self, embedder: Embedder, lookup: Lookup | None) -> None:
        self.embedder = embedder
        self._identity = embedder_identity(embedder)
        self._lookup = lookup
        self._row_bytes = embedder.dimension * 4

    def key(self, text: str) -> bytes:
        return embed_key(self._identity, text)

    def passages(
        self, texts: Sequence[str], on_embed: Callable[[int], None] | None = None
    ) -> KeyedVectors:
        """The vectors of ``texts``; ``on_embed`` hears how many go to the embedder."""
        keys = [self.key(text) for text in texts]
        found = self._found(keys)
        missing: dict[bytes, int] = {}
        todo: list[str] = []
        for text, key in zip(texts, keys, strict=True):
            if key not in found and key not in missing:
                missing[key] = len(todo)
                todo.append(text)
        fresh = None
        if todo:
            if on_embed is not None:
                on_embed(len(todo))
            fresh = self.embedder.embed_passages(todo)
            if len(todo) == len(texts):  # nothing found, no text twice: as embedded
                return KeyedVectors(fresh, keys, [True] * len(texts))
        matrix = np.empty((len(texts), self.embedder.dimension), dtype=np.float32)
        embedded: list[bool] = []
        counted: set[bytes] = set()
        for row, key in enumerate(keys):
            blob = found.get(key)
            if blob is not None:
                matrix[row] = np.frombuffer(blob, dtype=np.float32)
                embedded.append(False)
                continue
            assert fresh is not None
            matrix[row] = fresh[missing[key]]
            # the first row of a text counts as embedded, an equal one later as found
            embedded.append(key not in counted)
            counted.add(key)
        return KeyedVectors(matrix, keys, embedded)

    def _found(self, keys: list[bytes]) -> dict[bytes, bytes]:
        """The stored vectors of ``keys`` of this embedder's dimension."""
        if self._lookup is None or not keys:
            return {}
        return {k: v for k, v in self._lookup(keys).items() if len(v) == self._row_bytes}
