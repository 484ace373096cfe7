"""The tie order of an index state (:mod:`.tie_order`), as the store keeps and reads it.

The indexer keeps the order of the state its writes leave in ``index_meta`` (one
value: the generation, then each chunk's rank, or no ranks when ties go by id), so a
search reads one value; an index no writer kept it for is read from the (document,
chunk order) index, once per generation.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import numpy as np

from pytest_groove.kb.store.reader import concat_integers
from pytest_groove.kb.store.schema import StoreConnection
from pytest_groove.kb.store.tie_order import (
    TIE_ORDER_META,
    TieOrder,
    decode_tie_order,
    encode_tie_order,
    tie_order,
)


class StoreTieOrder(StoreConnection):
    """Reading and keeping the order equal scores are ranked in."""

    def tie_order(self) -> TieOrder:
        """How this state of the index orders equal scores (:mod:`.tie_order`): the
        order the indexer kept for this state (:meth:`keep_tie_order`), else read from
        the (document, chunk order) index; once per generation either way."""
        generation = self.generation
        memo = self.tie_order_kept
        if memo is not None and memo[0] == generation:
            return memo[1]  # the kept value (a MiB at 100k chunks) is read once, not per query
        order = decode_tie_order(self.get_meta_blob(TIE_ORDER_META), generation)
        if order is None:
            order = self._read_tie_order()
        self.tie_order_kept = (generation, order)
        return order

    def keep_tie_order(self) -> None:
        """Store the tie order of the index as it is now (the indexer calls this after
        its writes, in a transaction of its own), so that a search of this state reads
        one value instead of every chunk's place."""
        generation = self.generation
        order = self._read_tie_order()
        self.set_meta(TIE_ORDER_META, encode_tie_order(order, generation))
        self.tie_order_kept = (generation, order)

    def keeps_tie_order(self) -> bool:
        """Whether the kept tie order is this state's (see :meth:`keep_tie_order`)."""
        kept = self.get_meta_blob(TIE_ORDER_META)
        return decode_tie_order(kept, self.generation) is not None

    def _read_tie_order(self) -> TieOrder:
        """Every chunk's place in the corpus, from one string of the (document, chunk
        order) index and every document's path."""
        row = self.conn.execute(
            "SELECT group_concat(document_id || ',' || id) "
            "FROM chunks INDEXED BY idx_chunks_doc_order"
        ).fetchone()
        chunks = (
            np.zeros((0, 2), dtype=np.int64)
            if row is None or row[0] is None
            else concat_integers(str(row[0])).reshape(-1, 2)
        )
        documents = [
            (int(doc_id), str(path))
            for doc_id, path in self.conn.execute("SELECT id, path FROM documents")
        ]
        return tie_order(chunks, documents)
