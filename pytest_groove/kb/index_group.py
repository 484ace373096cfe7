"""Documents embedded and written in groups, and what an indexer run reports.

:class:`WriteGroup` batches parsed documents for the embedder and hands the embedded
groups to a writer thread (see its docstring); :class:`IndexReport` counts what the
run did; :class:`~pytest_groove.kb.progress.IndexProgress` shows it as it goes.  The
group sizes are the indexer's (:data:`pytest_groove.kb.indexer.EMBED_GROUP_CHUNKS`,
:data:`~pytest_groove.kb.indexer.WRITE_QUEUE_CHUNKS`), passed in by it.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import sys
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from pytest_groove.embed.base import Embedder
from pytest_groove.kb.derived.word_index import WrittenRows
from pytest_groove.kb.notes import note_text
from pytest_groove.kb.progress import IndexProgress
from pytest_groove.kb.reuse import KeyedEmbedder, KeyedVectors, Lookup
from pytest_groove.kb.source.quality import quality_score, token_count
from pytest_groove.kb.source.records import ParsedDocument
from pytest_groove.kb.store.database import DocumentWrite, Store, chunk_digest_of, term_fields


@dataclass
class IndexReport:
    """What one indexer run did: files by outcome, chunks and notes embedded, warnings.

    ``chunks_embedded`` / ``notes_embedded`` count the texts given to the embedder;
    ``chunks_reused`` / ``notes_reused`` the vectors written without it, found by what
    they embed (:mod:`pytest_groove.kb.reuse`).
    """

    added: int = 0
    changed: int = 0
    renamed: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    #: note vectors embedded (one per new or re-chunked document, or new title, whose
    #: text has no vector in the index yet)
    notes_embedded: int = 0
    notes_reused: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"indexed: {self.added} added, {self.changed} changed, {self.renamed} renamed, "
            f"{self.removed} removed, {self.unchanged} unchanged, {self.skipped} skipped; "
            f"{self.chunks_embedded} chunks embedded, {self.chunks_reused} reused "
            f"in {self.seconds:.2f}s"
        )


@dataclass(frozen=True)
class ScannedFile:
    """A KB file as the scan read it: its path, bytes and SHA-256."""

    path: str
    data: bytes
    digest: str


def embedding_input(context: str | None, content: str, contextual: bool) -> str:
    if contextual and context and context.strip():
        return f"{context}\n\n{content}"
    return content


class WriteGroup:
    """Documents waiting to be embedded and written together.

    Chunks of many documents go to the embedder in one call (a group of about
    ``group_chunks``), and the embedded groups go to the database on a
    writer thread while this thread reads, parses and embeds the next ones (SQLite,
    feeding FTS5 most of the time, runs without the GIL).  Embedded groups that
    arrive while the writer is still busy queue up and are written together in the
    writer's next transaction: when the writer is the bottleneck (a fast embedder)
    its transactions grow, which is what makes FTS5 fast (it flushes and merges its
    index once per transaction); when the embedder is the bottleneck (a neural
    model) every group commits on its own, so a killed run loses little work.  At
    most ``queue_chunks`` chunks wait; transactions commit in order, each
    all or nothing, so every document's rows change together.  The progress bar and
    the report count a document only once its transaction is committed, so the bar
    never runs ahead of what is stored.
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        contextual: bool,
        embeds_context: bool,
        embeds_notes: bool,
        report: IndexReport,
        bar: IndexProgress,
        *,
        group_chunks: int,
        queue_chunks: int,
        lookup: Lookup | None = None,
        written: WrittenRows | None = None,
    ) -> None:
        self.store = store
        #: chunks embedded per embedder call; the most embedded chunks kept waiting
        self._group_chunks = group_chunks
        self._queue_chunks = queue_chunks
        self.embedder = embedder
        #: texts whose vectors ``lookup`` finds in the index are not embedded again
        self._keyed = KeyedEmbedder(embedder, lookup)
        #: documents get their note vectors as they are written (else a changed
        #: document's stored one is dropped)
        self.embeds_notes = embeds_notes
        #: the breadcrumb is stored and searched in full text ("static")
        self.contextual = contextual
        #: the breadcrumb is embedded with each chunk ("static" or "embedded")
        self.embeds_context = embeds_context
        self.report = report
        self._bar = bar
        #: render each chunk's word-table text here, off the writer thread
        self._term_table = store.keeps_term_table
        #: the written chunks' word postings, counted here while the writer thread
        #: runs SQLite (not read back from the table afterwards)
        self._words = None if written is None else _WordsToCount(written)
        #: read and parsed, not embedded yet
        self._pending: list[_Pending] = []
        self._chunks = 0
        #: embedded, waiting for the writer thread
        self._queued = _Batch()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="groove-writer")
        self._switch_interval = _shorter_switch_interval()
        #: the transaction being committed, with what to count once it is
        self._in_flight: Future[None] | None = None
        self._in_flight_batch = _Batch()

    def done_without_write(self) -> None:
        """Count a file that needs no write, after the documents queued before it."""
        if self._pending or self._queued.writes:
            self._queued.idle_steps += 1
        else:
            self._bar.step(self.report.chunks_embedded)

    def add(
        self,
        item: ScannedFile,
        doc: ParsedDocument,
        *,
        known: bool,
        meta_only: bool,
        new_note: bool = True,
    ) -> None:
        self._pending.append(_Pending(item, doc, known, meta_only, new_note))
        if not meta_only:
            self._chunks += len(doc.chunks)
        if self._chunks >= self._group_chunks:
            self.flush()

    def flush(self) -> None:
        """Embed the pending documents and hand them to the writer (now, or queued)."""
        if not self._pending:
            return
        texts = [
            embedding_input(c.context, c.content, self.embeds_context)
            for p in self._pending
            if not p.meta_only
            for c in p.doc.chunks
        ]
        # one call embeds the chunks and the note vectors that changed (those the
        # index holds a vector for are found, not embedded)
        notes = [note_text(p.doc) for p in self._pending if p.new_note and self.embeds_notes]
        embedded = None
        if texts or notes:
            embedded = self._keyed.passages(
                [*texts, *notes], on_embed=lambda n: self._bar.doing(f"embedding {n:,} more")
            )
            self._bar.doing("")
        written = self._queue_pending(embedded, len(texts))
        self._pending, self._chunks = [], 0
        writer_busy = self._in_flight is not None and not self._in_flight.done()
        if not writer_busy or self._queued.chunks >= self._queue_chunks:
            self._submit()
        if self._words is not None:
            # in the order the writer gives them their ids
            self._words.queue(written, self.contextual)

    def _queue_pending(
        self, embedded: KeyedVectors | None, chunk_rows: int
    ) -> list[ParsedDocument]:
        """Queue each pending document's write: its slice of the first ``chunk_rows``
        rows of ``embedded`` (the chunks' vectors) and, when it embeds one, its next
        note vector (the rows after them).  Returns the documents whose chunks are
        written, in order."""
        offset, note_row = 0, chunk_rows
        written: list[ParsedDocument] = []
        for pending in self._pending:
            item, doc, meta_only = pending.item, pending.doc, pending.meta_only
            embeds_note = pending.new_note and self.embeds_notes
            counted = _Counted(pending.known)
            write = DocumentWrite(
                item.path,
                item.digest,
                len(item.data),
                doc,
                drop_note=pending.new_note and not self.embeds_notes,
            )
            if embeds_note and embedded is not None:
                write = replace(
                    write, note_vector=embedded.matrix[note_row], note_key=embedded.keys[note_row]
                )
                counted.notes_embedded = int(embedded.embedded[note_row])
                counted.notes_reused = 1 - counted.notes_embedded
                note_row += 1
            self._queued.docs.append(counted)
            if meta_only or embedded is None or not chunk_rows:
                self._queued.writes.append(write)  # the document row only
                continue
            count = len(doc.chunks)
            counted.chunks_embedded = sum(embedded.embedded[offset : offset + count])
            counted.chunks_reused = count - counted.chunks_embedded
            self._queued.writes.append(
                replace(
                    write,
                    vectors=embedded.matrix[offset : offset + count],
                    embed_keys=embedded.keys[offset : offset + count],
                    token_counts=[token_count(c.content) for c in doc.chunks],
                    quality_scores=[quality_score(c.content) for c in doc.chunks],
                    chunk_digest=chunk_digest_of(doc, self.contextual),
                    term_texts=[
                        term_fields(c.heading, c.context if self.contextual else None, c.content)
                        for c in doc.chunks
                    ]
                    if self._term_table
                    else (),
                )
            )
            self._queued.chunks += count
            offset += count
            written.append(doc)
        return written

    def _submit(self) -> None:
        """Write everything queued in one transaction on the writer thread."""
        self.wait()
        if not self._queued.writes:
            self._count(self._queued)
            self._queued = _Batch()
            return
        self._in_flight = self._writer.submit(
            self.store.write_documents, self._queued.writes, store_context=self.contextual
        )
        self._in_flight_batch, self._queued = self._queued, _Batch()

    def wait(self) -> None:
        """Let the transaction in flight commit (its error, if any, is raised here)."""
        if self._in_flight is None:
            return
        future, self._in_flight = self._in_flight, None
        self._bar.doing("writing")
        if self._words is not None:
            self._words.count(until=future.done)
        future.result()
        self._bar.doing("")
        self._count(self._in_flight_batch)
        self._in_flight_batch = _Batch()

    def finish(self) -> None:
        """Embed and write whatever is left, and let it commit.

        The writer is the slower thread at the end, so the rest goes to it at once,
        behind the transaction in flight, and the words left are counted and the word
        postings' segment made while they commit (the refresh after the writes takes it).
        """
        self.flush()
        last, last_batch = None, self._queued
        if self._queued.writes:
            last = self._writer.submit(self._write_after, self._in_flight, self._queued.writes)
            self._queued = _Batch()
        if self._words is not None:
            self._words.count()
            if self._words.written.rows:
                with contextlib.suppress(OSError):
                    self._words.written.segment()
        self.wait()
        if last is not None:
            self._in_flight, self._in_flight_batch = last, last_batch
            self.wait()
        self._submit()  # nothing is left to write: counts the files that needed none

    def _write_after(self, previous: Future[None] | None, writes: list[DocumentWrite]) -> None:
        """Write ``writes`` in one transaction (on the writer thread), unless the
        transaction before them failed (its error is the one reported)."""
        if previous is None or previous.exception() is None:
            self.store.write_documents(writes, store_context=self.contextual)

    def _count(self, batch: _Batch) -> None:
        for counted in batch.docs:
            self.report.chunks_embedded += counted.chunks_embedded
            self.report.chunks_reused += counted.chunks_reused
            self.report.notes_embedded += counted.notes_embedded
            self.report.notes_reused += counted.notes_reused
            if counted.known:
                self.report.changed += 1
            else:
                self.report.added += 1
            self._bar.step(self.report.chunks_embedded)
        for _ in range(batch.idle_steps):
            self._bar.step(self.report.chunks_embedded)

    def shutdown(self) -> None:
        """Wait for the writer thread to finish (before the store is closed), never raising:
        on the error path the first error is the one to report."""
        self._writer.shutdown(wait=True)
        if sys.getswitchinterval() == _WRITER_SWITCH_INTERVAL:
            sys.setswitchinterval(self._switch_interval)


