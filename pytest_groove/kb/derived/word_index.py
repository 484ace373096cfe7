"""The trigram table's bm25 term of a phrase, computed from word postings kept beside
the index instead of asked of FTS5's ``bm25()``.

Why: ``bm25()`` costs FTS5 a per-row lookup of the row's size and its position lists
(38 of 44 ms for a phrase matching 9,768 of 10,000 rows), and an index change makes
every kept phrase score stale (the table's statistics moved), so the first
evaluation after any edit paid it for every phrase again.  From the postings
(:mod:`.word_postings`) a phrase's counts per row and column are a few numpy
operations, and the term is FTS5's formula (``fts5Bm25Function``), in the same
order, in doubles: ``idf * (f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgD))``,
``f`` the row's weighted instances (each instance adds its column's weight, column
by column), ``D`` the row's tokens, ``avgD`` and ``idf`` table-wide.  The terms are
FTS5's bit for bit (``tests/kb/derived/test_word_index.py`` checks that against SQLite).

The postings belong to one index state.  The indexer brings them up to date after
every write (:func:`refresh_word_index`): the rows of new chunks are added as a
small segment, removed chunks are listed as dead, and segments are merged once they
pile up -- no pass over the whole corpus for a one-file change.  The segments are
files beside the index (``words-<index id>-<name>.seg``, memory-mapped by a search);
the manifest that names them, with the dead rows and the state they answer for, is
a row of ``index_meta``, written in the indexer's transaction after the segments
(:class:`KeptPostings`).  So a search process reads the manifest of the very state
its read snapshot sees, checks it against FTS5's own row count and token total, and
falls back to SQLite's ``bm25()`` when a segment is missing, stale or damaged.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import json
import uuid
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_groove.files.seal import SEAL_SUFFIX, remove_with_seal
from pytest_groove.kb.derived.family import DerivedFamily, Retention
from pytest_groove.kb.derived.word_postings import (
    COLUMNS,
    SEGMENT_FORMAT,
    Segment,
    SegmentBuilder,
    build_segment,
    merge_segments,
    read_segment,
    write_segment,
)
from pytest_groove.kb.store.bm25_sweep import idf as fts5_idf
from pytest_groove.kb.store.database import Store
from pytest_groove.text.trigram_fold import (
    FOLD,
    FOLD_EXACT,
    MIN_FOLDED_CHARS,
    TRIGRAM_ARGS,
    count_in,
    fold_phrase,
)

__all__ = [
    "DERIVED_FILES",
    "MANIFEST_PREFIX",
    "WORD_POSTINGS_META",
    "KeptPostings",
    "PhraseTerms",
    "WordIndex",
    "WrittenRows",
    "refresh_word_index",
]

#: what the segment files' names start with
MANIFEST_PREFIX = "words-"
#: the ``index_meta`` key of the manifest naming the current state's segments
WORD_POSTINGS_META = "word_postings"
#: the manifest's layout (2: a row of ``index_meta``, the state's generation and
#: database id inside it; 1 was a sealed JSON file per state)
_FORMAT = 2
#: the segment files (:func:`_write_new`), in the table of derived files (:mod:`.families`)
DERIVED_FILES = (
    DerivedFamily(
        "word-posting segments",
        prefix=MANIFEST_PREFIX,
        suffixes=(".seg",),
        retention=Retention.NAMED_BY_MANIFEST,
        format=SEGMENT_FORMAT,
    ),
)
#: FTS5's bm25 constants
_K1 = 1.2
_B = 0.75
#: rows read and folded per segment when the whole table is built
_BUILD_ROWS = 25_000
#: a segment of fewer rows is small (edits make them); past this many small ones
#: they are merged; a segment with more than this share of dead rows is rewritten
_SMALL_ROWS = _BUILD_ROWS // 4
_MAX_SMALL = 4
_DEAD_SHARE = 0.25
#: below this many postings per row id, a phrase's rows are gathered sparsely
_SPARSE_SHARE = 8
#: a phrase spanning words is counted in the text of at most this many columns: folding
#: a column's text costs about 0.1 ms (a phrase of two common words, thousands of
#: columns, is cheaper for FTS5 to match by its positions)
_MAX_SPANNING_COLUMNS = 100
#: weights whose sums of whole-number multiples are exact in doubles
_EXACT_SCALE = 2.0**16


#: the postings last opened for each open store, with the state they belong to
_OPENED: weakref.WeakKeyDictionary[Store, tuple[tuple[str, int, int, int], WordIndex]] = (
    weakref.WeakKeyDictionary()
)


@dataclass(frozen=True)
class PhraseTerms:
    """Every row matching one phrase (ascending) and the phrase's bm25 term there."""

    rowids: npt.NDArray[np.int64]
    terms: npt.NDArray[np.float64]


