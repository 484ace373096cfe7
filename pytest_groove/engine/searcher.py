"""One protocol for whatever answers the golden queries.

The built-in engine and every external retriever (a conftest hook's object, a
``module:attr``, LangChain, LlamaIndex, Qdrant, Chroma, an HTTP service) are wrapped
as a :class:`Searcher`: it searches, prepares a batch of queries and says who it is
(the fingerprint's identity).  Both searchers here also say what they know of the
corpus and check their own answers, the two small protocols the evaluation owns
(:mod:`pytest_groove.evaluation.searched`); the evaluation is written once against
them, so neither door asks which kind of searcher it holds.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pytest_groove.kb.progress import ProgressTo
from pytest_groove.kb.source.records import CorpusSnapshot
from pytest_groove.search.hits import AnsweredQuery, SearchHit
from pytest_groove.settings.config import Settings

if TYPE_CHECKING:
    from pytest_groove.embed.base import Embedder
    from pytest_groove.engine.builtin import Engine
    from pytest_groove.kb.source.disk_view import KBView
    from pytest_groove.search.retrievers.external import ExternalRetriever, RetrieverKind

#: the model name recorded in the fingerprint of a run measured with a retriever
CUSTOM_MODEL = "custom"

#: how a stop's line ends when it ends the run (a door that says so itself may cut it)
NOT_RECORDED = "; nothing was recorded"

#: a custom retriever's first queries (with hits) in one process that, all answered
#: with hits outside the KB and none inside, most of them KB paths spelt another way,
#: stop the run before it ends
EARLY_STOP_QUERIES = 3


@dataclass(frozen=True)
class SearcherIdentity:
    """Who answered: the parts of the run fingerprint a searcher decides."""

    model: str
    reranker_id: str | None = None
    #: the index's contextual mode (None when no built-in index answered)
    context_mode: str | None = None
    #: the external retriever's name (None for the built-in engine)
    retriever: str | None = None
    #: the faiss index kind (None when no built-in index answered)
    vector_index: str | None = None


class Searcher(Protocol):
    """What answers the golden queries: who it is, its ranked hits, a warm-up for a
    batch of queries, and its end.  What the evaluation also asks of it -- the corpus it
    answers from and checks of its own answers -- is the evaluation's protocol
    (:class:`~pytest_groove.evaluation.searched.EvaluatedSearcher`); both searchers
    here provide it."""

    @property
    def identity(self) -> SearcherIdentity: ...

    def search(self, query: str, limit: int) -> list[SearchHit]: ...

    def prepare_queries(self, queries: Sequence[str]) -> None:
        """Embed (or otherwise warm up for) the queries about to be searched."""

    def close(self) -> None: ...


class EngineSearcher:
    """The built-in hybrid search over the KB's own index."""

    def __init__(self, engine: Engine, settings: Settings) -> None:
        self.engine = engine
        self.settings = settings

    @property
    def identity(self) -> SearcherIdentity:
        engine = self.engine
        return SearcherIdentity(
            model=engine.model_name,
            reranker_id=engine.reranker_id,
            context_mode=engine.context_mode,
            vector_index=self.settings.index.vector_index,
        )

    def search(self, query: str, limit: int) -> list[SearchHit]:
        return self.engine.search(query, limit)

    def prepare_queries(self, queries: Sequence[str]) -> None:
        self.engine.prepare_queries(queries)

    def read_snapshot(self) -> AbstractContextManager[Any]:
        return self.engine.read_snapshot()

    def headings_by_path(self) -> Mapping[str, Collection[str | None]]:
        return self.engine.headings_by_path()

    def corpus_snapshot(self) -> CorpusSnapshot | None:
        return self.engine.corpus_snapshot()

    def document_digests(self) -> Mapping[str, str] | None:
        # the indexer's per-file sha256, kept in the documents table
        return self.engine.document_digests()

    def quoted_by_document(self, needles: Sequence[str]) -> dict[str, set[int]]:
        # the index keeps each document's scan, so an unchanged corpus reads no chunk
        return self.engine.quoted_by_document(needles)

    def check_hits(self, hits: Sequence[SearchHit]) -> None:
        return None  # the engine's hits are the index's own documents

    def answer_warnings(self, results: Sequence[AnsweredQuery], deepest_k: int) -> list[str]:
        return []

    def search_notes(self) -> dict[str, Any]:
        return {}

    def add_search_notes(self, notes: Mapping[str, Any]) -> None:
        return None

    def close(self) -> None:
        self.engine.close()


