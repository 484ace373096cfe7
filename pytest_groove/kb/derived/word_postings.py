"""Words of the trigram table's rows with their counts: a segment of postings.

A *segment* covers some chunks (rows of ``fts_chunks``).  For each folded word of at
least three characters (:mod:`.trigram_fold`) it lists every (row, column) holding it
and how often; for each row it keeps the row's trigram token count.  That is enough
to count a separator-free phrase in every row without SQLite: an occurrence of such a
phrase lies inside one word, so its count in a column is the sum, over the words that
contain it, of the occurrences in the word times the word's count in the column.

The vocabulary is held as two strings of words joined by newlines (ASCII words first,
then the rest), so finding the words that contain a phrase is one substring search
per string in C; a phrase with a non-ASCII character cannot be inside an ASCII word,
and the ASCII string stays one byte a character.

A segment is written to one file: a small JSON header, then the arrays, each aligned
so that the file can be memory-mapped and the arrays read in place.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from pytest_groove.files.seal import open_cache_file, vouches, write_sealed
from pytest_groove.text.trigram_fold import MIN_FOLDED_CHARS, count_overlapping, fold_words

__all__ = [
    "COLUMNS",
    "SEGMENT_FORMAT",
    "Segment",
    "SegmentBuilder",
    "Vocabulary",
    "build_segment",
    "merge_segments",
    "read_segment",
    "write_segment",
]

#: heading, context, content: the columns of ``fts_chunks`` in their order
COLUMNS = 3
_MAGIC = b"GROOVEWP"
#: the layout of a segment file
SEGMENT_FORMAT = 1
_ALIGN = 64


@dataclass(frozen=True)
class Segment:
    """The postings of some rows; arrays may be views of a memory-mapped file."""

    #: ASCII words, then the others, each joined by "\n" with one leading "\n"
    ascii_words: str
    other_words: str
    #: offset of each word in its string (ASCII words' ids first)
    ascii_starts: npt.NDArray[np.int64]
    other_starts: npt.NDArray[np.int64]
    #: postings of word ``w`` are ``[word_ends[w - 1], word_ends[w])``
    word_ends: npt.NDArray[np.int64]
    #: ``row * COLUMNS + column`` of each posting, and the word's count there (kept in
    #: the narrowest integer type that holds them)
    keys: npt.NDArray[Any]
    counts: npt.NDArray[Any]
    #: the rows this segment covers (ascending) and each row's trigram tokens
    rows: npt.NDArray[np.int64]
    row_tokens: npt.NDArray[np.int64]
    #: the file mapping the postings are read from (None: built in memory)
    mapping: mmap.mmap | None = field(default=None, compare=False, repr=False)

    def release_pages(self) -> None:
        """Let go of the mapped pages a search touched.  The pages stay in the OS's file
        cache, so the next phrase reads them again cheaply; without this every page a
        phrase touched (a word's postings spread over a page each) stayed counted in
        the process's memory until it ended."""
        if self.mapping is not None and hasattr(mmap, "MADV_DONTNEED"):
            self.mapping.madvise(mmap.MADV_DONTNEED)

    @classmethod
    def over(
        cls,
        vocabulary: Vocabulary,
        word_ends: npt.NDArray[np.int64],
        keys: npt.NDArray[Any],
        counts: npt.NDArray[Any],
        rows: npt.NDArray[np.int64],
        row_tokens: npt.NDArray[np.int64],
    ) -> Segment:
        """A segment held in memory, its words those of ``vocabulary``."""
        return cls(
            ascii_words=vocabulary.ascii_words,
            other_words=vocabulary.other_words,
            ascii_starts=vocabulary.ascii_starts,
            other_starts=vocabulary.other_starts,
            word_ends=word_ends,
            keys=keys,
            counts=counts,
            rows=rows,
            row_tokens=row_tokens,
        )

    @property
    def vocabulary(self) -> Vocabulary:
        return Vocabulary(self.ascii_words, self.ascii_starts, self.other_words, self.other_starts)

    def postings_of(self, phrase: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """(keys, instances) of ``phrase`` (folded, separator-free) in this segment."""
        return self.postings_of_words(*self.vocabulary.containing(phrase))

    def postings_of_words(
        self, ids: npt.NDArray[np.int64], occurrences: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """(keys, instances) of the words ``ids``, each holding the phrase ``occurrences``
        times: a posting's instances are its count times that."""
        if not len(ids):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        ends = self.word_ends[ids]
        starts = np.where(ids > 0, self.word_ends[np.maximum(ids - 1, 0)], 0)
        lengths = ends - starts
        total = int(lengths.sum())
        # the postings of every matched word, concatenated, without a Python loop
        picked = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        picked += np.arange(total, dtype=np.int64)  # in place: a phrase's peak memory
        instances = self.counts[picked].astype(np.float64)
        if int(occurrences.max()) > 1:
            instances *= np.repeat(occurrences, lengths)
        keys = self.keys[picked].astype(np.int64)
        del picked
        return keys, instances


@dataclass(frozen=True)
class Vocabulary:
    """Words as two strings (ASCII ones first, then the rest), each word preceded by a
    newline; a word's id is its place, ASCII words numbered first."""

    ascii_words: str
    ascii_starts: npt.NDArray[np.int64]
    other_words: str
    other_starts: npt.NDArray[np.int64]

    @classmethod
    def of(cls, words: list[str]) -> tuple[Vocabulary, npt.NDArray[np.int64]]:
        """The vocabulary of ``words`` and each word's id in it."""
        is_ascii = np.fromiter((w.isascii() for w in words), dtype=bool, count=len(words))
        order = np.concatenate((np.flatnonzero(is_ascii), np.flatnonzero(~is_ascii)))
        ids = np.empty(len(words), dtype=np.int64)
        ids[order] = np.arange(len(words), dtype=np.int64)
        ordered = [words[i] for i in order.tolist()]
        split = int(is_ascii.sum())
        vocabulary = cls(
            _joined(ordered[:split]),
            _starts(ordered[:split]),
            _joined(ordered[split:]),
            _starts(ordered[split:]),
        )
        return vocabulary, ids

    @property
    def words(self) -> list[str]:
        return self.ascii_words.split("\n")[1:] + self.other_words.split("\n")[1:]

    def containing(self, phrase: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Ids of the words holding ``phrase`` and how often each holds it."""
        overlapping = _has_border(phrase)
        sources = [(self.other_words, self.other_starts, len(self.ascii_starts))]
        if phrase.isascii():
            # a phrase with a non-ASCII character cannot be inside an ASCII word
            sources.insert(0, (self.ascii_words, self.ascii_starts, 0))
        ids: list[npt.NDArray[np.int64]] = []
        found: list[npt.NDArray[np.int64]] = []
        for text, starts, first_id in sources:
            positions = _find_all(text, phrase)
            if not len(positions):
                continue
            local = np.searchsorted(starts, positions, side="right") - 1
            if overlapping:
                # a phrase that can overlap itself ("aaa", "abab"): count each word
                words = np.unique(local)
                found.append(
                    np.asarray(
                        [count_overlapping(_word_at(text, starts, w), phrase) for w in words],
                        dtype=np.int64,
                    )
                )
                ids.append(words + first_id)
            else:
                # non-overlapping matches are every occurrence: count them per word
                words, per_word = np.unique(local, return_counts=True)
                ids.append(words + first_id)
                found.append(per_word.astype(np.int64))
        if not ids:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        return np.concatenate(ids).astype(np.int64), np.concatenate(found)


def _find_all(text: str, phrase: str) -> npt.NDArray[np.int64]:
    """Start of every non-overlapping occurrence of ``phrase`` in ``text`` (``str.find``
    scans in C several times faster than a regular expression does)."""
    found: list[int] = []
    step = len(phrase)
    at = text.find(phrase)
    while at >= 0:
        found.append(at)
        at = text.find(phrase, at + step)
    return np.asarray(found, dtype=np.int64)


def _has_border(phrase: str) -> bool:
    """Whether a proper prefix of ``phrase`` is also its suffix (occurrences can overlap)."""
    return any(phrase[:size] == phrase[-size:] for size in range(1, len(phrase)))


def _word_at(text: str, starts: npt.NDArray[np.int64], index: int) -> str:
    begin = int(starts[index]) + 1
    end = int(starts[index + 1]) if index + 1 < len(starts) else len(text)
    return text[begin:end]


class _Vocabulary(dict[str, int]):
    """Word -> id, a new word getting the next id (looked up through ``map`` in C)."""

    def __missing__(self, word: str) -> int:
        self[word] = number = len(self)
        return number


#: words gathered before they are counted into postings (bounds the Python list)
_COUNT_TOKENS = 1 << 18


class SegmentBuilder:
    """A segment's rows added one at a time, their chunk ids given at the end.

    Each column's words are looked up in one vocabulary as the row comes (one C-level
    ``map`` over the column's words); every ``_COUNT_TOKENS`` words, the gathered
    ones are counted per (word, column) with one numpy sort.  The indexer adds each
    chunk as it writes it, so the postings cost no pass over the table afterwards.
    """

    def __init__(self) -> None:
        self._vocabulary = _Vocabulary()
        self._lookup = self._vocabulary.__getitem__
        #: words (vocabulary ids) not counted yet, column after column
        self._words: list[int] = []
        #: each such column's word count, and ``row number * COLUMNS + column``
        self._spans: list[int] = []
        self._columns: list[int] = []
        #: counted postings: (vocabulary id, row number * COLUMNS + column, count)
        self._counted: list[tuple[npt.NDArray[np.int32], ...]] = []
        self._row_tokens: list[int] = []

    @property
    def rows(self) -> int:
        return len(self._row_tokens)

    def add(self, heading: str | None, context: str | None, content: str | None) -> None:
        """The next row's (heading, context, content), as ``fts_chunks`` indexes them."""
        number, tokens = len(self._row_tokens), 0
        for column, text in enumerate((heading, context, content)):
            if not text:
                continue
            folded = fold_words(text)
            tokens += max(0, len(folded) - 2)
            before = len(self._words)
            self._words.extend(map(self._lookup, folded.split()))
            self._spans.append(len(self._words) - before)
            self._columns.append(number * COLUMNS + column)
        self._row_tokens.append(tokens)
        if len(self._words) >= _COUNT_TOKENS:
            self._count()

    def _count(self) -> None:
        """The gathered words as (word, column, count) postings, ordered by both."""
        if self._words:
            words = np.fromiter(self._words, dtype=np.int64, count=len(self._words))
            columns = np.repeat(
                np.asarray(self._columns, dtype=np.int64), np.asarray(self._spans, dtype=np.int64)
            )
            width = int(columns[-1]) + 1
            pairs, counts = np.unique(words * width + columns, return_counts=True)
            self._counted.append(
                (
                    (pairs // width).astype(np.int32),
                    (pairs % width).astype(np.int32),
                    counts.astype(np.int32),
                )
            )
        self._words, self._spans, self._columns = [], [], []

    def segment(self, row_ids: npt.NDArray[np.int64]) -> Segment:
        """The segment of the rows added, the ``i``-th one being chunk ``row_ids[i]``
        (ascending); the words under three characters are left out."""
        if len(row_ids) != self.rows:
            raise ValueError(f"{len(row_ids)} ids for {self.rows} rows")
        self._count()
        every = list(self._vocabulary)
        long_enough = np.fromiter(
            (len(w) >= MIN_FOLDED_CHARS for w in every), dtype=bool, count=len(every)
        )
        words = [w for w, ok in zip(every, long_enough.tolist(), strict=True) if ok]
        vocabulary, numbered = Vocabulary.of(words)
        final = np.full(len(every), -1, dtype=np.int32)
        final[long_enough] = numbered
        ids = np.asarray(row_ids, dtype=np.int64)
        ends, keys, counts = self._postings(final, len(words), ids)
        row_tokens = np.asarray(self._row_tokens, dtype=np.int64)
        return Segment.over(vocabulary, ends, keys, counts, ids, row_tokens)

    def _postings(
        self, final: npt.NDArray[np.int32], words: int, ids: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[Any], npt.NDArray[Any]]:
        """``word_ends``, ``keys`` and ``counts`` of the counted postings, their words
        numbered by ``final`` (-1: left out).  Held as int32 where it fits and each
        temporary dropped once used: a batch of 25,000 rows peaks at a few bytes more
        than its postings' arrays, not at several int64 copies of them."""
        none = np.zeros(0, dtype=np.int32)
        parts, self._counted = self._counted or [(none, none, none)], []
        word = final[np.concatenate([p[0] for p in parts])]
        # grouped by word; within a word in row order (stable: the parts come in it);
        # the words left out (-1) sort first and are cut off
        by_word = np.argsort(word, kind="stable")
        by_word = by_word[int(np.count_nonzero(word < 0)) :]
        word = word[by_word]
        ends = np.searchsorted(word, np.arange(words, dtype=np.int32), side="right")
        del word
        columns = np.concatenate([p[1] for p in parts])[by_word]
        counts = np.concatenate([p[2] for p in parts])[by_word]
        del parts, by_word
        wide = len(ids) and int(ids[-1]) * COLUMNS + COLUMNS > 2**31 - 1
        keys = ids.astype(np.int64 if wide else np.int32)[columns // COLUMNS]
        keys *= COLUMNS
        keys += columns % COLUMNS
        return ends.astype(np.int64), _narrow(keys), _narrow(counts)


def build_segment(rows: Iterable[tuple[int, str | None, str | None, str | None]]) -> Segment:
    """A segment over ``(chunk id, heading, context, content)`` rows, ids ascending."""
    builder = SegmentBuilder()
    ids: list[int] = []
    for row_id, heading, context, content in rows:
        ids.append(row_id)
        builder.add(heading, context, content)
    return builder.segment(np.asarray(ids, dtype=np.int64))


def _joined(words: list[str]) -> str:
    return "".join("\n" + w for w in words)


def _starts(words: list[str]) -> npt.NDArray[np.int64]:
    lengths = np.fromiter((len(w) + 1 for w in words), dtype=np.int64, count=len(words))
    return (np.cumsum(lengths) - lengths).astype(np.int64)


def merge_segments(segments: list[Segment], dead: npt.NDArray[np.int64]) -> Segment:
    """One segment holding every live row of ``segments`` (rows in ``dead`` dropped).

    Each input already lists its postings word by word, so the output is filled slice
    by slice: a word's postings from the first input, then from the second, and so on.
    Nothing is sorted and nothing but the output and one input's index arithmetic is
    held (a 100k-chunk table: about 60 MiB of output, not the 300 MiB of a sort).
    """
    numbered, inputs = _numbered_inputs(segments, dead)
    vocabulary, renumber = Vocabulary.of(list(numbered))
    totals = np.zeros(len(numbered), dtype=np.int64)
    for _, shared, per_word in inputs:
        totals[renumber[shared]] += per_word
    ends = np.cumsum(totals).astype(np.int64)
    keys, counts, row_ids, row_tokens = _merged_postings(inputs, renumber, ends, totals, dead)
    row_order = np.argsort(row_ids, kind="stable")
    return Segment.over(
        vocabulary, ends, _narrow(keys), _narrow(counts), row_ids[row_order], row_tokens[row_order]
    )


#: a segment to merge, its words' numbers in the merged vocabulary (before
#: :meth:`Vocabulary.of` renumbers them) and its live postings per word
_MergeInput = tuple[Segment, npt.NDArray[np.int64], npt.NDArray[np.int64]]


def _numbered_inputs(
    segments: list[Segment], dead: npt.NDArray[np.int64]
) -> tuple[dict[str, int], list[_MergeInput]]:
    """Every word of ``segments`` numbered in order of first sight, and each segment's
    words' numbers and live postings per word."""
    numbered: dict[str, int] = {}
    inputs: list[_MergeInput] = []
    for segment in segments:
        words = segment.vocabulary.words
        shared = np.fromiter(
            (numbered.setdefault(w, len(numbered)) for w in words), dtype=np.int64, count=len(words)
        )
        live = (
            ~np.isin(segment.keys // COLUMNS, dead)
            if len(dead)
            else np.ones(len(segment.keys), bool)
        )
        # live postings per word of this input
        owner = np.repeat(np.arange(len(words), dtype=np.int64), _lengths(segment.word_ends))
        per_word = np.bincount(owner[live], minlength=len(words)).astype(np.int64)
        inputs.append((segment, shared, per_word))
    return numbered, inputs


def _merged_postings(
    inputs: list[_MergeInput],
    renumber: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    totals: npt.NDArray[np.int64],
    dead: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The merged postings' keys and counts, word by word, and the live rows (in input
    order) with their tokens."""
    filled = ends - totals  # where each word's next posting goes
    size = int(ends[-1]) if len(ends) else 0
    key_type = np.result_type(*(s.keys.dtype for s, _, _ in inputs)) if inputs else np.int32
    count_type = np.result_type(*(s.counts.dtype for s, _, _ in inputs)) if inputs else np.uint16
    keys = np.empty(size, dtype=key_type)
    counts = np.empty(size, dtype=count_type)
    rows: list[npt.NDArray[np.int64]] = []
    tokens: list[npt.NDArray[np.int64]] = []
    for segment, shared, per_word in inputs:
        target = renumber[shared]
        if len(dead):
            kept = ~np.isin(segment.keys // COLUMNS, dead)
            source_keys, source_counts = segment.keys[kept], segment.counts[kept]
        else:
            source_keys, source_counts = segment.keys, segment.counts
        # this input's words' slices go to filled[target], in its word order
        destination = np.repeat(filled[target] - (np.cumsum(per_word) - per_word), per_word)
        destination += np.arange(len(source_keys), dtype=np.int64)
        keys[destination] = source_keys
        counts[destination] = source_counts
        filled[target] += per_word
        alive = ~np.isin(segment.rows, dead)
        rows.append(segment.rows[alive])
        tokens.append(segment.row_tokens[alive])
    empty = np.zeros(0, dtype=np.int64)
    row_ids = np.concatenate(rows) if rows else empty
    return keys, counts, row_ids, np.concatenate(tokens) if tokens else empty


def _lengths(ends: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return np.diff(ends, prepend=0).astype(np.int64)


def _narrow(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The smallest of uint16 / int32 / int64 that holds ``array`` (postings are most of
    the memory, and most counts are small)."""
    return np.ascontiguousarray(array, dtype=_narrowest(array))


# ---------------------------------------------------------------------- on disk

_ARRAYS = ("ascii_starts", "other_starts", "word_ends", "keys", "counts", "rows", "row_tokens")


def write_segment(segment: Segment, path: Path) -> None:
    """Write ``segment`` to ``path``, sealed (:func:`~pytest_groove.files.seal.write_sealed`:
    a temporary file renamed into place).  Raises :class:`OSError`."""
    write_sealed(path, lambda handle: _write_to(segment, handle))


def _write_to(segment: Segment, handle: BinaryIO) -> None:
    blobs: list[tuple[str, bytes, str]] = [
        ("ascii_words", segment.ascii_words.encode("utf-8"), "u1"),
        ("other_words", segment.other_words.encode("utf-8"), "u1"),
    ]
    for name in _ARRAYS:
        array: npt.NDArray[Any] = getattr(segment, name)
        narrow = _narrowest(array)
        blobs.append((name, np.ascontiguousarray(array, dtype=narrow).tobytes(), narrow))
    layout: list[dict[str, Any]] = []
    offset = 0
    for name, data, dtype in blobs:
        layout.append({"name": name, "offset": offset, "bytes": len(data), "dtype": dtype})
        offset += -(-len(data) // _ALIGN) * _ALIGN
    header = json.dumps({"format": SEGMENT_FORMAT, "arrays": layout}).encode("utf-8")
    start = -(-(len(_MAGIC) + 8 + len(header)) // _ALIGN) * _ALIGN
    handle.write(_MAGIC + struct.pack("<Q", len(header)) + header)
    for (_, data, _), entry in zip(blobs, layout, strict=True):
        handle.seek(start + int(entry["offset"]))
        handle.write(data)
    handle.truncate(start + offset)


def _narrowest(array: npt.NDArray[Any]) -> str:
    if not len(array):
        return "<i4"
    low, high = int(array.min()), int(array.max())
    if low >= 0 and high < 2**16:
        return "<u2"
    return "<i4" if low >= -(2**31) and high < 2**31 else "<i8"


def read_segment(path: Path) -> Segment:
    """Map the segment at ``path``; raises ValueError (or OSError) for a file its seal
    does not vouch for (:mod:`~pytest_groove.files.seal`) or that does not add up."""
    handle = open_cache_file(path)  # never through a link, a pipe or a folder
    if handle is None:
        raise FileNotFoundError(path)
    with handle:
        if not vouches(handle, path):
            raise ValueError("not the bytes its writer sealed")
        if os.fstat(handle.fileno()).st_size == 0:
            raise ValueError("empty")
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        return _parse(mapped)
    except ValueError:
        raise
    except Exception as exc:  # KeyError, TypeError, struct.error, ...: not a segment
        raise ValueError("not a word-postings segment") from exc


def _parse(mapped: mmap.mmap) -> Segment:
    if mapped[: len(_MAGIC)] != _MAGIC:
        raise ValueError("not a word-postings segment")
    (size,) = struct.unpack("<Q", mapped[len(_MAGIC) : len(_MAGIC) + 8])
    if size > len(mapped):
        raise ValueError("cut short")
    header = json.loads(mapped[len(_MAGIC) + 8 : len(_MAGIC) + 8 + size])
    if header.get("format") != SEGMENT_FORMAT:
        raise ValueError("another format")
    start = -(-(len(_MAGIC) + 8 + size) // _ALIGN) * _ALIGN
    fields: dict[str, Any] = {}
    for entry in header["arrays"]:
        begin = start + int(entry["offset"])
        end = begin + int(entry["bytes"])
        if end > len(mapped):
            raise ValueError("cut short")
        if entry["dtype"] == "u1":
            fields[entry["name"]] = mapped[begin:end].decode("utf-8")
        else:
            dtype = np.dtype(entry["dtype"])
            raw = np.frombuffer(
                mapped, dtype=dtype, count=int(entry["bytes"]) // dtype.itemsize, offset=begin
            )
            # postings stay in the mapped file; the small arrays are copied as int64
            big = entry["name"] in ("keys", "counts")
            fields[entry["name"]] = raw if big else raw.astype(np.int64)
    segment = Segment(**fields, mapping=mapped)
    _check(segment)
    return segment


def _check(segment: Segment) -> None:
    words = len(segment.ascii_starts) + len(segment.other_starts)
    if len(segment.word_ends) != words or len(segment.keys) != len(segment.counts):
        raise ValueError("inconsistent lengths")
    if words and int(segment.word_ends[-1]) != len(segment.keys):
        raise ValueError("inconsistent postings")
    if len(segment.rows) != len(segment.row_tokens):
        raise ValueError("inconsistent rows")
