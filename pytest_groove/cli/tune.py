"""``groove tune``: can the fusion knobs move retrieval quality on this KB?

Order of a run: resolve settings (flags > ``groove.toml`` > defaults) with the same
code ``groove eval`` uses, load the golden file, open (and by default refresh) the
index, then inside one read snapshot: pre-flight, the exit-2 gate, warnings, the
sweep, the decision.  stdout gets the report only; progress, notes and warnings go
to stderr in ASCII (but for the em dash of the seed's context warning, ``WARNING —``,
which a terminal that cannot show it gets as ``-``).  Exit status: 0 for a report
(whatever the verdict), 2 when no golden query can react to the fusion parameters or a
flag is bad, 1 for any other error.  tune applies nothing and writes no history.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pytest_groove.cli.args import (
    add_golden_arguments,
    add_kb_arguments,
    add_options,
    check_kb,
    run_options,
    run_reporting_errors,
)
from pytest_groove.errors import IndexMissing, spell_flags

if TYPE_CHECKING:
    from pytest_groove.evaluation.plan import EvalPlan
    from pytest_groove.settings.config import SearchSettings
    from pytest_groove.tune.sweep import CandidateSource, MetricTable, Preflight

PROG = "groove tune"
EXIT_OK = 0
EXIT_NOT_MEASURABLE = 2
#: below this many effective queries the IR convention calls results suggestive
SMALL_N_WARN = 50

CONTEXT_NOOP_WARNING = (
    "groove tune: WARNING — every chunk has an empty context column, so the\n"
    "bm25_context_weight axis is a no-op on this KB (contextual retrieval is off).\n"
    'Its rows below mean "not measured", not "has no effect".\n'
)


def context_noop_warning(why: str) -> str:
    """The warning, with the reason the index's context mode gives (the words above
    for an index built with contextual retrieval off)."""
    return CONTEXT_NOOP_WARNING.replace("contextual retrieval is off", why)


# --------------------------------------------------------------------------- arguments


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``tune`` on the ``groove`` command's sub-parsers."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "tune",
        help="measure whether the fusion parameters (rrf_k, bm25 weights) can move quality",
        description=(
            "Sweep rrf_k x the three bm25 column weights (384 conditions) over the golden "
            "set, select by leave-one-query-out, and either print a [search.fusion] "
            "snippet or advise keeping the built-in defaults.  Applies nothing."
        ),
    )
    add_kb_arguments(p)
    add_golden_arguments(
        p, k_help="k values for recall and nDCG (5 is always added: nDCG at 5 decides)"
    )
    add_options(
        p,
        ("limit",),
        help={"limit": "length of each fused list (default and minimum: the largest k)"},
    )
    p.add_argument(
        "--plot",
        type=Path,
        metavar="PATH.png",
        help="also draw a heatmap of rrf_k x heading weight (needs the 'plots' extra)",
    )
    p.set_defaults(func=run)
    return p


# --------------------------------------------------------------------------- helpers


def tune_k_values(k_values: Sequence[int]) -> tuple[int, ...]:
    """The eval normalisation plus k=5, which the primary metric and threshold need."""
    from pytest_groove.settings.config import normalise_k_values
    from pytest_groove.tune.decide import PRIMARY_K

    return normalise_k_values((*k_values, PRIMARY_K))


def tune_limit(limit: int, k_values: Sequence[int]) -> int:
    """A fused list is never shorter than the deepest k it is scored at."""
    return max(limit, max(k_values))


def _warn(err: TextIO, line: str) -> None:
    err.write(f"{PROG}: {spell_flags(line)}\n")


def _progress(err: TextIO) -> Callable[[str], None]:
    """Progress lines of the sweep, as they come, on stderr."""

    def write(line: str) -> None:
        err.write(line + "\n")

    return write


def not_measurable_message(pre: Preflight) -> str:
    """The exit-2 diagnosis: why no grid point could differ from another."""
    q = len(pre.queries)
    lines = [
        f"{PROG}: none of the {q} golden queries is sensitive to the fusion parameters "
        "(every query has fewer than 2 FTS candidates), so the grid was not run.",
        "  A query reaches the bm25 stage through the phrases it compiles to: its tokens "
        "are OR'ed over a trigram index, so any token of three or more characters that "
        "occurs in a chunk is enough, and a query made only of shorter tokens is tried "
        "verbatim.  Add golden queries with distinctive terms (product and API names, "
        "commands, error codes) and run tune again.",
    ]
    lines += [
        f"  {q.diagnostics.id}: FTS candidates = {q.diagnostics.fts_candidates}"
        for q in pre.queries
    ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- running


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Execute ``groove tune`` for parsed ``args``; returns the exit status."""
    return run_reporting_errors(_tune, args, out, err)


@dataclass(frozen=True)
class _TuneSetup:
    """The effective inputs of one tune run."""

    plan: EvalPlan
    #: the eval k values plus k=5
    k_values: tuple[int, ...]
    #: the length of each fused list
    limit: int