#: how a door opens the built-in engine (tests pass their own)
EngineOpener = Callable[..., "Engine"]


def open_engine_searcher(
    kb: Path,
    settings: Settings,
    *,
    reindex: bool,
    embedder: Embedder | None = None,
    progress: ProgressTo = None,
    log: Callable[[str], None] | None = None,
    opener: EngineOpener | None = None,
) -> EngineSearcher:
    """Open (and unless ``reindex`` is False, first refresh) the KB's index."""
    if opener is None:
        # imported here: the engine pulls in apsw, faiss and the embedder
        from pytest_groove.engine.builtin import open_engine

        opener = open_engine
    engine = opener(kb, settings, embedder=embedder, reindex=reindex, progress=progress, log=log)
    return EngineSearcher(engine, settings)


class RetrieverSearcher:
    """A team's own retriever, judged against the KB's files on disk.

    The KB on disk is the ground truth whatever answers: the golden entries are
    checked against its files' headings (read as the indexer reads them, nothing
    embedded), the run records the digest of those files as its corpus, and the
    golden-quote scan reads their texts.
    """

    def __init__(
        self,
        retriever: ExternalRetriever | Callable[[], ExternalRetriever],
        kb: Path,
        settings: Settings,
        *,
        name: str | None = None,
    ) -> None:
        """``retriever`` may be a function that builds it: it is then built at the first
        search (or when its name is needed and ``name`` was not given), so a process
        that never searches -- the xdist controller -- never builds it."""
        self._build: Callable[[], ExternalRetriever] | None = None
        self._retriever: ExternalRetriever | None = None
        if callable(retriever):  # a builder (an ExternalRetriever is not callable)
            self._build = retriever
        else:
            self._retriever = retriever
        self._name = name
        self.kb = kb
        self.settings = settings
        self._view: KBView | None = None
        #: each document's headings and title, normalised -> as spelt (read at first need)
        self._known: dict[str, dict[str, str]] | None = None
        #: the warning for a hit's heading that is no heading of its document (told once)
        self._heading_warning: str | None = None
        #: what other processes' searches learned (:meth:`add_search_notes`): the kind
        #: of retriever they built, their warnings, their unknown-heading warning
        self._their_kind: RetrieverKind | None = None
        self._their_warnings: list[str] = []
        self._their_heading_warning: str | None = None
        #: the hit paths of the queries answered so far in this process, while none had a
        #: hit in the KB (the early stop's evidence: check_hits)
        self._outside_only: list[list[str]] = []
        #: whether the early stop has decided: a query answered in this process had a
        #: hit in the KB, or the first queries without one were judged
        self._kb_hit_seen = False
        #: queries answered in this process so far, while none had a hit at all
        self._empty_answers = 0

    @property
    def retriever(self) -> ExternalRetriever:
        """The retriever (built now if it was handed over as a builder)."""
        if self._retriever is None:
            assert self._build is not None
            self._retriever = self._build()
        return self._retriever

    @property
    def built(self) -> bool:
        return self._retriever is not None

    def build(self) -> None:
        """Build the retriever now (a process about to search: a retriever that cannot
        be built is then one error before the first query, not one per query)."""
        _ = self.retriever

    @property
    def view(self) -> KBView:
        """The KB's files (read once, at first use)."""
        if self._view is None:
            from pytest_groove.kb.source.disk_view import read_kb_view

            self._view = read_kb_view(self.kb, self.settings.index)
        return self._view

    @property
    def identity(self) -> SearcherIdentity:
        name = self._name if self._name is not None else self.retriever.name
        return SearcherIdentity(model=CUSTOM_MODEL, retriever=name)

    def search(self, query: str, limit: int) -> list[SearchHit]:
        return self._spelt(self._mapped(self.retriever.search(query, limit)))

    def _mapped(self, hits: list[SearchHit]) -> list[SearchHit]:
        """Paths the KB does not have, mapped when a decoded or Unicode-normalised
        spelling names exactly one KB file (:mod:`~pytest_groove.search.retrievers.hit_paths`)."""
        documents = self.view.documents
        if all(hit.path in documents for hit in hits):
            return hits
        from dataclasses import replace

        from pytest_groove.search.retrievers.hit_paths import kb_path_for

        mapped: list[SearchHit] = []
        for hit in hits:
            if hit.path not in documents:
                path = kb_path_for(hit.path, documents, self.kb)
                if path is not None:
                    hit = replace(hit, path=path)
            mapped.append(hit)
        return mapped

    def _known_headings(self) -> dict[str, dict[str, str]]:
        if self._known is None:
            from pytest_groove.search.retrievers.hit_checks import document_headings

            contexts: dict[str, list[str | None]] = {}
            for text in self.view.texts:
                contexts.setdefault(text.path, []).append(text.context)
            self._known = {
                path: document_headings(headings, contexts.get(path, ()))
                for path, headings in self.view.headings.items()
            }
        return self._known

    def _spelt(self, hits: list[SearchHit]) -> list[SearchHit]:
        """Headings as their documents spell them (``## Schedule`` -> ``Schedule``); one
        that is no heading of its document is warned about, once a run."""
        if not any(hit.heading for hit in hits):
            return hits
        from dataclasses import replace

        from pytest_groove.search.retrievers.hit_checks import heading_spelling, unknown_heading

        known = self._known_headings()
        spelt: list[SearchHit] = []
        for hit in hits:
            headings = known.get(hit.path)
            if hit.heading and headings is not None:  # outside the KB: hits_outside_kb's
                heading, found = heading_spelling(hit.heading, headings)
                if not found and self._heading_warning is None:
                    self._heading_warning = unknown_heading(
                        self.retriever.name, hit.heading, hit.path
                    )
                    self.retriever.warn(self._heading_warning)
                if heading != hit.heading:
                    hit = replace(hit, heading=heading)
            spelt.append(hit)
        return spelt

    def prepare_queries(self, queries: Sequence[str]) -> None:
        return None

    def read_snapshot(self) -> AbstractContextManager[Any]:
        return nullcontext()

    def headings_by_path(self) -> Mapping[str, Collection[str | None]] | None:
        return self.view.headings

    def corpus_snapshot(self) -> CorpusSnapshot | None:
        return self.view.corpus

    def document_digests(self) -> Mapping[str, str] | None:
        return self.view.documents

    def quoted_by_document(self, needles: Sequence[str]) -> dict[str, set[int]]:
        from pytest_groove.kb.derived.quote_scan import quoted_needles

        return quoted_needles(needles, self.view.texts)

    def check_hits(self, hits: Sequence[SearchHit]) -> None:
        """Stop early only on conclusive evidence: the first
        :data:`EARLY_STOP_QUERIES` queries of this process that got hits got none in
        the KB, and most of those hits are KB paths spelt another way (``kb/ops/a.md``,
        ``ops/a.md#2``).  Hits that look like another source's documents (a store
        holding tickets too) never stop the run early, nor does one query once a query
        had a KB hit; the run's own check (:meth:`answer_warnings`) judges the whole run.

        Likewise the first :data:`EARLY_STOP_QUERIES` queries of this process all
        answered with no hit (an empty store, a collection name with a typo) stop the
        run with one line, not one "missed" failure per golden query."""
        self._check_empty(hits)
        if not hits or self._kb_hit_seen:
            return
        documents = self.view.documents
        if any(hit.path in documents for hit in hits):
            self._kb_hit_seen = True
            self._outside_only.clear()
            return
        self._outside_only.append([hit.path for hit in hits])
        if len(self._outside_only) < EARLY_STOP_QUERIES:
            return
        # judged once, on the first queries: the run's end judges the rest
        self._kb_hit_seen = True
        from pytest_groove.errors import StopsTheRun
        from pytest_groove.search.retrievers.hit_checks import hits_outside_kb

        scope = f" in the first {len(self._outside_only)} queries it answered"
        message = hits_outside_kb(
            self.retriever.name,
            self._outside_only,
            documents,
            self.kb,
            scope=scope,
            misnamed_only=True,
        )
        self._outside_only.clear()
        if message is not None:
            raise StopsTheRun(f"{message}{NOT_RECORDED}")

    def _check_empty(self, hits: Sequence[SearchHit]) -> None:
        if self._empty_answers < 0:
            return  # decided: some query had a hit
        if hits:
            self._empty_answers = -1
            return
        self._empty_answers += 1
        if self._empty_answers < EARLY_STOP_QUERIES:
            return
        from pytest_groove.errors import StopsTheRun
        from pytest_groove.search.retrievers.hit_checks import no_hit_at_all

        message = no_hit_at_all(self.retriever.name, [0] * EARLY_STOP_QUERIES, first=True)
        raise StopsTheRun(f"{message} Nothing was recorded.")

    def answer_warnings(self, results: Sequence[AnsweredQuery], deepest_k: int) -> list[str]:
        from pytest_groove.errors import GrooveError
        from pytest_groove.search.retrievers.headingless import headingless_hits
        from pytest_groove.search.retrievers.hit_checks import check_retriever_hits
        from pytest_groove.search.retrievers.key_evidence import KEY_EVIDENCE_QUERIES

        name = self.identity.retriever or CUSTOM_MODEL
        # a controller that never built the retriever knows its kind from the workers
        kind = self.retriever.kind if self.built else (self._their_kind or "callable")
        paths = [[hit.path for hit in result.top_k] for result in results]
        report = check_retriever_hits(name, kind, self.kb, paths, self.view.documents, deepest_k)
        if report.error is not None:
            # (a run check_hits stopped never gets here: it was told why once, and the
            # queries before the stop are not summed up)
            ending = NOT_RECORDED
            if report.error.endswith("?"):
                ending = " Nothing was recorded."
            raise GrooveError(f"{report.error}{ending}")
        if self.built and self.retriever.heading_evidence.queries < KEY_EVIDENCE_QUERIES:
            # a run too short for the search's own stop: a heading key no hit held
            problem = self.retriever.heading_key_problem()
            if problem is not None:
                raise GrooveError(f"{problem}; nothing was recorded")
        warnings = list(self.retriever.warnings) if self.built else []
        warnings += [w for w in self._their_warnings if w not in warnings]
        if self._heading_warning is None and self._their_heading_warning is not None:
            warnings.append(self._their_heading_warning)  # once a run, as in one process
        lost = headingless_hits(name, results)
        return [*warnings, *report.warnings, *([lost] if lost else [])]

    def search_notes(self) -> dict[str, Any]:
        """The kind of retriever this process built and the warnings its searches gave
        (the unknown-heading one apart: a run tells only the first)."""
        if not self.built:
            return {}
        retriever = self.retriever
        return {
            "kind": retriever.kind,
            "warnings": [w for w in retriever.warnings if w != self._heading_warning],
            "heading_warning": self._heading_warning,
        }

    def add_search_notes(self, notes: Mapping[str, Any]) -> None:
        from typing import get_args

        from pytest_groove.search.retrievers.external import RetrieverKind

        kind = notes.get("kind")
        if self._their_kind is None and kind in get_args(RetrieverKind):
            self._their_kind = kind
        warnings = notes.get("warnings")
        for warning in warnings if isinstance(warnings, list) else ():
            if isinstance(warning, str) and warning not in self._their_warnings:
                self._their_warnings.append(warning)
        heading = notes.get("heading_warning")
        if self._their_heading_warning is None and isinstance(heading, str):
            self._their_heading_warning = heading

    def close(self) -> None:
        return None


#: any searcher, kept as the caller typed it
AnySearcher = TypeVar("AnySearcher", bound=Searcher)


@contextmanager
def closing_searcher(searcher: AnySearcher) -> Iterator[AnySearcher]:
    """Close ``searcher`` when the block ends, however it ends."""
    try:
        yield searcher
    finally:
        searcher.close()
