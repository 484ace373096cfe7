"""The first step of every evaluation: from the options a door was given to a plan.

Both doors -- the pytest plugin and ``groove eval`` -- read their flags into one
:class:`~pytest_groove.settings.options.RunOptions` and call :func:`plan_evaluation`, which
checks every precondition that needs no index and no search, once: the option
combinations, the HTML extra, ``groove.toml``, the k values and the limit, the
thresholds, the golden file.  A refusal is a :class:`UsageError` or
:class:`GrooveError` whose message names options with :func:`~pytest_groove.errors.
flag` tokens, so each door spells them its own way.

Order of precedence: explicit option > ``groove.toml`` > built-in defaults.
Normalisation of ``limit`` and the k list follows spec-eval §3.2: k values are capped
at the retrieval cap, sorted and de-duplicated; an omitted limit defaults to the
largest *requested* k; a limit over the cap is lowered with a note; the fetch depth is
``max(largest k, limit)``.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from pytest_groove.engine.names import check_flag_names
from pytest_groove.errors import GrooveError, UsageError, clip_path, clip_repr, flag
from pytest_groove.evaluation.gate.policy import GatePlan, refuse_unmeasured, resolve_gate
from pytest_groove.evaluation.gate.query_names import shared_id_warnings
from pytest_groove.evaluation.golden.file import GoldenMissing, load_golden, resolve_golden_path
from pytest_groove.evaluation.history.accepted import (
    AcceptedBaseline,
    baseline_path,
    load_baseline,
)
from pytest_groove.evaluation.history.file import find_run, history_path, load_history
from pytest_groove.evaluation.reports.badge import badge_metric_problem
from pytest_groove.evaluation.reports.formats import check_report_extras
from pytest_groove.evaluation.reports.targets import check_report_targets
from pytest_groove.evaluation.runs.record import RunRecord
from pytest_groove.evaluation.runs.trust import untrusted_warnings
from pytest_groove.files.guarded_io import HISTORY_CAP, ReadRefused
from pytest_groove.scoring.records import GoldenSet
from pytest_groove.scoring.thresholds import ThresholdError, Thresholds, parse_thresholds
from pytest_groove.search.retrievers.run_options import (
    check_http_only_options,
    check_no_retriever_details,
    retriever_notes,
    with_retriever_settings,
)
from pytest_groove.settings.config import (
    SEARCH_LIMIT_MAX,
    Settings,
    check_k_values,
    normalise_k_values,
)
from pytest_groove.settings.options import RunOptions, contradiction, settings_for

#: the note printed (after a ``prog: `` prefix) when the limit is lowered to the cap
LIMIT_CAP_NOTE = "note: limit {requested} exceeds the retrieval cap; using {cap}"
#: the same note when no limit was given and the largest k is what went over the cap
K_CAP_NOTE = (
    "note: k {requested} exceeds the retrieval cap; using {cap} (for that k and for the "
    "limit, which defaults to the largest k)"
)
MMR_IGNORED_NOTE = "MMR override values were provided but effective MMR is off; values ignored"


@dataclass(frozen=True)
class StoredRuns:
    """The history as read before the first search (the session end compares with it)."""

    runs: tuple[RunRecord, ...] = ()
    #: what reading it said (a damaged file started fresh, a run skipped ...)
    warnings: tuple[str, ...] = ()
    #: the accepted baseline, when the KB has one (it is the gate's baseline then)
    accepted: AcceptedBaseline | None = None


@dataclass(frozen=True)
class EvalPlan:
    """An evaluation's validated inputs: everything known before a searcher is opened."""

    kb: Path
    #: the options as the door was given them (the per-run switches are read from here)
    options: RunOptions
    #: ``groove.toml`` with the options applied (model, index_dir, search overrides)
    settings: Settings
    golden: GoldenSet
    #: normalised: capped at the retrieval cap, sorted, de-duplicated
    k_values: tuple[int, ...]
    #: normalised limit (recorded in the fingerprint)
    limit: int
    #: how many hits each query fetches: max(largest k, limit)
    depth: int
    #: the regression threshold of each metric
    thresholds: Thresholds
    #: the optional metrics measured (metric table keys; command line over [eval])
    metrics: tuple[str, ...] = ()
    #: names the tool in report banners and messages (``groove eval``, ``groove``)
    prog: str = "groove eval"
    #: notes for stderr, without a program prefix (e.g. the limit-cap note)
    notes: tuple[str, ...] = ()
    #: the warnings of :func:`retriever_notes`, for a door whose retriever comes from a
    #: hook (with a ``--retriever`` spec they are among ``notes``)
    retriever_notes: tuple[str, ...] = ()
    #: the history, when read at plan time (``read_history=True``); else read at begin
    stored: StoredRuns | None = None
    #: byte cap of the history file (tests lower it)
    history_cap: int = HISTORY_CAP
    history_file: Path | None = field(default=None)
    #: the floors and the significance level of the gate
    gate: GatePlan = field(default_factory=GatePlan)

    @property
    def history_path(self) -> Path:
        return self.history_file if self.history_file is not None else history_path(self.kb)

    @property
    def baseline_path(self) -> Path:
        """Where the accepted baseline is (it may not exist)."""
        configured = self.options.baseline_file or self.settings.eval.baseline_file
        return baseline_path(self.kb, configured)

    @property
    def strict(self) -> bool:
        """Known misses of the accepted baseline fail like any miss."""
        return self.options.strict or self.settings.eval.strict

    @property
    def compares(self) -> bool:
        """Whether a stored run is looked for at all (no ``--no-history`` / ``--no-diff``)."""
        return not (self.options.no_history or self.options.no_diff)

    def read_history(self) -> StoredRuns:
        """The stored runs: as read at plan time, else now (``[]`` with no history)."""
        if self.stored is not None:
            return self.stored
        return read_stored_runs(self)


