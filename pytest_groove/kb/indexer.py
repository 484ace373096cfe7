"""Incremental indexing: bring an index up to date with the KB folder.

Per file: SHA-256 of the raw bytes decides.  Unchanged files are not even parsed;
renamed files (same bytes, new path) keep their rows; a file whose chunks did not
change (a frontmatter-only edit) only updates its document row; everything else is
re-chunked, re-embedded and written in one transaction.  Files that vanished are
pruned; files that could not be read keep their old rows (a transient error must not
delete data), while a file whose own bytes are refused (not UTF-8, no embeddable
chunk, over the size cap, a hard link) loses them: the index then holds what a fresh
index of the same tree would, so a cached index and a clean checkout score alike.
Concurrent indexers of one index serialise on a file lock.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_groove.embed.base import Embedder
from pytest_groove.errors import (
    GrooveError,
    IndexCorrupt,
    IndexUnwritable,
    clip_path,
)
from pytest_groove.files.beneath import index_folder_beneath
from pytest_groove.files.seal import is_vouched
from pytest_groove.kb.build_record import (
    context_mode_for,
    rebuild_reason,
    record_build,
    resolve_context_mode,
)
from pytest_groove.kb.checkpoints import checkpoints_apart
from pytest_groove.kb.derived.cache_check import check_caches, remove_caches
from pytest_groove.kb.derived.note_index import keeps_note_rows, note_index_for
from pytest_groove.kb.derived.vector_cache import cache_path
from pytest_groove.kb.derived.vectors import VectorIndex
from pytest_groove.kb.derived.word_index import (
    WORD_POSTINGS_META,
    KeptPostings,
    WrittenRows,
    refresh_word_index,
)
from pytest_groove.kb.heap import return_freed_memory
from pytest_groove.kb.index_group import IndexReport as IndexReport
from pytest_groove.kb.index_group import ScannedFile, WriteGroup
from pytest_groove.kb.notes import note_text_of
from pytest_groove.kb.progress import IndexProgress, ProgressTo
from pytest_groove.kb.reuse import KeyedEmbedder, Lookup
from pytest_groove.kb.source.parse import ParseFailure, parse_document
from pytest_groove.kb.source.read_files import FILE_SIZE_CAP as FILE_SIZE_CAP
from pytest_groove.kb.source.read_files import read_collected
from pytest_groove.kb.source.records import ParsedDocument
from pytest_groove.kb.source.walk import collect_files
from pytest_groove.kb.store.damage import check_database, clear_damage_records, record_checked
from pytest_groove.kb.store.database import DB_FILE_NAME, DB_FILE_NAMES, Store
from pytest_groove.kb.store.faults import index_dir_faults, index_faults
from pytest_groove.kb.store.files import clear_planted
from pytest_groove.kb.store.lock import LOCK_FILE_NAME, index_lock, probe_lock_file
from pytest_groove.settings.config import DEFAULT_VECTOR_INDEX, IndexSettings

GROOVE_DIR_NAME = ".groove"


def default_index_dir(kb: Path, model_slug: str) -> Path:
    return kb / GROOVE_DIR_NAME / model_slug


def index_kb(
    kb: Path,
    index_dir: Path,
    settings: IndexSettings,
    embedder: Embedder,
    *,
    force: bool = False,
    progress: ProgressTo = None,
    log: Callable[[str], None] | None = None,
    term_table: bool = False,
    note_vectors: bool = True,
    vector_caches: VectorCaches | None = None,
) -> IndexReport:
    """Bring ``index_dir`` up to date with ``kb``; see the module docstring.

    ``term_table``: the search configuration reads the word table (``fts_terms``), so
    the index must keep it (filled from the stored chunks the first time).
    ``note_vectors``: it reads the note vectors (note order), so the index must keep
    them (embedded from the stored titles and openings the first time).
    ``vector_caches``: the faiss caches the search configuration opens, brought up to
    date here (:mod:`~pytest_groove.kb.derived.vector_cache`) so the next search reads them.
    """
    wants = _Wants(term_table, note_vectors, vector_caches)
    started = time.monotonic()
    if not kb.is_dir():
        raise GrooveError(
            f"knowledge base {clip_path(kb)} is not a directory (check --kb-path / --groove-kb)"
        )
    try:
        with index_dir_faults(index_dir):
            index_folder_beneath(kb, index_dir, create=True)
            # a link (or pipe) planted as the lock is removed, never followed
            repairs = clear_planted(index_dir, (LOCK_FILE_NAME,))
        probe_lock_file(index_dir)
    except IndexUnwritable as exc:
        # a read-only checkout whose index is already current is simply used as it is
        report = current_read_only(kb, index_dir, settings, embedder, force, wants)
        if report is None:
            # --force rebuilds even a current index: say which of the two stopped here
            state = "is to be rebuilt (--force)" if force else "is missing or out of date"
            raise IndexUnwritable(
                f"the index in {clip_path(index_dir)} {state} and cannot be written "
                f"there: {exc.reason}",
                reason=exc.reason,
            ) from None
    else:
        with index_lock(index_dir):
            with index_dir_faults(index_dir):
                repairs += clear_planted(index_dir, DB_FILE_NAMES)
            steps = functools.partial(_index_locked, kb, settings, embedder, progress, wants)
            report = _index_rebuilding_damage(index_dir, force, steps)
            report.warnings[:0] = repairs
    report.seconds = time.monotonic() - started
    if log is not None:
        for warning in report.warnings:
            log(f"warning: {warning}")
    return report


def _index_rebuilding_damage(
    index_dir: Path, force: bool, steps: Callable[[Store, bool], IndexReport]
) -> IndexReport:
    """The indexer's ``steps(store, force)`` on the opened index, under the lock; a
    corrupt database is deleted and built again (with ``force``), once.

    Corrupt: SQLite says so while the indexer reads it, a reader marked it, or the
    check of a file the indexer did not leave finds damage (:mod:`.index_damage`).  The
    index holds nothing the KB does not: throwing a damaged one away loses no data,
    while keeping it would fail every later search.
    """
    try:
        return _index_open(index_dir, lambda store: steps(store, force))
    except IndexCorrupt as exc:
        report_warning = f"{exc.message.split('; ')[0]}; rebuilt it from the KB"
    for suffix in ("", "-wal", "-shm"):
        with index_dir_faults(index_dir):
            Path(f"{index_dir / DB_FILE_NAME}{suffix}").unlink(missing_ok=True)
    clear_damage_records(index_dir / DB_FILE_NAME)
    report = _index_open(index_dir, lambda store: steps(store, True))
    report.warnings.insert(0, report_warning)
    return report


def _index_open(index_dir: Path, steps: Callable[[Store], IndexReport]) -> IndexReport:
    """Open (or create) the index database, check it, and run ``steps`` on it."""
    store = Store.open(index_dir, create=True)
    try:
        with index_faults(store.path, store.conn):
            check_database(store.conn, store.path)
            store.conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
            with checkpoints_apart(store):
                report = steps(store)
    finally:
        store.close()
    record_checked(store.path)  # the file as this indexer leaves it
    return report


def current_read_only(
    kb: Path,
    index_dir: Path,
    settings: IndexSettings,
    embedder: Embedder,
    force: bool,
    wants: _Wants | None = None,
) -> IndexReport | None:
    """What indexing would report if the index in an unwritable folder is current, else None.

    Current means: built with this model, keeping what ``wants`` asks for, and
    every KB file it would index is stored with the same bytes (files that would be
    skipped anyway do not count).
    """
    if force or not (index_dir / DB_FILE_NAME).is_file():
        return None
    stored = _hashes_if_kept(index_dir, embedder, wants)
    if stored is None:
        return None
    report = IndexReport()
    collected = collect_files(kb, settings)
    report.warnings.extend(collected.warnings)
    seen: set[str] = set()
    refused: set[str] = set()
    contents = read_collected(kb, collected, refused=refused)
    for rel in collected.files:
        data = contents.get(rel)
        if data is None:
            if rel in refused and rel in stored:
                return None  # the indexer would drop its old rows
            seen.add(rel)  # the indexer keeps the rows of a file it cannot read
            report.skipped += 1
            continue
        if stored.get(rel) == hashlib.sha256(data).hexdigest():
            seen.add(rel)
            report.unchanged += 1
            continue
        try:
            doc = parse_document(rel, data, settings)
        except ParseFailure:
            doc = None
        if doc is not None and doc.chunks:
            return None  # new or changed content the index does not have
        if rel in stored:
            return None  # refused now: the indexer would drop its old rows
        report.skipped += 1
    if any(p not in seen and not p.startswith(collected.unlisted) for p in stored):
        return None  # the index still holds a file that is gone
    report.warnings.append(
        f"the index folder {clip_path(index_dir)} is not writable; its index is current and is "
        "used as it is"
    )
    return report


def _hashes_if_kept(
    index_dir: Path, embedder: Embedder, wants: _Wants | None
) -> dict[str, str] | None:
    """The stored files' hashes of an index built with ``embedder`` that keeps what
    ``wants`` asks for; None when it is not one, or cannot be read."""
    try:
        store = Store.open(index_dir, create=False)
    except GrooveError:
        return None
    try:
        with index_faults(store.path, store.conn):
            if store.get_meta("embedding_model") != embedder.name:
                return None
            if wants is not None and not wants.kept_by(store):
                return None
            return store.document_hashes()
    except GrooveError:
        return None
    finally:
        store.close()


#: chunks embedded per embedder call (and the smallest transaction).  Large enough that
#: the embedder runs at its batch speed (a neural model loses most of its throughput
#: to small calls, worst on a busy machine) and a commit is paid per few hundred
#: chunks, small enough that a killed run loses little work and the progress bar moves.
EMBED_GROUP_CHUNKS = 256
#: SQLite's page cache while indexing (KiB; SQLite's default is 2 MiB): FTS5 reads back
#: the segments it merges, so a cache that holds them saves re-reading them
WRITER_CACHE_KIB = 64 * 1024
#: SQLite's page cache while the vector caches are made (KiB; SQLite's default)
READER_CACHE_KIB = 2 * 1024
#: the most embedded chunks waiting for the writer thread (see :class:`~.index_group.WriteGroup`):
#: bounds the memory they hold, and the work a killed run loses
WRITE_QUEUE_CHUNKS = 4096


@dataclass(frozen=True)
class _Scan:
    """What is on disk: readable files with their bytes, and what could not be seen."""

    files: list[ScannedFile]
    #: files that could not be read: their stored rows are kept
    skipped: set[str]
    #: folder prefixes that could not be listed: nothing below them is pruned
    unlisted: tuple[str, ...]
    #: files whose own bytes or state are refused: their stored rows are pruned
    refused: set[str]


def _index_locked(
    kb: Path,
    settings: IndexSettings,
    embedder: Embedder,
    progress: ProgressTo,
    wants: _Wants,
    store: Store,
    force: bool,
) -> IndexReport:
    """The indexer's steps, in order: scan, renames, index each file, prune, and the
    note vectors of unchanged documents when they are wanted for the first time."""
    build = _Build(store, settings, embedder, wants, IndexReport())
    shown = IndexProgress(progress)
    try:
        _index_steps(kb, build, force, shown)
    finally:
        shown.close()
    return build.report


@dataclass(frozen=True)
class _Build:
    """One locked run of the indexer: the index, what its chunks are built with, what
    it wants made, and the report it fills."""

    store: Store
    settings: IndexSettings
    embedder: Embedder
    wants: _Wants
    report: IndexReport


def _index_steps(kb: Path, build: _Build, force: bool, shown: IndexProgress) -> None:
    shown.phase("reading notes")
    force = _start_build(build, force)
    # note vectors are kept once kept; wanted, new and changed documents get theirs as
    # they are written, and the others' are embedded once the files are done
    embeds_notes = build.wants.note_vectors or build.store.keeps_note_vectors
    mode = resolve_context_mode(build.store, context_mode_for(build.settings), force, build.report)
    contextual = mode == "static"
    embeds_context = mode in ("static", "embedded")
    scan = _scan(kb, build.settings, build.report)
    stored = build.store.document_hashes()
    renamed_to = set() if force else _apply_renames(build.store, scan, stored, build.report)
    shown.phase("indexing notes", len(scan.files), counted="chunks embedded")
    # the word postings of what is written are counted as it is written
    written = None
    if build.wants.word_index:
        written = WrittenRows(build.store.chunk_sequence(), build.store.path.parent)
    with _vector_lookup(build.store) as lookup:
        group = WriteGroup(
            build.store,
            build.embedder,
            contextual,
            embeds_context,
            embeds_notes,
            build.report,
            shown,
            group_chunks=EMBED_GROUP_CHUNKS,
            queue_chunks=WRITE_QUEUE_CHUNKS,
            lookup=lookup,
            written=written,
        )
        try:
            for at, item in enumerate(scan.files):
                # with the breadcrumb embedded, a renamed file may get a new one (from its name)
                forced = force or (embeds_context and item.path in renamed_to)
                renamed = item.path in renamed_to
                _index_file(item, stored, forced, renamed, build.settings, scan, group)
                # its bytes are parsed (the group holds them until it is embedded): not
                # held for the rest of the run, where the writer's memory peaks
                scan.files[at] = replace(item, data=b"")
            group.finish()
        finally:
            group.shutdown()
    _prune(build.store, scan, stored, build.report)
    if build.wants.note_vectors and not build.store.keeps_note_vectors:
        _embed_missing_notes(build.store, build.embedder, build.report, shown)
    # what this run's rewrites removed is found no more: the index keeps what it holds
    build.store.clear_retired()
    shown.phase("writing the search caches")
    _refresh_derived(build.store, scan, build.wants, written)


@contextmanager
def _vector_lookup(store: Store) -> Iterator[Lookup | None]:
    """Where the files' texts are looked up by key before they are embedded
    (:mod:`~pytest_groove.kb.reuse`): a second connection to the index, as the writer
    thread holds the first; none while the index holds no vector (a new index).

    While every chunk is written anew, the chunk key index is dropped and made again
    once the files are written (:data:`~pytest_groove.kb.store.schema.CHUNK_KEY_INDEX`).
    """
    if not store.counts()[1]:
        store.drop_key_index()
    if store.counts()[0] == 0 and not store.has_retired_vectors:
        yield None
    else:
        reader = Store.open(store.path.parent, create=False)
        try:
            yield reader.vectors_by_key
        finally:
            reader.close()
    store.keep_key_index()


def _start_build(build: _Build, force: bool) -> bool:
    """Before the files: whether all is built again (returned), the derived files looked
    at, the index wiped for a rebuild, and what the chunks are built with recorded."""
    store, settings, embedder, report = build.store, build.settings, build.embedder, build.report
    reason = None if force else rebuild_reason(store, embedder, settings)
    if reason is not None:
        report.warnings.append(reason)
        force = True
    if force:  # nothing derived is read: every cache is made again
        remove_caches(store.path.parent)
    else:  # a damaged cache is removed (one warning each) and made again
        report.warnings.extend(check_caches(store.path.parent))
    if force:
        # the vectors go to retired_vectors unless another model asked for the rebuild
        same_model = (store.get_meta("embedding_model"), store.get_meta("embedding_dim")) == (
            embedder.name,
            str(embedder.dimension),
        )
        store.wipe(
            term_table=build.wants.term_table,
            note_vectors=build.wants.note_vectors,
            retire=same_model,
        )
    record_build(store, embedder, settings)
    if build.wants.term_table:
        # before any write, so every chunk written from here on is fed to it too
        store.keep_term_table()
    return force


def _refresh_derived(
    store: Store, scan: _Scan, wants: _Wants, written: WrittenRows | None = None
) -> None:
    """After the files: the wanted caches and word postings for the state left (those
    of the chunks ``written`` counted as they were written), its tie order and corpus
    snapshot."""
    words: KeptPostings | None = None
    if wants.vector_caches is not None:
        scan.files.clear()  # not held while the caches are made
        # nor the writer's page cache (the caches read few pages), nor the heap they leave
        store.conn.execute("PRAGMA shrink_memory")
        store.conn.execute(f"PRAGMA cache_size=-{READER_CACHE_KIB}")
        return_freed_memory()
        with store.read_snapshot():  # one state for both (they read its chunk ids once)
            _refresh_vector_caches(store, wants.vector_caches)
            if wants.word_index:
                words = refresh_word_index(store, written)
    # once, after every write: read by each search and each eval
    ties, corpus = store.keeps_tie_order(), store.keeps_corpus_snapshot()
    if not (ties and corpus and words is None):
        with store.transaction():
            if not ties:
                store.keep_tie_order()
            if not corpus:
                store.keep_corpus_snapshot()
            if words is not None:
                store.set_meta(WORD_POSTINGS_META, words.manifest)
    if words is not None:
        words.remove_others()
    if wants.vector_caches is not None:
        # what updating them read and left: the search maps them again
        store.conn.execute("PRAGMA shrink_memory")
        return_freed_memory()


@dataclass(frozen=True)
class VectorCaches:
    """The faiss caches one search configuration opens (see :meth:`VectorIndex.load_for`)."""

    centre: bool
    kind: str
    notes: bool


def _refresh_vector_caches(store: Store, caches: VectorCaches) -> None:
    """Write the caches for the index's state now, so the next search only reads them.

    An older generation's flat cache is updated rather than rebuilt.  A flat
    note-carrying index is the chunk index's rows, kept in index.db (:mod:`~.note_index`),
    made from the chunk index; another kind's is its own index, made after the chunk
    index is dropped, so the two are never held at once.
    """
    directory, centre, kind = store.path.parent, caches.centre, caches.kind
    # a cache is current when its seal vouches for it (files/seal.py)
    if not is_vouched(cache_path(store, directory, centre=centre, kind=kind, notes=False)):
        # made (or updated) and written; dropped before anything else is made (a
        # flat one stays mapped, and the note rows and the search reuse that mapping)
        VectorIndex.load_for(store, directory, centre=centre, kind=kind)
    if not caches.notes:
        return
    if kind == DEFAULT_VECTOR_INDEX:
        if not keeps_note_rows(store, centre=centre):  # kept in index.db, not a file
            # the cache just written, mapped: an update reads only its new rows' pages
            plain = VectorIndex.load_for(store, directory, centre=centre, kind=kind)
            note_index_for(store, directory, plain, centre=centre, kind=kind, keep=True)
        return
    if not is_vouched(cache_path(store, directory, centre=centre, kind=kind, notes=True)):
        VectorIndex.load_for(store, directory, centre=centre, kind=kind, notes=True)


@dataclass(frozen=True)
class _Wants:
    """What the search configuration reads beyond the chunks, so the index must keep."""

    #: the word table (``fts_terms``): ``fts_query_version = 4``
    term_table: bool = False
    #: every document's note vector: note order
    note_vectors: bool = True
    #: the faiss caches to keep current (None: left to the first search)
    vector_caches: VectorCaches | None = None

    @property
    def word_index(self) -> bool:
        """The word postings are kept: the trigram table answers this configuration."""
        return self.vector_caches is not None and not self.term_table

    def kept_by(self, store: Store) -> bool:
        return (not self.term_table or store.keeps_term_table) and (
            not self.note_vectors or store.keeps_note_vectors
        )


def _embed_missing_notes(
    store: Store, embedder: Embedder, report: IndexReport, shown: IndexProgress
) -> None:
    """Embed the note vector of every document without one, then mark them kept.

    The texts come from the stored titles and first chunks, which are what the files
    would parse to, so no file is read again.  Each group commits on its own: a
    killed run keeps what it embedded, and the next run embeds the rest.
    """
    missing = store.notes_to_embed()
    if missing:
        shown.phase("embedding note vectors", len(missing), unit="note", counted="notes embedded")
    keyed = KeyedEmbedder(embedder, store.vectors_by_key)  # no writer thread runs now
    for start in range(0, len(missing), EMBED_GROUP_CHUNKS):
        group = missing[start : start + EMBED_GROUP_CHUNKS]
        vectors = keyed.passages([note_text_of(title, opening) for _, title, opening in group])
        store.set_note_vectors(
            [
                (doc_id, vectors.matrix[i], vectors.keys[i])
                for i, (doc_id, _, _) in enumerate(group)
            ],
            complete=start + len(group) == len(missing),
        )
        for i in range(len(group)):
            report.notes_embedded += vectors.embedded[i]
            report.notes_reused += not vectors.embedded[i]
            shown.step(report.notes_embedded)
    if not missing:
        store.set_note_vectors([], complete=True)


def _scan(kb: Path, settings: IndexSettings, report: IndexReport) -> _Scan:
    """Every KB file's bytes and SHA-256; unreadable files are skipped with a warning."""
    collected = collect_files(kb, settings)
    report.warnings.extend(collected.warnings)
    scanned: list[ScannedFile] = []
    skipped: set[str] = set()
    refused: set[str] = set()
    for rel, data in read_collected(kb, collected, report.warnings, refused).items():
        if data is None:
            if rel not in refused:
                skipped.add(rel)
            report.skipped += 1
            continue
        scanned.append(ScannedFile(rel, data, hashlib.sha256(data).hexdigest()))
    return _Scan(scanned, skipped, collected.unlisted, refused)


