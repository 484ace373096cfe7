"""From what a user asked for to the effective settings of one evaluation.

Both doors into evaluation -- the pytest plugin and ``groove eval`` -- take the same
inputs (a KB, maybe a golden path, a config file, k values, a limit, a model, a
reranker, pipeline overrides, an index directory) and must turn them into the same
effective settings.  That translation lives here so it is written once.

Order of precedence: explicit request > ``groove.toml`` > built-in defaults.
Normalisation of ``limit`` and the k list follows spec-eval §3.2: k values are capped
at the retrieval cap, sorted and de-duplicated; an omitted limit defaults to the
largest *requested* k; a limit over the cap is lowered with a note; the fetch depth is
``max(largest k, limit)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from pytest_groove.config import (
    SEARCH_LIMIT_MAX,
    SearchOverrides,
    Settings,
    check_k_values,
    load_settings,
    normalise_k_values,
    with_overrides,
)
from pytest_groove.errors import UsageError
from pytest_groove.evaluation.compare import ThresholdError, Thresholds, parse_thresholds
from pytest_groove.evaluation.finish import EvalContext, EvalFlags
from pytest_groove.evaluation.golden import resolve_golden_path
from pytest_groove.evaluation.records import GoldenSet
from pytest_groove.evaluation.run import Fingerprint, RunRecord
from pytest_groove.kb.records import ChunkText, CorpusSnapshot
from pytest_groove.options import RunOptions

#: the note printed (after a ``prog: `` prefix) when the limit is lowered to the cap
LIMIT_CAP_NOTE = "note: limit {requested} exceeds the retrieval cap; using {cap}"
MMR_IGNORED_NOTE = "MMR override values were provided but effective MMR is off; values ignored"


@dataclass(frozen=True)
class EvalRequest:
    """What was asked for; None means "not given, use the config or the default"."""

    kb: Path
    golden: Path | None = None
    config_file: Path | None = None
    k_values: tuple[int, ...] | None = None
    limit: int | None = None
    model: str | None = None
    reranker: str | None = None
    overrides: SearchOverrides = field(default_factory=SearchOverrides)
    index_dir: Path | None = None
    vector_index: str | None = None
    #: ``--threshold``: one number or metric=number pairs (None = the config's)
    threshold: str | None = None


def eval_request(kb: Path, run: RunOptions) -> EvalRequest:
    """What a door was asked for, as an :class:`EvalRequest` (the one place it is built)."""
    return EvalRequest(
        kb=kb,
        golden=run.golden,
        config_file=run.config,
        k_values=run.k,
        limit=run.limit,
        model=run.model,
        reranker=run.reranker,
        overrides=SearchOverrides(
            mmr=run.mmr,
            mmr_lambda=run.mmr_lambda,
            mmr_same_doc_penalty=run.mmr_same_doc_penalty,
            parent_retriever=run.parent_retriever,
        ),
        index_dir=run.index_dir,
        vector_index=run.vector_index,
        threshold=run.threshold,
    )


def eval_flags(run: RunOptions, *, color: bool) -> EvalFlags:
    """The per-invocation switches of the session end, from a door's options."""
    return EvalFlags(
        no_history=run.no_history,
        no_diff=run.no_diff,
        fail_on_regression=run.fail_on_regression,
        freeze_baseline=run.freeze_baseline,
        baseline=run.baseline,
        color=color,
        json_path=run.json,
        html_path=run.html,
        trec_run_path=run.trec_run,
        trec_qrels_path=run.trec_qrels,
    )


@dataclass(frozen=True)
class EvalSetup:
    """The effective, validated settings of one evaluation."""

    kb: Path
    #: config + request: model, index_dir and search overrides already applied
    settings: Settings
    golden_path: Path
    #: normalised: capped at the retrieval cap, sorted, de-duplicated
    k_values: tuple[int, ...]
    #: normalised limit (recorded in the fingerprint)
    limit: int
    #: how many hits each query fetches: max(largest k, limit)
    depth: int
    #: notes for stderr, without a program prefix (e.g. the limit-cap note)
    notes: tuple[str, ...] = ()
    #: the regression threshold of each metric (None = [eval].regression_threshold)
    thresholds: Thresholds | None = None