class WordIndex:
    """The word postings of one index state, ready to score phrases."""

    def __init__(
        self,
        segments: list[Segment],
        dead: npt.NDArray[np.int64],
        highest: int,
        texts: Callable[[Sequence[int]], dict[int, ColumnTexts]] | None = None,
    ):
        self.segments = segments
        #: the rows' column texts by chunk id, for phrases that span words
        self.texts = texts
        alive = np.zeros(highest + 1, dtype=bool)
        tokens = np.zeros(highest + 1, dtype=np.int64)
        for segment in segments:
            alive[segment.rows] = True
            tokens[segment.rows] = segment.row_tokens
        alive[dead[dead <= highest]] = False
        tokens[~alive] = 0
        self.alive = alive
        self.row_count = int(alive.sum())
        self.token_total = int(tokens.sum())
        #: a row's instances of a phrase are at most its tokens (see _exact)
        self.most_row_tokens = int(tokens.max()) if len(tokens) else 0
        # FTS5: avgdl = (double)nToken / (double)nRow, nRow at least 1
        average = float(self.token_total) / float(max(self.row_count, 1))
        if average == 0.0:
            average = 1.0  # no tokens anywhere: no phrase matches, any value will do
        row_tokens = tokens.astype(np.float64)
        # k1 * (1 - b + b * D / avgdl), per row, as FTS5 evaluates it
        self.length_norm = _K1 * (1 - _B + _B * row_tokens / average)
        self._vocabularies = [segment.vocabulary for segment in segments]

    def _postings(self, folded: str) -> list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]]:
        """Every segment's (keys, instances) of the folded phrase.  Each segment's own
        vocabulary is searched: a table is one large segment and, after edits, a few
        small ones, so the extra searches cost little and no merged vocabulary is held."""
        return [
            segment.postings_of_words(*vocabulary.containing(folded))
            for segment, vocabulary in zip(self.segments, self._vocabularies, strict=True)
        ]

    @classmethod
    def open(cls, store: Store, highest: int, count: int) -> WordIndex | None:
        """The postings of the store's current state; None when there are none that
        can be trusted (the caller asks SQLite then)."""
        key = (store.index_id, store.generation, highest, count)
        opened = _OPENED.get(store)
        if opened is not None and opened[0] == key:
            return opened[1]  # one state's postings never change: read them once
        folder = store.path.parent
        manifest = _decode_manifest(store.get_meta(WORD_POSTINGS_META))
        if manifest is None or not _answers_for(manifest, store, [highest, count]):
            return None
        try:
            segments = [read_segment(folder / name) for name in manifest["segments"]]
            index = cls(
                segments,
                np.asarray(manifest["dead"], dtype=np.int64),
                highest,
                store.chunk_fields,
            )
        except Exception:  # a segment missing or damaged in any way: SQLite answers
            return None
        if (index.row_count, index.token_total) != _fts5_totals(store):
            return None  # out of step with the table: never score from it
        _OPENED[store] = (key, index)
        return index

    def _spanning(
        self, text: str
    ) -> list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] | None:
        """(keys, instances) of a phrase with separators inside (``"search index"``):
        the columns holding every word-sized piece of it, from the postings, then the
        phrase counted in those columns' text.  None when it cannot be narrowed so (no
        piece of three characters, too many columns, no texts to read)."""
        exact = text.translate(FOLD_EXACT)
        if self.texts is None or len(exact) < MIN_FOLDED_CHARS:
            return None
        pieces = [p for p in text.translate(FOLD).split(" ") if len(p) >= MIN_FOLDED_CHARS]
        if not pieces:
            return None
        candidates: npt.NDArray[np.int64] | None = None
        for piece in sorted(set(pieces), key=len, reverse=True):
            found = [keys for keys, _ in self._postings(piece)]
            keys = np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)
            keys = keys[self.alive[keys // COLUMNS]]
            candidates = keys if candidates is None else np.intersect1d(candidates, keys, True)
            if not len(candidates):
                break
        assert candidates is not None
        if len(candidates) > _MAX_SPANNING_COLUMNS:
            return None
        texts = self.texts(np.unique(candidates // COLUMNS).tolist())
        counts = np.asarray(
            [
                count_in(texts.get(int(key) // COLUMNS, _NO_TEXT)[int(key) % COLUMNS], exact)
                for key in candidates
            ],
            dtype=np.float64,
        )
        held = counts > 0
        return [(candidates[held], counts[held])]

    def _exact(self, weights: tuple[float, float, float]) -> bool:
        """Whether adding ``weights`` instance by instance is exact, so the products of
        the counts and the weights sum to FTS5's double: every weight a multiple of
        2**-16 below 2**20, and a row's instances (at most its tokens) below 2**16."""
        if self.most_row_tokens >= 2**16:
            return False
        return all(w * _EXACT_SCALE == int(w * _EXACT_SCALE) and abs(w) < 2.0**20 for w in weights)

    def phrase_terms(self, phrase: str, weights: tuple[float, float, float]) -> PhraseTerms | None:
        """The rows matching quoted ``phrase`` with their bm25 terms; None for a phrase
        the postings cannot count (SQLite answers it)."""
        text = phrase[1:-1].replace('""', '"')
        folded = fold_phrase(text)
        try:
            parts = self._postings(folded) if folded is not None else self._spanning(text)
        finally:
            for segment in self.segments:
                segment.release_pages()
        if parts is None:
            return None
        space = len(self.alive) * COLUMNS
        exact = self._exact(weights)
        keys, counts = _joined(parts)
        del parts
        if len(keys) * _SPARSE_SHARE < space:
            # few postings: gather them by row
            rows, inverse = np.unique(keys // COLUMNS, return_inverse=True)
            gathered = (
                np.bincount(
                    inverse * COLUMNS + keys % COLUMNS,
                    weights=counts,
                    minlength=len(rows) * COLUMNS,
                )
                .reshape(-1, COLUMNS)
                .astype(np.float64, copy=False)
            )
            live = self.alive[rows]
            rowids, per_column = rows[live], gathered[live]
            frequency = (
                per_column @ np.asarray(weights, dtype=np.float64)
                if exact
                else _added_one_by_one(per_column, weights)
            )
        else:
            # many: one array over every (row, column)
            dense = np.bincount(keys, weights=counts, minlength=space).astype(
                np.float64, copy=False
            )
            del keys, counts
            by_row = dense.reshape(-1, COLUMNS)
            if exact:
                every = by_row @ np.asarray(weights, dtype=np.float64)
                # with every weight positive a row matches exactly where it scores
                hit = every > 0 if min(weights) > 0 else (by_row > 0).any(axis=1)
                rowids = np.flatnonzero(hit & self.alive)
                frequency = every[rowids]
            else:
                rowids = np.flatnonzero((by_row > 0).any(axis=1) & self.alive)
                frequency = _added_one_by_one(by_row[rowids], weights)
        phrase_idf = fts5_idf(self.row_count, len(rowids))
        terms = phrase_idf * ((frequency * (_K1 + 1.0)) / (frequency + self.length_norm[rowids]))
        return PhraseTerms(rowids.astype(np.int64), terms)


def _joined(
    parts: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The segments' (keys, instances) as one pair (no copy for one segment)."""
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    return np.concatenate([k for k, _ in parts]), np.concatenate([c for _, c in parts])


def _added_one_by_one(
    per_column: npt.NDArray[np.float64], weights: tuple[float, float, float]
) -> npt.NDArray[np.float64]:
    """Each row's weighted instances as FTS5 adds them: one column weight per instance,
    the heading's first, then the context's, then the content's (rounding each time)."""
    total = np.zeros(len(per_column), dtype=np.float64)
    for column, weight in enumerate(weights):
        counts = per_column[:, column]
        for step in range(int(counts.max()) if len(counts) else 0):
            adding = counts > step
            total[adding] += weight
    return total


#: a row's (heading, context, content), as ``fts_chunks`` indexes them
ColumnTexts = tuple[str | None, str | None, str | None]
_NO_TEXT: ColumnTexts = (None, None, None)


# ------------------------------------------------------------------- manifest


def _decode_manifest(kept: str | None) -> dict[str, Any] | None:
    """The kept manifest; None when there is none or it is not this version's."""
    if kept is None:
        return None
    try:
        manifest = json.loads(kept)
    except ValueError:
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT:
        return None
    if manifest.get("tokenizer") != list(TRIGRAM_ARGS):
        return None
    if not isinstance(manifest.get("segments"), list) or not isinstance(manifest.get("dead"), list):
        return None
    return manifest


def _answers_for(manifest: dict[str, Any], store: Store, state: list[int]) -> bool:
    """Whether ``manifest`` is the one of the store's current state."""
    return (
        manifest.get("index_id") == store.index_id
        and manifest.get("generation") == store.generation
        and manifest.get("state") == state
    )


def _fts5_totals(store: Store) -> tuple[int, int]:
    """FTS5's own row count and token total of ``fts_chunks`` (its averages record)."""
    row = store.conn.execute("SELECT block FROM fts_chunks_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return (0, 0)
    values = _varints(bytes(row[0]))
    return (values[0], sum(values[1:])) if values else (0, 0)


def _varints(data: bytes) -> list[int]:
    """SQLite's big-endian varints (7 bits a byte, the ninth byte whole), back to back."""
    values: list[int] = []
    at = 0
    while at < len(data):
        value = 0
        for position in range(9):
            if at >= len(data):
                return values
            byte = data[at]
            at += 1
            if position == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
    return values


@dataclass
class WrittenRows:
    """The chunks one indexer run writes, counted into postings as it writes them.

    The ``i``-th row added is chunk ``after + 1 + i``: AUTOINCREMENT gives the run's
    chunks the ids after the highest one ever given (``after``, read before the first
    write), in the order they are written.  :func:`refresh_word_index` uses them when
    the table's new ids are exactly those, and reads the table otherwise.  Every
    ``_BUILD_ROWS`` rows become a segment kept in a scratch file in ``folder`` and
    mapped, as a build from the table does, so only one batch's counts are held.
    """

    after: int
    folder: Path | None = None
    builder: SegmentBuilder = field(default_factory=SegmentBuilder)
    #: the full batches' segments, and their scratch files (None: held in memory)
    batches: list[tuple[Segment, Path | None]] = field(default_factory=list)
    batched_rows: int = 0

    @property
    def rows(self) -> int:
        return self.batched_rows + self.builder.rows

    def add(self, heading: str | None, context: str | None, content: str | None) -> None:
        self.builder.add(heading, context, content)
        if self.builder.rows >= _BUILD_ROWS:
            self._close_batch()

    def _close_batch(self) -> None:
        first = self.after + 1 + self.batched_rows
        segment = self.builder.segment(np.arange(first, first + self.builder.rows, dtype=np.int64))
        self.batched_rows += self.builder.rows
        self.builder = SegmentBuilder()
        path = None
        if self.folder is not None:
            path = self.folder / f".{MANIFEST_PREFIX}batch-{uuid.uuid4().hex[:12]}.seg"
            try:
                write_segment(segment, path)
                segment = read_segment(path)
            except (OSError, ValueError):
                remove_with_seal(path)
                path = None  # held in memory instead
        self.batches.append((segment, path))

    def segment(self) -> Segment:
        """Every row added, as one segment (made once: the indexer makes it while its
        last transaction commits, and the refresh after it takes it)."""
        if self.builder.rows or not self.batches:
            self._close_batch()
        if len(self.batches) > 1:
            whole = merge_segments([s for s, _ in self.batches], np.zeros(0, dtype=np.int64))
            self.discard()
            self.batches = [(whole, None)]
        return self.batches[0][0]

    def discard(self) -> None:
        """Remove the scratch files (what was mapped from them stays readable)."""
        for _, path in self.batches:
            if path is not None:
                remove_with_seal(path)


@dataclass(frozen=True)
class KeptPostings:
    """The postings of a new index state: its segment files are written; the indexer
    keeps :attr:`manifest` under :data:`WORD_POSTINGS_META` in its transaction, then
    calls :meth:`remove_others`."""

    folder: Path
    manifest: str
    segments: frozenset[str]

    def remove_others(self) -> None:
        """Drop the segment files the kept manifest does not name (older states', other
        index ids'), the manifest files of earlier versions, and scratch files a killed
        build left."""
        for path in [
            *self.folder.glob(f"{MANIFEST_PREFIX}*"),
            *self.folder.glob(f".{MANIFEST_PREFIX}*"),
        ]:
            if path.name.removesuffix(SEAL_SUFFIX) not in self.segments:
                with contextlib.suppress(OSError):
                    path.unlink()


def refresh_word_index(store: Store, written: WrittenRows | None = None) -> KeptPostings | None:
    """The postings of the store's current state (the indexer calls this after its
    writes, under the index lock, inside one read snapshot): None when the kept ones
    are current.

    ``written``: the chunks this run wrote, already counted (not read back).  An
    optimisation only: a folder that cannot be written keeps nothing new, and
    searches ask SQLite instead.
    """
    folder = store.path.parent
    index_id = store.index_id
    ids = store.chunk_ids()
    highest = int(ids[-1]) if len(ids) else 0
    state = [highest, len(ids)]
    kept = _decode_manifest(store.get_meta(WORD_POSTINGS_META))
    if kept is not None and _answers_for(kept, store, state) and _readable(folder, kept):
        if written is not None:
            written.discard()
        return None
    segments, names, dead = _previous(folder, kept if _older_of(kept, store) else None)
    covered = _covered(segments, dead)
    new_ids = np.setdiff1d(ids, covered, assume_unique=True)
    dead = np.union1d(dead, np.setdiff1d(covered, ids, assume_unique=True))
    entries: list[tuple[Segment, str | None]] = list(zip(segments, names, strict=True))
    try:
        if len(new_ids):
            entries += _build_new(store, new_ids, folder, written)
        if not entries:
            entries = [(build_segment([]), None)]
        entries, dead = _compact(entries, dead)
        names = [name for _, name in entries if name is not None]
        built = [segment for segment, name in entries if name is None]
        files = [_write_new(folder, index_id, segment) for segment in built]
    except OSError:
        return None
    finally:
        if written is not None:
            written.discard()
    manifest = {
        "format": _FORMAT,
        "tokenizer": list(TRIGRAM_ARGS),
        "index_id": index_id,
        "generation": store.generation,
        "state": state,
        "segments": names + files,
        "dead": [int(d) for d in dead],
    }
    return KeptPostings(folder, json.dumps(manifest), frozenset(names + files))


def _older_of(manifest: dict[str, Any] | None, store: Store) -> bool:
    """Whether ``manifest`` is an earlier state of this database (its segments can be
    carried over)."""
    return (
        manifest is not None
        and manifest.get("index_id") == store.index_id
        and isinstance(manifest.get("generation"), int)
        and manifest["generation"] <= store.generation
    )


def _readable(folder: Path, manifest: dict[str, Any]) -> bool:
    try:
        for name in manifest["segments"]:
            read_segment(folder / str(name))
    except Exception:  # missing or damaged in any way: built again
        return False
    return True


def _previous(
    folder: Path, manifest: dict[str, Any] | None
) -> tuple[list[Segment], list[str], npt.NDArray[np.int64]]:
    """The kept older state's segments (their file names) and dead rows, if any."""
    if manifest is not None:
        try:
            names = [str(n) for n in manifest["segments"]]
            segments = [read_segment(folder / n) for n in names]
            return segments, names, np.asarray(manifest["dead"], dtype=np.int64)
        except Exception:  # missing or damaged in any way: built afresh
            pass
    return [], [], np.zeros(0, dtype=np.int64)


def _covered(segments: list[Segment], dead: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    if not segments:
        return np.zeros(0, dtype=np.int64)
    rows = np.concatenate([s.rows for s in segments])
    if len(rows) > 1 and not np.all(rows[1:] > rows[:-1]):
        # segments hold disjoint rows, mostly in order already: a sort, not numpy's
        # hashing unique (twenty times slower on 100,000 ids)
        rows = np.sort(rows)
        rows = rows[np.concatenate([[True], rows[1:] != rows[:-1]])]
    return np.setdiff1d(rows, dead, assume_unique=True)


def _build_new(
    store: Store, ids: npt.NDArray[np.int64], folder: Path, written: WrittenRows | None
) -> list[tuple[Segment, str | None]]:
    """The segments of the chunks ``ids`` (ascending): those this run wrote from
    ``written``, when they are exactly the ids above ``written.after``; the others
    (and all of them otherwise) read from the table."""
    if written is None or not written.rows:
        return _build(store, ids, folder)
    fresh = ids[ids > written.after]
    expected = np.arange(written.after + 1, written.after + 1 + written.rows)
    if not np.array_equal(fresh, expected):
        return _build(store, ids, folder)
    older = ids[ids <= written.after]
    built = _build(store, older, folder) if len(older) else []
    return [*built, (written.segment(), None)]


def _build(
    store: Store, ids: npt.NDArray[np.int64], folder: Path
) -> list[tuple[Segment, str | None]]:
    """One segment over the chunks ``ids`` (ascending), read and folded in batches.

    Each batch of rows is written to a scratch file and mapped back, then the batches
    are merged: one batch's Python objects are held at a time, and the table ends up
    with one vocabulary (searching one costs a phrase one scan, not one per batch).
    """
    wanted = set(ids.tolist())
    cursor = store.conn.execute(
        "SELECT id, heading, context_text, content FROM chunks WHERE id >= ? ORDER BY id",
        (int(ids[0]),),
    )
    scratch: list[Path] = []
    batches: list[Segment] = []
    batch: list[tuple[int, str | None, str | None, str | None]] = []
    try:
        for row in cursor:
            if int(row[0]) not in wanted:
                continue
            batch.append((int(row[0]), row[1], row[2], row[3]))
            if len(batch) >= _BUILD_ROWS:
                path = folder / f".{MANIFEST_PREFIX}batch-{uuid.uuid4().hex[:12]}.seg"
                scratch.append(path)
                write_segment(build_segment(batch), path)
                batches.append(read_segment(path))
                batch = []
        if batch or not batches:
            batches.append(build_segment(batch))
        if len(batches) == 1:
            return [(batches[0], None)]
        return [(merge_segments(batches, np.zeros(0, dtype=np.int64)), None)]
    finally:
        for path in scratch:
            remove_with_seal(path)


def _compact(
    entries: list[tuple[Segment, str | None]], dead: npt.NDArray[np.int64]
) -> tuple[list[tuple[Segment, str | None]], npt.NDArray[np.int64]]:
    """Keep the segments few and their dead rows few, touching only small ones.

    A segment of which more than a quarter of the rows are dead is rewritten without
    them; the small segments (the ones edits add) are merged into one once there are
    more than a few.  Full-size segments are never merged with each other, so no
    step holds more than one segment's postings twice.  (Segment, None) is a segment
    still to be written.
    """
    kept: list[tuple[Segment, str | None]] = []
    for segment, name in entries:
        gone = int(np.isin(segment.rows, dead).sum()) if len(dead) else 0
        if gone > _DEAD_SHARE * len(segment.rows):
            kept.append((merge_segments([segment], dead), None))
        else:
            kept.append((segment, name))
    small = [entry for entry in kept if len(entry[0].rows) < _SMALL_ROWS]
    if len(small) > _MAX_SMALL:
        merged = merge_segments([segment for segment, _ in small], dead)
        kept = [entry for entry in kept if len(entry[0].rows) >= _SMALL_ROWS]
        kept.append((merged, None))
    rows = np.concatenate([segment.rows for segment, _ in kept])
    return kept, dead[np.isin(dead, rows)]


def _write_new(folder: Path, index_id: str, segment: Segment) -> str:
    name = f"{MANIFEST_PREFIX}{index_id}-{uuid.uuid4().hex[:12]}.seg"
    write_segment(segment, folder / name)  # sealed, through a temporary file
    return name
