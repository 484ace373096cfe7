"""Per-document results of a text scan over the indexed chunks, kept beside the index.

The golden-quote scan (:mod:`pytest_groove.evaluation.runs.findings`) asks which of a set of
needles each document quotes.  Its answer depends only on the needles and on each
document's chunk fields, yet reading every field of a large corpus in Python is most
of a no-op eval's cost.  So the answer is kept, per document, in a small JSON file in
the index folder, and reused:

- while the index is in the state it was scanned in (same database id and write
  generation: any write to the chunks bumps the generation), the kept answer is
  returned without reading a chunk;
- after writes, only the documents whose chunks changed are read and scanned again:
  the index stores with each document a digest of its chunks' fields (the text the
  scan reads, :mod:`~pytest_groove.kb.source.corpus_digest`), so a document whose path and
  digest are unchanged holds exactly the text it held, and telling which changed
  reads one small row a document.

The file is named by a hash of the scan's version and its needles, so each golden
set keeps its own; it is written to a temporary name, renamed (a reader sees a
whole file or none) and sealed (:mod:`~pytest_groove.files.seal`), and a file
that cannot be written (read-only index folder), read or vouched for (damaged) only
costs a full scan.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_groove.files.resource_limits import ResourceLimit
from pytest_groove.files.seal import open_vouched, remove_with_seal, seal_path, write_sealed
from pytest_groove.kb.derived.family import DerivedFamily, Retention
from pytest_groove.kb.source.records import ChunkText
from pytest_groove.kb.store.database import Store

__all__ = ["CACHE_PREFIX", "DERIVED_FILES", "KEEP_FILES", "cached_scan", "scan_key"]

CACHE_PREFIX = "quote-scan-"
#: scan files kept in one index folder (one per golden set, newest first)
KEEP_FILES = 8
#: the layout of the file itself (3: documents identified by their stored digest,
#: every path in one list and every signature in one string, quotes listed sparsely)
_FORMAT = 3
#: hex characters of a document's digest kept as its signature (64 bits)
_SIGNATURE_CHARS = 16
#: the scan files, in the table of derived files (:mod:`.families`)
DERIVED_FILES = (
    DerivedFamily(
        "quote scans",
        prefix=CACHE_PREFIX,
        suffixes=(".json",),
        retention=Retention.NEWEST,
        keep=KEEP_FILES,
        format=_FORMAT,
    ),
)

#: needles -> the chunks to scan -> document path -> indices of the needles it quotes
Scan = Callable[[Iterable[ChunkText]], dict[str, set[int]]]


def scan_key(version: str, needles: Sequence[str]) -> str:
    """What a kept scan answers: the scan rule's version and its set of needles."""
    digest = hashlib.sha256(f"{_FORMAT}\x00{version}".encode())
    for text in sorted(set(needles)):
        data = text.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


@dataclass(frozen=True)
class _Kept:
    index_id: str
    generation: int
    #: every scanned document, and its signature (:data:`_SIGNATURE_CHARS` hex
    #: characters of its stored digest) at the same place in one string
    paths: list[str]
    signatures: str
    #: path -> the sorted needle texts it quotes (a document quoting none is left out)
    quoted: dict[str, tuple[str, ...]]

    def signature_by_path(self) -> dict[str, str]:
        width = _SIGNATURE_CHARS
        return {
            doc_path: self.signatures[at * width : (at + 1) * width]
            for at, doc_path in enumerate(self.paths)
        }


def cached_scan(
    store: Store, needles: Sequence[str], version: str, scan: Scan
) -> dict[str, set[int]]:
    """``scan`` over every indexed chunk, answered from the kept file where it can be.

    ``needles`` are the texts ``scan`` looks for (its indices refer to this list) and
    ``version`` names the scan rule: a changed rule must change it.  The generation
    and the chunks are read in one snapshot: the caller's (``store.read_snapshot()``,
    the one that answered the searches), else one of its own.
    """
    if not needles:
        return {}
    with store.read_snapshot():  # the caller's, else one of its own
        return _cached_scan(store, needles, version, scan)