def resolve_eval_setup(request: EvalRequest) -> EvalSetup:
    """Read ``groove.toml`` and apply the request on top of it.

    Raises :class:`~pytest_groove.errors.GrooveError` for a bad config file or an
    invalid k list, :class:`~pytest_groove.errors.UsageError` for bad override values.
    """
    kb = request.kb
    settings = with_overrides(
        load_settings(kb, request.config_file),
        model=request.model,
        index_dir=request.index_dir,
        vector_index=request.vector_index,
        overrides=replace(request.overrides, reranker=request.reranker),
    )
    search = settings.search

    raw_k = request.k_values if request.k_values is not None else settings.eval.k_values
    check_k_values(tuple(raw_k), "--k" if request.k_values is not None else "[eval].k_values")
    k_values = normalise_k_values(tuple(raw_k))

    notes: list[str] = []
    requested_limit = request.limit if request.limit is not None else max(raw_k)
    limit = min(requested_limit, SEARCH_LIMIT_MAX)
    if limit < requested_limit:
        notes.append(LIMIT_CAP_NOTE.format(requested=requested_limit, cap=SEARCH_LIMIT_MAX))
    ov = request.overrides
    if (ov.mmr_lambda is not None or ov.mmr_same_doc_penalty is not None) and not (
        search.mmr.enabled
    ):
        notes.append(MMR_IGNORED_NOTE)

    golden_path = resolve_golden_path(kb, request.golden, settings.eval.golden)
    thresholds = resolve_thresholds(request.threshold, settings.eval.regression_threshold, k_values)
    return EvalSetup(
        kb=kb,
        settings=settings,
        golden_path=golden_path,
        k_values=k_values,
        limit=limit,
        depth=max(max(k_values), limit),
        notes=tuple(notes),
        thresholds=thresholds,
    )


def resolve_thresholds(spec: str | None, default: float, k_values: Sequence[int]) -> Thresholds:
    """``--threshold`` over ``[eval].regression_threshold``, checked against the k values.

    Raises :class:`UsageError` (before any search) for a bad specification or a
    metric at a k this run does not measure.
    """
    if spec is None:
        return Thresholds(default)
    try:
        thresholds = parse_thresholds(spec, default)
    except ThresholdError as exc:
        raise UsageError(f"--threshold: {exc}") from None
    unknown = thresholds.unknown_k(k_values)
    if unknown:
        measured = ", ".join(str(k) for k in k_values)
        raise UsageError(
            f"--threshold names {', '.join(unknown)}, which this run does not measure "
            f"(k values: {measured})"
        )
    return thresholds


def eval_context(
    setup: EvalSetup,
    golden: GoldenSet,
    fingerprint: Fingerprint,
    flags: EvalFlags,
    *,
    history: Sequence[RunRecord],
    history_warnings: Sequence[str],
    corpus: CorpusSnapshot | None,
    chunk_texts: Iterable[ChunkText] | None,
    prog: str,
    fail_flag: str = "--fail-on-regression",
) -> EvalContext:
    """The session end's inputs besides the results (the one place they are assembled).

    ``corpus`` and ``chunk_texts`` come from the read snapshot that answered the
    searches (None when a custom retriever answered them).
    """
    return EvalContext(
        kb=setup.kb,
        golden=golden,
        fingerprint=fingerprint,
        corpus=corpus,
        settings=setup.settings.eval,
        flags=flags,
        chunk_texts=chunk_texts,
        history=history,
        history_warnings=history_warnings,
        prog=prog,
        fail_flag=fail_flag,
        thresholds=setup.thresholds,
    )
