"""How equal scores are ordered: by each chunk's place in the corpus, not its row id.

Every ranking breaks ties -- equal bm25 scores, equal inner products, and above all
equal RRF sums (a chunk 5th in one leg only and another 5th in the other leg only
tie exactly) -- so that the order is total.  The reference orders them by chunk id,
but a chunk id tells the index's history, not the corpus: a freshly built index
numbers the chunks in corpus order (documents in path order, chunks in document
order), while an edited note's chunks are numbered after every other and a renamed
note keeps its old numbers.  Ordered by id, the same corpus ranked differently
after ``index --force`` or a CI cache miss, and the gate reported a regression no
note caused.

:class:`TieOrder` gives each chunk id its rank in corpus order, exactly the id a
fresh build would have given it relative to the others -- so a fresh index ranks as
it always did (its ids already are in that order, and :data:`IN_ID_ORDER` is used
without any lookup), and an updated one ranks as a fresh one would.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IdArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class TieOrder:
    """The key equal scores are ordered by: ``rank[chunk id]`` (None: the id itself)."""

    rank: IdArray | None = None

    @property
    def by_id(self) -> bool:
        """Ids are already in corpus order: the id is the key."""
        return self.rank is None

    def keys(self, ids: npt.ArrayLike) -> IdArray:
        """The tie key of each id (an id the order does not know sorts after all)."""
        array = np.asarray(ids, dtype=np.int64)
        rank = self.rank
        if rank is None:
            return array
        inside = (array >= 0) & (array < len(rank))
        out = np.full(array.shape, np.iinfo(np.int64).max, dtype=np.int64)
        out[inside] = rank[array[inside]]
        return out

    def key(self, chunk_id: int) -> int:
        rank = self.rank
        if rank is None:
            return chunk_id
        return int(rank[chunk_id]) if 0 <= chunk_id < len(rank) else np.iinfo(np.int64).max


#: a fresh index's order: ties by ascending chunk id
IN_ID_ORDER = TieOrder()

#: results a leg that cuts its list its own way (SQLite's ``LIMIT`` in id order,
#: faiss's heap in no promised order) first fetches beyond the cut; it fetches twice as
#: many again while the rows tying with the last one kept run to the end of what came
#: back, so that the whole group tying at the cut is chosen among in corpus order
TIE_SLACK = 32


def path_key(path: str) -> str:
    """Documents in the order the indexer walks them, component by component: a
    path's folders compare before its name ("a/b" before "a-b"), as the tuple of its
    components would, since NUL sorts before every character a path component holds."""
    return path.replace("/", "\0")


def tie_order(chunks: IdArray, documents: Sequence[tuple[int, str]]) -> TieOrder:
    """The corpus order of every chunk: documents by path, chunks in document order.

    ``chunks`` holds one ``(document id, chunk id)`` row per chunk, each document's
    rows in chunk order (as the store's (document, chunk order) index lists them);
    ``documents`` is every ``(document id, path)``.  The answer is
    :data:`IN_ID_ORDER` when the ids already follow corpus order (every fresh build,
    and any index whose changes kept it): no lookup per tie then.
    """
    if len(chunks) == 0 or not documents:
        return IN_ID_ORDER
    doc_ids = np.fromiter((d for d, _ in documents), np.int64, len(documents))
    by_path = sorted(range(len(documents)), key=lambda i: path_key(documents[i][1]))
    place = np.zeros(int(max(doc_ids.max(), chunks[:, 0].max())) + 1, dtype=np.int64)
    place[doc_ids[by_path]] = np.arange(len(by_path), dtype=np.int64)
    # stable: each document's chunks keep their chunk order
    corpus_order = chunks[np.argsort(place[chunks[:, 0]], kind="stable"), 1]
    if bool(np.all(np.diff(corpus_order) > 0)):
        return IN_ID_ORDER
    rank = np.full(int(corpus_order.max()) + 1, np.iinfo(np.int64).max, dtype=np.int64)
    rank[corpus_order] = np.arange(len(corpus_order), dtype=np.int64)
    return TieOrder(rank)


#: the index_meta key a write keeps its state's tie order under
TIE_ORDER_META = "tie_order"
_GENERATION = np.dtype("<i8")


def encode_tie_order(order: TieOrder, generation: int) -> bytes:
    """``order`` as stored for ``generation``: the generation, then the ranks (none
    when ties go by id), little-endian 64-bit integers."""
    head = np.array([generation], dtype=_GENERATION).tobytes()
    return head if order.rank is None else head + order.rank.astype(_GENERATION).tobytes()


def decode_tie_order(value: bytes | None, generation: int) -> TieOrder | None:
    """The stored order if it was kept for ``generation`` (None: not kept, kept for
    another state, or not in the stored form -- the caller reads the chunks instead)."""
    if value is None or len(value) < 8 or len(value) % 8:
        return None
    numbers = np.frombuffer(value, dtype=_GENERATION)
    if int(numbers[0]) != generation:
        return None
    if len(numbers) == 1:
        return IN_ID_ORDER
    return TieOrder(numbers[1:].astype(np.int64))