def read_stored_runs(plan: EvalPlan) -> StoredRuns:
    """Read the history once; a named ``--baseline`` that matches no run stops us here."""
    accepted = read_accepted(plan)
    if plan.options.no_history:
        return StoredRuns(accepted=accepted)
    warnings: list[str] = []
    runs = load_history(plan.history_path, warnings=warnings, cap=plan.history_cap)
    warnings += untrusted_warnings(runs, plan.history_path)
    if plan.options.baseline is not None and plan.compares:
        find_run(runs, plan.options.baseline, plan.history_path)
    return StoredRuns(tuple(runs), tuple(warnings), accepted)


def read_accepted(plan: EvalPlan) -> AcceptedBaseline | None:
    """The accepted baseline, unless nothing is compared (``--no-diff``,
    ``--no-history``) or a run of the log was named (``--baseline RUN``); one line
    when it cannot be read."""
    if not plan.compares or plan.options.baseline is not None:
        return None
    # below the KB without following links, as the golden file (a path outside it is
    # opened by name)
    return load_baseline(plan.baseline_path, plan.kb)


def check_option_combinations(options: RunOptions) -> None:
    """Options that contradict each other, or need an extra that is missing."""
    refusal = contradiction(options, flag)
    if refusal is not None:
        raise UsageError(refusal)
    # before any index work or search: a missing extra should not cost a run
    check_report_extras(options, flag)


def plan_evaluation(
    kb: Path,
    options: RunOptions,
    *,
    prog: str = "groove eval",
    read_history: bool = False,
    golden: GoldenSet | None = None,
    check_model: bool = True,
    retriever_hook: bool = False,
) -> EvalPlan:
    """Check everything that needs neither an index nor a search, once.

    ``read_history`` reads the history now (``groove eval``: a refused file stops the
    run before any index work); the plugin reads it when the evaluation begins, so a
    session that selects no golden query never touches it.  Raises
    :class:`~pytest_groove.errors.GrooveError` (a bad config or golden file) or
    :class:`UsageError` (contradicting or bad option values).  ``check_model`` False
    leaves the ``--model`` name alone (a pytest hook supplies the embedder);
    ``retriever_hook`` says a ``pytest_groove_retriever`` hook may supply the retriever.
    """
    _check_options(options, check_model=check_model, retriever_hook=retriever_hook)
    settings = settings_for(kb, options)
    measured = options.retriever is not None or retriever_hook
    unused = retriever_notes(options, settings, retriever_hook) if measured else []
    options = with_retriever_settings(options, settings)
    cutoffs = _plan_cutoffs(options, settings)
    metrics, thresholds = _plan_thresholds(options, settings, cutoffs.k_values)
    if golden is None:
        golden = _load_named_golden(kb, options, settings)
    notes = [*cutoffs.notes, *_search_notes(options, settings, unused), *_golden_notes(golden)]
    plan = EvalPlan(
        kb=kb,
        options=options,
        settings=settings,
        golden=golden,
        k_values=cutoffs.k_values,
        limit=cutoffs.limit,
        depth=max(max(cutoffs.k_values), cutoffs.limit),
        thresholds=thresholds,
        metrics=metrics,
        prog=prog,
        notes=tuple(notes),
        retriever_notes=tuple(unused),
        gate=resolve_gate(options, settings, cutoffs.k_values, metrics),
    )
    _check_badge_metric(options, cutoffs.k_values, metrics)
    check_report_targets(
        kb,
        options,
        settings,
        golden=Path(golden.path),
        history=plan.history_path,
        baseline=plan.baseline_path,
    )
    if read_history:
        plan = replace(plan, stored=read_stored_runs(plan))
    return plan


