"""The ``groove tune`` report: text for people, JSON for tools.

:func:`analyse` turns a finished sweep into a :class:`TuneResult` (the decision
plus what the report shows next to it); :func:`render_text` and :func:`to_json`
only format it.  Results go to stdout; progress and warnings never appear here.

JSON keys are written sorted, metric maps are keyed by ``k`` as a string, and a
non-finite number (the paired SE of a single effective query) is ``null``.  The
schema is documented in ``docs/tune.md``.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_groove.scoring.metric_table import METRIC_KINDS, Values
from pytest_groove.scoring.metrics import AggregateMetrics
from pytest_groove.tune.decide import (
    PRIMARY,
    PRIMARY_K,
    STABILITY_MIN,
    QueryImpact,
    Verdict,
    decide,
    display_name,
    per_query_impact,
    phase_k_sweep,
    phase_w_ranking,
)
from pytest_groove.tune.grid import (
    DEFAULT_CONDITION,
    DEFAULT_INDEX,
    RRF_K_VALUES,
    WEIGHT_VALUES,
    Condition,
    toml_snippet,
)
from pytest_groove.tune.sweep import MetricTable, Preflight
from pytest_groove.tune.units import unit_table

BOLD = "\x1b[1m"
DIM = "\x1b[90m"
RESET = "\x1b[0m"


@dataclass(frozen=True)
class TuneResult:
    """Everything one ``groove tune`` run measured and decided."""

    kb_path: str
    golden_path: str
    model: str
    preflight: Preflight
    table: MetricTable
    verdict: Verdict
    impact: QueryImpact
    #: Phase W's five best weight triples at k=60: (condition, mean primary metric)
    top_weights: list[tuple[int, float]]
    #: the six k values at the refit's weights: (condition, mean primary metric)
    k_sweep: list[tuple[int, float]]

    @property
    def baseline(self) -> AggregateMetrics:
        return self.table.aggregate(DEFAULT_INDEX)

    @property
    def refit_aggregate(self) -> AggregateMetrics:
        return self.table.aggregate(self.verdict.refit.index)


def analyse(
    kb_path: str, golden_path: str, model: str, pre: Preflight, table: MetricTable
) -> TuneResult:
    """Run the decision on a filled metric table and collect the report's numbers."""
    # queries repeating a text are one unit of the selection and the statistics
    units = pre.units
    verdict = decide(table.primary, table.secondary(), units=units)
    refit = verdict.refit.index
    # the grid rows are the means the selection compared: one row per unit
    per_unit = unit_table(table.primary, units)
    rows = range(len(units))
    return TuneResult(
        kb_path=kb_path,
        golden_path=golden_path,
        model=model,
        preflight=pre,
        table=table,
        verdict=verdict,
        impact=per_query_impact(table.primary, refit),
        top_weights=phase_w_ranking(per_unit, rows, chosen=refit),
        k_sweep=phase_k_sweep(per_unit, rows, refit),
    )


# --------------------------------------------------------------------------- text


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def bold(self, text: str) -> str:
        return f"{BOLD}{text}{RESET}" if self.color else text

    def dim(self, text: str) -> str:
        return f"{DIM}{text}{RESET}" if self.color else text


def _fixed(value: float, places: int = 4) -> str:
    return "inf" if math.isinf(value) else f"{value:.{places}f}"


_DIAGNOSTICS_LEGEND = (
    "  (fts: FTS candidates in the pool at the default weights; >= 2 makes a query",
    "   effective.  docfreq: chunks matching ANY phrase of the query, because queries",
    "   compile to OR'ed phrases, so it bounds each phrase's document frequency from",
    "   above.  overlap: chunks in both the vector list and the FTS list; 0 means rrf_k",
    "   cannot reorder that query.  bm25?: the FTS order moved between the heading-heavy",
    "   and content-heavy weight extremes.  idf CLMP: the union covers at least half of",
    "   all chunks, a hint that FTS5 clamps the IDF rather than proof.  ties: adjacent",
    "   equal float32 RRF scores at the default condition.)",
)


def render_text(result: TuneResult, color: bool = False) -> str:
    """The human report; always ends in exactly one newline."""
    s = _Style(color)
    counted = _counted(result.preflight)
    sections = [
        _header_lines(result, s),
        _diagnostics_lines(result.preflight, s),
        _grid_lines(result, s, counted),
        _cv_lines(result.verdict, s, counted),
        _secondary_lines(result, s),
        _impact_lines(result, s),
        _verdict_lines(result.verdict, s),
    ]
    # a blank line between sections
    return "\n\n".join("\n".join(lines) for lines in sections) + "\n"


def _counted(pre: Preflight) -> str:
    """What the statistics counted: queries that repeat a text count once."""
    e_total = len(pre.effective)
    units = pre.units
    if len(units) == e_total:
        return f"{e_total} effective queries"
    return (
        f"{len(units)} distinct text{'' if len(units) == 1 else 's'} of the "
        f"{e_total} effective queries"
    )