def _cached_scan(
    store: Store, needles: Sequence[str], version: str, scan: Scan
) -> dict[str, set[int]]:
    key = scan_key(version, needles)
    path = store.path.parent / f"{CACHE_PREFIX}{key[:32]}.json"
    index_id, generation = store.index_id, store.generation
    kept = _read(path, key, set(needles))
    if kept is not None and (kept.index_id, kept.generation) == (index_id, generation):
        with contextlib.suppress(OSError):
            # in use: the last file another golden set's scan drops (its seal's time:
            # touching the file itself would move the identity its seal records)
            os.utime(seal_path(path), follow_symlinks=False)
        return _as_indices(kept.quoted, needles)
    signatures = _signatures(store)
    old = {} if kept is None else kept.signature_by_path()
    quoted: dict[str, tuple[str, ...]] = {}
    stale: dict[str, int] = {}
    for doc_path, (doc_id, signature) in signatures.items():
        if old.get(doc_path) == signature:
            if kept is not None and doc_path in kept.quoted:
                quoted[doc_path] = kept.quoted[doc_path]
        else:
            stale[doc_path] = doc_id
    found = scan(_chunks_of(store, stale, everything=len(stale) == len(signatures)))
    for doc_path in stale:
        texts = tuple(sorted({needles[i] for i in found.get(doc_path, ())}))
        if texts:
            quoted[doc_path] = texts
    paths = list(signatures)
    joined = "".join(signatures[doc_path][1] for doc_path in paths)
    _write(path, key, _Kept(index_id, generation, paths, joined, quoted))
    return _as_indices(quoted, needles)


def _as_indices(quoted: dict[str, tuple[str, ...]], needles: Sequence[str]) -> dict[str, set[int]]:
    positions: dict[str, int] = {}
    for position, text in enumerate(needles):
        positions.setdefault(text, position)
    return {doc_path: {positions[text] for text in texts} for doc_path, texts in quoted.items()}


def _signatures(store: Store) -> dict[str, tuple[int, str]]:
    """Every document with chunks: path -> (document id, its signature: the first
    :data:`_SIGNATURE_CHARS` hex characters of the digest of its chunks' fields, the
    text the scan reads): one small row a document, no pass over the chunks."""
    width = _SIGNATURE_CHARS
    return {
        doc_path: (doc_id, digest[:width].ljust(width, "-"))
        for doc_path, doc_id, digest in store.document_chunk_digests()
    }


def _chunks_of(store: Store, documents: dict[str, int], *, everything: bool) -> Iterator[ChunkText]:
    """The chunks of ``documents`` (all of them with ``everything``: one pass)."""
    if everything:
        yield from store.iter_chunk_texts()
        return
    for doc_path, doc_id in sorted(documents.items()):
        for index, heading, context, content in store.conn.execute(
            "SELECT chunk_index, heading, context_text, content FROM chunks "
            "WHERE document_id = ? ORDER BY chunk_index",
            (doc_id,),
        ):
            yield ChunkText(doc_path, int(index), heading, context, str(content))


def _read(path: Path, key: str, needles: set[str]) -> _Kept | None:
    """The kept scan at ``path``; None when missing, of another key, or damaged in any
    way (anything but lists of strings where they belong, a quote that is none of
    ``needles``): then it is scanned again and rewritten."""
    try:
        handle = open_vouched(path)  # only a file its seal vouches for
        if handle is None:
            return None
        with handle:
            data: Any = json.loads(handle.read().decode("utf-8"))
        if data["format"] != _FORMAT or data["key"] != key:
            return None
        paths, signatures, quoted = data["paths"], data["signatures"], data["quoted"]
        if not (
            isinstance(paths, list)
            and all(isinstance(doc_path, str) for doc_path in paths)
            and isinstance(signatures, str)
            and len(signatures) == _SIGNATURE_CHARS * len(paths)
            and isinstance(quoted, dict)
            and all(
                isinstance(texts, list) and all(text in needles for text in texts)
                for texts in quoted.values()
            )
        ):
            return None
        kept = {str(doc_path): tuple(texts) for doc_path, texts in quoted.items()}
        return _Kept(str(data["index_id"]), int(data["generation"]), paths, signatures, kept)
    except ResourceLimit:
        raise  # out of open files or memory: no damage
    except Exception:
        return None  # missing or damaged in any way: scanned again and rewritten


def _write(path: Path, key: str, kept: _Kept) -> None:
    data = {
        "format": _FORMAT,
        "key": key,
        "index_id": kept.index_id,
        "generation": kept.generation,
        "paths": kept.paths,
        "signatures": kept.signatures,
        "quoted": {doc_path: list(texts) for doc_path, texts in kept.quoted.items()},
    }
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    try:
        write_sealed(path, lambda handle: handle.write(text))
    except OSError:
        return  # an optimisation only: a read-only or full index folder scans every time
    others = sorted(
        (p for p in path.parent.glob(f"{CACHE_PREFIX}*.json") if p != path),
        key=_mtime,
        reverse=True,
    )
    for old in others[KEEP_FILES - 1 :]:
        remove_with_seal(old)


def _mtime(path: Path) -> float:
    """When the scan at ``path`` was last written or used (its seal's time)."""
    times = []
    for name in (path, seal_path(path)):
        with contextlib.suppress(OSError):
            times.append(name.lstat().st_mtime)
    return max(times, default=0.0)