def _check_badge_metric(
    options: RunOptions, k_values: Sequence[int], metrics: Sequence[str]
) -> None:
    """A ``--badge-metric`` the run cannot show stops it before any index work."""
    if options.badge_metric is None:
        return
    problem = badge_metric_problem(options.badge_metric, k_values, metrics)
    if problem is not None:
        raise UsageError(f"{flag('badge-metric')} {clip_repr(options.badge_metric)} {problem}")


def _check_options(options: RunOptions, *, check_model: bool, retriever_hook: bool) -> None:
    """The options on their own, before ``groove.toml`` is read."""
    check_option_combinations(options)
    if options.retriever is None and not retriever_hook:
        check_no_retriever_details(options)
    check_http_only_options(options, retriever_hook)
    check_flag_names(options, model=check_model)


@dataclass(frozen=True)
class _Cutoffs:
    """The k values and the limit, normalised, with the note a capped one calls for."""

    k_values: tuple[int, ...]
    limit: int
    notes: tuple[str, ...]


def _plan_cutoffs(options: RunOptions, settings: Settings) -> _Cutoffs:
    """``--k`` over ``[eval].k_values`` and ``--limit`` over the largest k, capped."""
    raw_k = options.k if options.k is not None else settings.eval.k_values
    check_k_values(tuple(raw_k), flag("k") if options.k is not None else "[eval].k_values")
    requested_limit = options.limit if options.limit is not None else max(raw_k)
    limit = min(requested_limit, SEARCH_LIMIT_MAX)
    notes: tuple[str, ...] = ()
    if limit < requested_limit:
        # named for where the number came from: a --limit, or the largest k
        note = LIMIT_CAP_NOTE if options.limit is not None else K_CAP_NOTE
        notes = (note.format(requested=requested_limit, cap=SEARCH_LIMIT_MAX),)
    return _Cutoffs(normalise_k_values(tuple(raw_k)), limit, notes)


def _plan_thresholds(
    options: RunOptions, settings: Settings, k_values: tuple[int, ...]
) -> tuple[tuple[str, ...], Thresholds]:
    """The optional metrics measured (``--metrics`` over ``[eval].metrics``) and the
    regression threshold of each metric."""
    metrics = options.metrics if options.metrics is not None else settings.eval.metrics
    thresholds = resolve_thresholds(
        options.threshold, settings.eval.regression_threshold, k_values, metrics
    )
    return metrics, thresholds


def _search_notes(options: RunOptions, settings: Settings, unused: list[str]) -> list[str]:
    """What this run's search will not use: a ``--retriever``'s unused options, or MMR
    values with MMR off."""
    if options.retriever is not None:
        # a hook's retriever is known only once the hook answers: the door notes them then
        return list(unused)
    mmr_values = options.mmr_lambda is not None or options.mmr_same_doc_penalty is not None
    if mmr_values and not settings.search.mmr.enabled:
        return [MMR_IGNORED_NOTE]
    return []


def _golden_notes(golden: GoldenSet) -> list[str]:
    """Queries sharing an id are named apart in the reports: say so, and how to name them."""
    return [f"warning: {warning}" for warning in shared_id_warnings(golden)]


def _load_named_golden(kb: Path, options: RunOptions, settings: Settings) -> GoldenSet:
    """The golden set; a file that is missing or no file at all, when ``[eval].golden``
    named it, is refused naming that setting too -- the fix is there."""
    path = resolve_golden_path(kb, options.golden, settings.eval.golden)
    named_by_config = options.golden is None and settings.eval.golden is not None
    try:
        return load_golden(path, kb)
    except GoldenMissing:
        if options.golden is not None:
            # the flag named it: "pass --golden" would be no help
            raise GrooveError(
                f"no golden file at {clip_path(path)}, which {flag('golden')} names; check "
                "the path (relative to the working directory) or create the file"
            ) from None
        if not named_by_config:
            raise
        raise GrooveError(
            f"no golden file at {clip_path(path)}, which [eval].golden in "
            f"{clip_path(settings.source)} names; fix the setting or create the file"
        ) from None
    except ReadRefused as exc:
        if not named_by_config:
            raise
        raise GrooveError(
            f"{exc.message} ([eval].golden in {clip_path(settings.source)})"
        ) from None


def resolve_thresholds(
    spec: str | None, default: float, k_values: Sequence[int], metrics: Sequence[str] = ()
) -> Thresholds:
    """``--threshold`` over ``[eval].regression_threshold``, checked against the k values.

    Raises :class:`UsageError` (before any search) for a bad specification or a
    metric at a k this run does not measure.
    """
    if spec is None:
        return Thresholds(default)
    try:
        thresholds = parse_thresholds(spec, default)
    except ThresholdError as exc:
        raise UsageError(f"{flag('threshold')}: {exc}") from None
    # an optional metric the run is not asked to measure could never apply either
    keys = [key for key, _ in thresholds.per_metric]
    unknown = thresholds.unknown_k(k_values)
    refuse_unmeasured(flag("threshold"), unknown, keys, k_values, metrics, UsageError)
    return thresholds