def _tune(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    # heavy imports (numpy tables, the engine) only once a run really starts
    from pytest_groove.engine.builtin import open_engine
    from pytest_groove.engine.index_command import missing_index
    from pytest_groove.engine.names import check_config_names
    from pytest_groove.tune.golden_check import check_golden_against_index
    from pytest_groove.tune.sweep import build_metric_table

    run = _setup(args, err)
    settings = run.plan.settings
    settings = replace(settings, search=replace(settings.search, reranker="none"))
    check_config_names(settings)  # a model groove.toml names that nothing knows
    try:
        engine = open_engine(
            run.plan.kb, settings, reindex=not args.no_reindex, log=lambda line: _warn(err, line)
        )
    except IndexMissing as exc:
        raise missing_index(
            exc, run.plan.kb, run.plan.options, no_reindex=args.no_reindex
        ) from None
    try:
        # one read snapshot: every candidate list describes the same index state
        with engine.read_snapshot():
            # the golden set against the index, exactly as groove eval checks it
            check_golden_against_index(run.plan, engine)
            pre = _preflight(engine, run, err)
            if pre is None:
                return EXIT_NOT_MEASURABLE
            _warn(err, "sweeping 64 bm25 weight conditions x 6 rrf_k values...")
            table = build_metric_table(engine, pre, log=_progress(err))
        model = engine.model_name
    finally:
        engine.close()
    _report(args, run, model, pre, table, out, err)
    return EXIT_OK


def _setup(args: argparse.Namespace, err: TextIO) -> _TuneSetup:
    """Settings (as ``groove eval`` resolves them, with notes), golden set, k values, limit."""
    from pytest_groove.evaluation.plan import plan_evaluation
    from pytest_groove.settings.config import SEARCH_LIMIT_MAX
    from pytest_groove.tune.plot import check_plot_target

    kb: Path = args.kb_path
    check_kb(kb)
    if args.plot is not None:
        check_plot_target(args.plot)
    # tune measures the fusion stage, before any reranker
    plan = plan_evaluation(kb, replace(run_options(args), reranker="none"), prog=PROG)
    k_values = tune_k_values(plan.k_values)
    limit = min(tune_limit(plan.limit, k_values), SEARCH_LIMIT_MAX)
    for note in plan.notes:
        _warn(err, note)
    _config_notes(plan.settings.search, err)
    return _TuneSetup(plan=plan, k_values=k_values, limit=limit)


def _config_notes(search: SearchSettings, err: TextIO) -> None:
    """Say which configured search settings the sweep does not measure."""
    if search.mmr.enabled or search.parent_retriever.enabled:
        _warn(
            err,
            "note: [search.mmr] / [search.parent_retriever] are enabled in the config, but "
            "tune only measures the plain RRF stage; they play no part here.",
        )
    if not search.fusion.is_default:
        _warn(
            err,
            "note: [search.fusion] is customised in the config; every delta below is still "
            "measured against the BUILT-IN defaults, not against your values.",
        )


def _preflight(source: CandidateSource, run: _TuneSetup, err: TextIO) -> Preflight | None:
    """Which queries can react to the fusion parameters; None (after saying why) if none."""
    from pytest_groove.tune.sweep import run_preflight
    from pytest_groove.tune.units import repeated_text_warning

    pre = run_preflight(
        source,
        run.plan.golden.queries,
        run.limit,
        run.k_values,
        log=_progress(err),
        document_first=run.plan.settings.search.document_first,
        note_order=run.plan.settings.search.note_order,
    )
    effective = pre.effective
    if not effective:
        err.write(not_measurable_message(pre))
        return None
    if pre.context_axis_noop:
        err.write(context_noop_warning(pre.context_axis_why))
    _warn(
        err,
        f"{len(effective)} of {len(pre.queries)} golden queries are effective "
        "(FTS candidates >= 2)",
    )
    for q in pre.queries:
        if not q.diagnostics.effective:
            err.write(
                f"  insensitive: {q.diagnostics.id} (FTS candidates = "
                f"{q.diagnostics.fts_candidates}; the fusion parameters cannot move it)\n"
            )
    # queries repeating another's text count once (tune/units.py)
    repeated = repeated_text_warning([q.golden for q in pre.queries], pre.units)
    if repeated is not None:
        _warn(err, repeated)
    if len(pre.units) < SMALL_N_WARN:
        _warn(
            err,
            f"WARNING: effective N = {len(pre.units)} is below {SMALL_N_WARN}, the usual "
            "minimum number of topics in IR evaluation; treat the numbers below as "
            "suggestive, not conclusive.",
        )
    return pre


def _report(
    args: argparse.Namespace,
    run: _TuneSetup,
    model: str,
    pre: Preflight,
    table: MetricTable,
    out: TextIO,
    err: TextIO,
) -> None:
    """The verdict on stdout, then the heatmap and the cost split on stderr."""
    from pytest_groove.evaluation.gate.compare import color_enabled
    from pytest_groove.text.console import write_json
    from pytest_groove.tune.plot import write_heatmap
    from pytest_groove.tune.report import analyse, render_json, render_text

    result = analyse(str(run.plan.kb), run.plan.golden.path, model, pre, table)
    if args.format == "json":
        write_json(out, render_json(result))
    else:
        out.write(render_text(result, color=color_enabled(args.no_color, out)))
    out.flush()
    if args.plot is not None:
        write_heatmap(args.plot, table.primary, pre.units, result.verdict.refit.index)
        _warn(err, f"heatmap written to {args.plot}")
    _warn(err, f"cost split: {pre.timings.summary()}")