def _header_lines(result: TuneResult, s: _Style) -> list[str]:
    pre = result.preflight
    e_total = len(pre.effective)
    units = pre.units
    out = [
        f"{s.bold('groove tune')} — {result.kb_path}",
        f"  golden: {result.golden_path}   model: {result.model}   "
        "reranker: none (tune measures the fusion stage, before any reranker)",
        f"  limit: {pre.limit}   candidate pool: {pre.pool_size} (floor, not a cap)   "
        f"chunks in index: {pre.chunk_total}",
        f"  queries: {len(pre.queries)} total / {e_total} effective (FTS candidates >= 2)   "
        f"primary metric: {PRIMARY.label}",
    ]
    if len(units) != e_total:
        out.append(
            f"  repeated texts: {e_total - len(units)} effective queries repeat another's "
            f"text; each text counts once below (N = {len(units)})"
        )
    if pre.context_axis_noop:
        # the stderr warning's words, kept with the report it qualifies
        out.append(
            "  context axis: every chunk has an empty context column, so the "
            f"bm25_context_weight axis is a no-op on this KB ({pre.context_axis_why}); "
            'its rows below mean "not measured", not "has no effect"'
        )
    return out


def _diagnostics_lines(pre: Preflight, s: _Style) -> list[str]:
    out = [
        s.bold("## Query diagnostics"),
        f"  {'query':<28} {'fts':>5} {'docfreq':>8} {'overlap':>8} {'bm25?':>6} "
        f"{'idf':>5} {'ties':>5}",
    ]
    for q in pre.queries:
        d = q.diagnostics
        out.append(
            f"  {d.id[:28]:<28} {d.fts_candidates:>5} {d.fts_total_matches:>8} "
            f"{d.vec_fts_overlap:>8} {'yes' if d.bm25_sensitive else 'no':>6} "
            f"{'CLMP' if d.idf_clamped else 'ok':>5} {d.rrf_ties:>5}"
        )
    out += [s.dim(line) for line in _DIAGNOSTICS_LEGEND]
    return out


def _grid_lines(result: TuneResult, s: _Style, counted: str) -> list[str]:
    out = [
        s.bold(f"## Grid (coordinate descent over {counted})"),
        "  Phase W — the five best bm25 weight sets at k=60:",
    ]
    picked = result.verdict.refit.weight_index
    for cond, score in result.top_weights:
        mark = "   <- selected" if Condition.from_index(cond).weight_index == picked else ""
        out.append(f"    {Condition.from_index(cond).label:<34} {PRIMARY.label} {score:.4f}{mark}")
    out.append("  Phase K — rrf_k at the winning weights:")
    for cond, score in result.k_sweep:
        out.append(f"    {Condition.from_index(cond).label:<34} {PRIMARY.label} {score:.4f}")
    return out


def _cv_lines(v: Verdict, s: _Style, counted: str) -> list[str]:
    loo = v.loo
    sign = loo.sign_test
    return [
        s.bold("## Nested leave-one-query-out CV"),
        f"  refit (all {counted}): {v.refit.label}",
        f"  folds: {loo.folds}",
        f"  held-out mean delta vs default: {v.held_out_mean:+.4f}   (threshold {v.min_delta:.4f})",
        f"  paired SE (SD/sqrt(N)): {_fixed(v.paired_se)}   "
        f"{v.multiplier:.1f} x SE: {_fixed(v.multiplier * v.paired_se)}",
        f"  sign test: {sign.improved} improved / {sign.degraded} degraded / {sign.tied} tied   "
        f"two-sided p = {sign.p_value:.4f}",
        f"  selection stability: {v.stability:.2f} of folds picked the refit condition "
        f"(threshold > {STABILITY_MIN:.2f})",
    ]


def _secondary_lines(result: TuneResult, s: _Style) -> list[str]:
    v = result.verdict
    out = [s.bold(f"## Secondary metrics (all {len(result.preflight.queries)} golden queries)")]
    for name, (base, cand) in v.secondary.values.items():
        label = display_name(name)
        # rounded first, then + 0.0: an ulp-sized difference prints as +0.0000, not -0.0000
        delta = round(cand - base, 4) + 0.0
        out.append(f"  {label:<9} default {base:.4f} -> refit {cand:.4f} ({delta:+.4f})")
    if v.violations:
        out += [f"  DEGRADED: {violation}" for violation in v.violations]
    else:
        out.append("  no secondary metric degraded")
    return out


def _impact_lines(result: TuneResult, s: _Style) -> list[str]:
    impact = result.impact
    worst = ""
    if impact.worst_query is not None:
        worst = f" ({result.preflight.queries[impact.worst_query].diagnostics.id})"
    return [
        s.bold("## Per-query impact (refit vs default)"),
        f"  improved: {impact.improved}   degraded: {impact.degraded}   "
        f"worst delta: {impact.worst_delta:+.4f}{worst}",
        s.dim("  (an average gain from rank fusion often hides losses on single queries"),
        s.dim("   (Benham & Culpepper), so read this line before the average.)"),
    ]