def _apply_renames(
    store: Store, scan: _Scan, stored: dict[str, str], report: IndexReport
) -> set[str]:
    """Move rows of files whose bytes reappear under a new path; returns the new paths.

    ``stored`` (path -> hash) is updated to the new paths.
    """
    on_disk = {f.path for f in scan.files}
    orphans = sorted(
        p
        for p in stored
        if p not in on_disk and p not in scan.skipped and not p.startswith(scan.unlisted)
    )
    # new paths by content hash, each queue in path order: pairing stays
    # deterministic with duplicate contents, and linear in the number of files
    fresh: dict[str, deque[str]] = {}
    for f in sorted((f for f in scan.files if f.path not in stored), key=lambda f: f.path):
        fresh.setdefault(f.digest, deque()).append(f.path)
    renames: list[tuple[str, str]] = []
    for old in orphans:
        queue = fresh.get(stored[old])
        if queue:
            renames.append((old, queue.popleft()))
    store.rename_documents(renames)
    report.renamed = len(renames)
    for old, new in renames:
        stored[new] = stored.pop(old)
    return {new for _, new in renames}


def _index_file(
    item: ScannedFile,
    stored: dict[str, str],
    forced: bool,
    renamed: bool,
    settings: IndexSettings,
    scan: _Scan,
    group: WriteGroup,
) -> None:
    """Decide what one file needs (nothing, its document row, or new chunks) and queue it."""
    report = group.report
    known = item.path in stored
    if known and not forced and stored[item.path] == item.digest:
        if not renamed:
            report.unchanged += 1
        group.done_without_write()
        return
    try:
        doc = parse_document(
            item.path, item.data, settings, on_warning=_prefixed(report, item.path)
        )
    except ParseFailure as exc:
        _skip(item.path, str(exc), scan, group, refused=True)
        return
    if not doc.chunks:
        _skip(item.path, "no embeddable chunks", scan, group, refused=True)
        return
    meta_only = False
    new_note = True
    if known and not forced:
        group.wait()  # the store is read below: no write may be in flight meanwhile
        # "embedded" mode stores no breadcrumb to compare: any change re-embeds the file
        meta_only = group.embeds_context == group.contextual and _same_chunks(
            group.store, item.path, doc, group.contextual
        )
        # the note vector embeds the title with the (unchanged) opening section
        new_note = not meta_only or group.store.document_title(item.path) != doc.title
    group.add(item, doc, known=known, meta_only=meta_only, new_note=new_note)