#: how long a thread waiting for the GIL waits before asking for it (Python's default
#: is 5 ms) while the writer thread runs: it gives the GIL up around every SQLite call
#: and waits that long to get it back whenever this thread runs Python (measured: the
#: writer of a full 10,000-chunk index was busy about 0.1 s longer, and a full index
#: waits for the writer)
_WRITER_SWITCH_INTERVAL = 0.001


def _shorter_switch_interval() -> float:
    """Set :data:`_WRITER_SWITCH_INTERVAL` (unless it is shorter already); the interval before."""
    before = sys.getswitchinterval()
    if before > _WRITER_SWITCH_INTERVAL:
        sys.setswitchinterval(_WRITER_SWITCH_INTERVAL)
    return before


#: chunks whose words may wait to be counted (see :class:`_WordsToCount`): bounds the
#: texts held for them
_UNCOUNTED_CHUNKS = 4096
#: chunks counted between two looks at the writer
_COUNT_STEP = 64


@dataclass
class _WordsToCount:
    """The written chunks' words, counted while this thread would wait for the writer.

    Counting them costs a full ``hash`` index's main thread about as much as embedding
    does.  Counted as each group goes to the writer, they delay the next group while
    the writer waits for it; queued here, they are counted when this thread would
    wait for a transaction to commit -- above all at the end, while the last ones
    commit -- and at once past :data:`_UNCOUNTED_CHUNKS` (where the embedder is the
    slower side, a neural model, this thread never waits).
    """

    written: WrittenRows
    #: (heading, context, content) of each chunk not counted yet, in write order
    rows: deque[tuple[str | None, str | None, str]] = field(default_factory=deque)

    def queue(self, docs: list[ParsedDocument], contextual: bool) -> None:
        for doc in docs:
            for c in doc.chunks:
                self.rows.append((c.heading, c.context if contextual else None, c.content))
        while len(self.rows) > _UNCOUNTED_CHUNKS:
            self.written.add(*self.rows.popleft())

    def count(self, until: Callable[[], bool] = lambda: False) -> None:
        """Count the queued chunks, in order, until ``until()`` (asked every few)."""
        rows, add = self.rows, self.written.add
        while rows and not until():
            for _ in range(min(_COUNT_STEP, len(rows))):
                add(*rows.popleft())


@dataclass(frozen=True)
class _Pending:
    """A parsed document waiting for the embedder."""

    item: ScannedFile
    doc: ParsedDocument
    known: bool
    #: its chunks are stored as they are (a frontmatter-only edit)
    meta_only: bool
    #: its note vector is (re-)embedded (a new document, new chunks or a new title)
    new_note: bool


@dataclass
class _Counted:
    """What one written document adds to the report once its transaction commits."""

    known: bool
    chunks_embedded: int = 0
    chunks_reused: int = 0
    notes_embedded: int = 0
    notes_reused: int = 0


@dataclass
class _Batch:
    """Embedded documents written in one transaction, and what to count once it commits."""

    writes: list[DocumentWrite] = field(default_factory=list)
    #: each document's counts
    docs: list[_Counted] = field(default_factory=list)
    chunks: int = 0
    #: files decided without a write while these documents waited (counted after them)
    idle_steps: int = 0