def _verdict_lines(v: Verdict, s: _Style) -> list[str]:
    out = [
        s.bold("## Verdict"),
        f"  permutation test (paired sign-flip on the held-out deltas): "
        f"p = {v.permutation_p:.4f}   (reported only, not an adoption criterion)",
    ]
    if v.adopt:
        out += [
            f"  Recommendation: {v.refit.label}",
            "  Every adoption criterion passed.  Paste the block below into groove.toml,",
            "  then confirm with `groove eval` using your real pipeline (reranker and",
            "  [contextual] as in production) before you keep it: tune measured the plain",
            "  RRF stage only.",
            "",
        ]
        out.extend(toml_snippet(v.refit).rstrip("\n").split("\n"))
    else:
        out.append(f"  Recommendation: keep the built-in defaults ({DEFAULT_CONDITION.label}).")
        out += [f"    - {reason}" for reason in v.reasons]
        out.append(s.dim("  This is the usual outcome: RRF is known to need little tuning, and"))
        out.append(s.dim("  constants fitted to one golden set rarely carry over to another."))
    return out


# --------------------------------------------------------------------------- JSON


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _values_json(values: Values) -> Any:
    # the aggregate's own k order and values, as groove tune has always written them
    return {str(k): v for k, v in values.items()} if isinstance(values, Mapping) else values


def _agg_json(agg: AggregateMetrics) -> dict[str, Any]:
    out = {
        kind.json_key: _values_json(found)
        for kind in METRIC_KINDS
        if (found := kind.of_aggregate(agg)) is not None  # optional metrics left out
    }
    out["query_count"] = agg.query_count
    return out


def _rows_json(rows: list[tuple[int, float]]) -> list[dict[str, Any]]:
    return [{"condition": Condition.from_index(c).to_json(), "ndcg": s} for c, s in rows]


def to_json(result: TuneResult) -> dict[str, Any]:
    """The report as a JSON-ready dict (see docs/tune.md for the schema)."""
    pre = result.preflight
    v = result.verdict
    return {
        "kb_path": result.kb_path,
        "golden_path": result.golden_path,
        "model": result.model,
        "reranker": None,
        "limit": pre.limit,
        "candidate_pool": pre.pool_size,
        "primary_k": PRIMARY_K,
        "k_values": list(pre.k_values),
        "chunk_total": pre.chunk_total,
        "context_axis_noop": pre.context_axis_noop,
        "query_count": len(pre.queries),
        "effective_query_count": len(pre.effective),
        "repeated_queries": [
            [pre.queries[row].diagnostics.id for row in unit]
            for unit in v.loo.units
            if len(unit) > 1
        ],
        "diagnostics": [q.diagnostics.to_json() for q in pre.queries],
        "grid": {
            "rrf_k": list(RRF_K_VALUES),
            "bm25_weights": list(WEIGHT_VALUES),
            "top_weight_conditions": _rows_json(result.top_weights),
            "rrf_k_sweep": _rows_json(result.k_sweep),
        },
        "loo": _loo_json(v),
        "secondary_metrics": {
            "baseline": _agg_json(result.baseline),
            "refit": _agg_json(result.refit_aggregate),
            "violations": list(v.violations),
        },
        "per_query_impact": {
            "improved": result.impact.improved,
            "degraded": result.impact.degraded,
            "worst_delta": result.impact.worst_delta,
        },
        "verdict": _verdict_json(v),
    }


def _loo_json(v: Verdict) -> dict[str, Any]:
    loo = v.loo
    sign = loo.sign_test
    return {
        "refit": v.refit.to_json(),
        "folds": loo.folds,
        "held_out_diffs": list(loo.diffs),
        "mean_delta": v.held_out_mean,
        "paired_se": _finite_or_none(v.paired_se),
        "selection_stability": v.stability,
        "sign_test": {
            "improved": sign.improved,
            "degraded": sign.degraded,
            "tied": sign.tied,
            "p_value": sign.p_value,
        },
    }


def _verdict_json(v: Verdict) -> dict[str, Any]:
    verdict: dict[str, Any]
    if v.adopt:
        verdict = {
            "decision": "adopt",
            "condition": v.refit.to_json(),
            "toml_snippet": toml_snippet(v.refit),
        }
    else:
        verdict = {"decision": "keep_default", "reasons": list(v.reasons)}
    verdict["permutation_p_value"] = v.permutation_p
    return verdict


def render_json(result: TuneResult) -> str:
    """Pretty JSON (2-space indent, sorted keys), ending in a newline.

    Strict JSON: a NaN or infinity would be written as a bare ``NaN`` token that most
    parsers refuse, so ``allow_nan=False`` makes such a value a bug found here (the
    report turns undefined figures into ``null`` before it gets this far)."""
    text = json.dumps(
        to_json(result), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False
    )
    return text + "\n"


__all__ = [
    "TuneResult",
    "analyse",
    "render_json",
    "render_text",
    "to_json",
]
