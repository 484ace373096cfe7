"""The settings records: what a run is configured with, each default stated once.

:mod:`pytest_groove.settings.config` reads ``groove.toml`` into these frozen dataclasses (and
re-exports them); the rest of the code only reads them.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_groove.embed.names import DEFAULT_MODEL

#: the vector index kinds (see pytest_groove.kb.derived.vectors); flat is exact
VECTOR_INDEX_KINDS = ("flat", "hnsw")
DEFAULT_VECTOR_INDEX = "flat"

DEFAULT_EXCLUDE_DIRS: tuple[str, ...] = (
    ".obsidian",
    ".git",
    "node_modules",
    "target",
    ".vscode",
    ".idea",
)
KNOWN_PARSERS: tuple[str, ...] = ("md", "txt")
CONFIG_FILE_NAME = "groove.toml"
#: search results per query are capped here, whatever --limit asks for
SEARCH_LIMIT_MAX = 1000
#: the largest k accepted (searches stop at SEARCH_LIMIT_MAX results whatever k is)
K_MAX = 1_000_000_000


@dataclass(frozen=True)
class FusionParams:
    """Reciprocal-rank-fusion constant and the bm25 column weights."""

    rrf_k: float = 60.0
    bm25_heading_weight: float = 2.0
    bm25_context_weight: float = 1.0
    bm25_content_weight: float = 1.0

    @property
    def weights(self) -> tuple[float, float, float]:
        return (self.bm25_heading_weight, self.bm25_context_weight, self.bm25_content_weight)

    @property
    def is_default(self) -> bool:
        return self == FusionParams()


@dataclass(frozen=True)
class MmrSettings:
    enabled: bool = False
    lambda_: float = 0.7
    same_doc_penalty: float = 0.0


@dataclass(frozen=True)
class ParentRetrieverSettings:
    enabled: bool = False
    whole_doc_threshold_tokens: int = 100
    max_expanded_tokens: int = 2000


@dataclass(frozen=True)
class SearchSettings:
    fusion: FusionParams = field(default_factory=FusionParams)
    mmr: MmrSettings = field(default_factory=MmrSettings)
    parent_retriever: ParentRetrieverSettings = field(default_factory=ParentRetrieverSettings)
    #: name of the reranker ("none" = no reranking stage)
    reranker: str = "none"
    #: see search.confidence.DEFAULT_MIN_CONFIDENCE_RATIO (calibrated on labelled queries)
    min_confidence_ratio: float = 1.1
    #: which query compiler (and full-text table) the FTS leg uses: 3 = the
    #: reference's trigram phrases, 4 = content words and CJK bigrams
    fts_query_version: int = 3
    #: subtract each language's mean from the vectors (see kb.vectors); applies
    #: when the engine opens its index
    vector_centring: bool = True
    #: skip the full-text list when the vector leg's best chunk is written in
    #: another script than the query (the full-text leg cannot reach it)
    fts_script_gate: bool = True
    #: weigh the full-text list's RRF vote by the share of the query's idf weight its
    #: best hit holds, full at half (see search.pipeline.hybrid.HybridSearcher.fts_vote)
    fts_coverage_vote: bool = True
    #: list each document's best chunk before any document's second chunk (see
    #: search.documents); applies to the fused list when no reranker or MMR runs
    document_first: bool = True
    #: with document_first: order the documents by chunk vectors that carry their
    #: note's vector, each still represented by its best chunk of the fused list
    #: (see search.notes)
    note_order: bool = True


@dataclass(frozen=True)
class IndexSettings:
    model: str = DEFAULT_MODEL
    contextual: bool = False
    #: with ``contextual``: the breadcrumb is also searched in full text (mode
    #: "static"); False embeds it only (mode "embedded")
    contextual_full_text: bool = True
    exclude_dirs: tuple[str, ...] = DEFAULT_EXCLUDE_DIRS
    exclude_headings: tuple[str, ...] = ()
    parsers: tuple[str, ...] = ("md",)
    #: where the index lives; None = ``<kb>/.groove/<model-slug>/``
    index_dir: Path | None = None
    #: the vector index searched: "flat" (exact, default) or "hnsw" (approximate)
    vector_index: str = DEFAULT_VECTOR_INDEX


@dataclass(frozen=True)
class EvalSettings:
    #: golden file; None = ``<kb>/.groove-eval.yml``
    golden: Path | None = None
    history_size: int = 10
    k_values: tuple[int, ...] = (1, 5, 10)
    regression_threshold: float = 0.05
    #: ``--significance``: p-value a drop must be under to count (None = off)
    significance: float | None = None
    #: ``--fail-under``: ``(metric, floor)`` pairs
    fail_under: tuple[tuple[str, float], ...] = ()
    #: the optional metrics measured besides recall, MRR and nDCG (metric table keys)
    metrics: tuple[str, ...] = ()
    #: the accepted baseline; None = ``<kb>/.groove-baseline.json``
    baseline_file: Path | None = None
    #: fail known misses too (queries the accepted baseline missed)
    strict: bool = False


@dataclass(frozen=True)
class RetrieverSettings:
    """``[retriever]``: how a team's own retriever is named and reached (each key is
    the config-file form of a ``--retriever-*`` option, which wins over it)."""

    name: str | None = None
    #: seconds an HTTP retriever may take to answer one query
    timeout: float | None = None
    #: the environment variable holding the HTTP retriever's bearer token
    token_env: str | None = None
    path_key: str | None = None
    heading_key: str | None = None


@dataclass(frozen=True)
class Settings:
    index: IndexSettings = field(default_factory=IndexSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    eval: EvalSettings = field(default_factory=EvalSettings)
    retriever: RetrieverSettings = field(default_factory=RetrieverSettings)
    #: the config file these settings came from (None = defaults only)
    source: Path | None = None


# --------------------------------------------------------------------------- parsing