def _skip(path: str, why: str, scan: _Scan, group: WriteGroup, *, refused: bool) -> None:
    group.report.skipped += 1
    (scan.refused if refused else scan.skipped).add(path)
    group.report.warnings.append(f"skipped {path}: {why}")
    group.done_without_write()


def _prune(store: Store, scan: _Scan, stored: dict[str, str], report: IndexReport) -> None:
    """Delete the rows of files that vanished from the KB, or whose bytes are refused."""
    on_disk = {f.path for f in scan.files}
    # below a folder that could not be listed, "not seen" does not mean "deleted"
    vanished = [
        p
        for p in stored
        if p in scan.refused
        or (p not in on_disk and p not in scan.skipped and not p.startswith(scan.unlisted))
    ]
    store.delete_documents(vanished)
    report.removed = len(vanished)


def _prefixed(report: IndexReport, rel: str) -> Callable[[str], None]:
    def warn(message: str) -> None:
        report.warnings.append(f"{rel}: {message}")

    return warn


def _same_chunks(store: Store, path: str, doc: ParsedDocument, contextual: bool) -> bool:
    old = store.stored_chunks(path)
    if not old or len(old) != len(doc.chunks):
        return False
    for before, now in zip(old, doc.chunks, strict=True):
        if before.heading != now.heading or before.content != now.content:
            return False
        if contextual and before.context != now.context:
            return False
    return True
