"""The Markdown report (``--groove-markdown PATH``, ``groove eval --markdown PATH`` and
``--format markdown``): what a CI job appends to ``$GITHUB_STEP_SUMMARY`` or posts
as a pull-request comment.

In order: the verdict on the first line (passed, the gate failed and why, the known
misses: :mod:`.headline`), the aggregate table with each delta and its p-value, the
queries that regressed, missed or lost an answer with their one-line reason and what
displaced them (:mod:`.explain_text`, the text report's words), what changed since
the baseline, then every query in a ``<details>`` block.  Written for CommonMark with
GitHub's tables (GitHub and GitLab render it); the only HTML is the ``<details>`` and
``<summary>`` tags written here.

Every value from outside (query text, ids, paths, headings, settings) is escaped
(:func:`md`): each ASCII punctuation mark that Markdown could read as markup gets a
backslash, so a pipe cannot end a table cell and ``<script>`` stays text; newlines
and control characters become spaces; and a value is capped.  The whole report stays
under :data:`MAX_CHARS` (a GitHub comment holds 65,536 characters): rows that would
pass it are left out, and the report says how many.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_groove.evaluation.gate.compare import UNCHANGED_EPSILON
from pytest_groove.evaluation.gate.verdict import QueryVerdict
from pytest_groove.evaluation.reports.explain_text import explanation, rank_move, rank_text
from pytest_groove.evaluation.reports.headline import Headline, headline
from pytest_groove.evaluation.reports.text_report import describe_corpus
from pytest_groove.evaluation.runs.coverage import share_text
from pytest_groove.evaluation.runs.record import QueryResult, display_timestamp
from pytest_groove.scoring.metric_table import RECALL, Metric, summary_metrics
from pytest_groove.scoring.significance import format_p
from pytest_groove.search.hits import hit_label

if TYPE_CHECKING:
    from pytest_groove.evaluation.reports.formats import ReportInputs

#: the report's size bound, in characters: under a GitHub comment's 65,536 with room
#: for what a workflow adds around it (a heading, a sticky comment's marker)
MAX_CHARS = 60_000
#: characters of one outside value (a query, a reason) before it is cut with "…"
VALUE_CAP = 300
#: rows of the failing-queries table at most (the rest are counted)
FAILING_ROWS = 100

#: characters that are Markdown (or GitHub: mentions, issue links, math) markup
#: anywhere in a line
_MARKUP = re.compile(r"[\\`*_\[\]<>#!|~&@$]")
#: what is markup only at the start of a line: a list, a heading, a quote
_LINE_START = re.compile(r"^(?:[-+=>]|\d+[.)])")
_SPACES = re.compile(r"\s+")
_ICONS = {"passed": "✅", "failed": "❌", "not gated": "➖"}


def md(value: object, cap: int = VALUE_CAP) -> str:
    """``value`` as Markdown text that renders as itself: one line, capped, every
    markup character escaped (safe in a table cell too)."""
    text = "".join(ch if ch.isprintable() else " " for ch in str(value))
    text = _SPACES.sub(" ", text).strip()
    if len(text) > cap:
        text = text[: cap - 1] + "…"
    text = _MARKUP.sub(lambda m: "\\" + m.group(0), text)
    start = _LINE_START.match(text)
    if start is not None:  # "1." becomes "1\.", "-" becomes "\-"
        end = start.end()
        text = f"{text[: end - 1]}\\{text[end - 1 :]}"
    return text


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [_row(header), _row(["---"] * len(header)), *(_row(r) for r in rows)]


# --------------------------------------------------------------------------- sections


def _verdict(head: Headline) -> list[str]:
    """The first line, then why the gate failed and the known misses."""
    lines = [f"{_ICONS[head.status]} **{head.first_line(md)}**"]
    if head.why:
        lines.append("")
        lines += [f"> {md(why, 2 * VALUE_CAP)}" for why in head.why]
    return lines


def _delta(delta: float) -> str:
    if not math.isfinite(delta):
        return "n/a"
    if abs(delta) < UNCHANGED_EPSILON:
        return "—"
    return f"{'↑' if delta > 0 else '↓'} {abs(delta):.3f}"


def _aggregate(inputs: ReportInputs, head: Headline) -> list[str]:
    """The summary metrics with the baseline, the delta and its p-value."""
    run, comparison = inputs.run, inputs.comparison
    fp = run.fingerprint
    diff, baseline = comparison.diff, comparison.baseline
    compared = diff is not None and baseline is not None
    header = ["metric", "this run"] + (["baseline", "Δ", "p"] if compared else [])
    rows = []
    for metric in summary_metrics(fp.k_values, fp.metrics or ()):
        row = [metric.label, f"{metric.of_aggregate(run.aggregate):.3f}"]
        if diff is not None and baseline is not None:
            delta = metric.of_aggregate(diff)
            p = None if comparison.p_values is None else comparison.p_values.of(metric)
            over = delta < -comparison.limits.for_metric(metric.threshold_key)
            shown = _delta(delta)
            row += [
                f"{metric.of_aggregate(baseline.aggregate):.3f}",
                f"**{shown}**" if over else shown,
                "" if p is None or shown == "—" else format_p(p),
            ]
        rows.append(row)
    corpus = "" if run.corpus is None else f" · corpus: {md(describe_corpus(run))}"
    return [
        "",
        "### Aggregate",
        "",
        f"{md(head.baseline)} · model: {md(fp.model)} · queries: {run.aggregate.query_count}"
        f"{corpus}",
        "",
        *_table(header, rows),
    ]


def _failing(inputs: ReportInputs, budget: int) -> list[str]:
    """The queries that regressed, missed or lost an answer: one line of why each."""
    verdicts = inputs.verdicts
    known = inputs.gate.known_misses
    chosen = [
        (i, v)
        for i, v in enumerate(verdicts.queries)
        if v.failed or v.removed or v.headings_removed
    ]
    if not chosen:
        return []
    title = f"### Regressed, missed and lost ({len(chosen)} of {len(verdicts.queries)})"
    rows: list[list[str]] = []
    used = 0
    for position, verdict in chosen[:FAILING_ROWS]:
        shown = "known miss" if position in known else verdict.verdict
        why = explanation(verdict, verdicts.k, verdict.recall_now, verdict.recall_before)
        row = [md(verdict.label, 120), shown, md(why or "an expected answer was lost")]
        used += len(_row(row)) + 1
        if used > budget:
            break
        rows.append(row)
    lines = ["", title, "", *_table(["query", "verdict", "why"], rows)]
    if len(rows) < len(chosen):
        lines += ["", f"… and {len(chosen) - len(rows)} more (the JSON report has every query)."]
    return lines


def _changes(head: Headline) -> list[str]:
    if not head.changes:
        return []
    return ["", "### What changed since the baseline", "", *(f"- {md(c)}" for c in head.changes)]


#: folders, never-returned documents and displacers listed in the coverage section
COVERAGE_ROWS = 10


def _listed(paths: Sequence[str], total: int) -> list[str]:
    lines = [f"- {md(path, 120)}" for path in paths[:COVERAGE_ROWS]]
    if total > COVERAGE_ROWS:
        lines.append(f"- … and {total - COVERAGE_ROWS} more (the JSON report lists every one)")
    return lines or ["- none"]


def _coverage(inputs: ReportInputs) -> list[str]:
    """What the golden set covers of the KB, folded: a line in the summary, the folders,
    the documents never returned and the frequent displacers inside (a few of each)."""
    coverage = inputs.coverage
    if coverage is None:
        return []
    total = coverage.total
    folders = [
        [
            md(f.folder, 80),
            share_text(f.documents_expected, f.documents),
            share_text(f.sections_expected, f.sections),
        ]
        for f in coverage.folders[:COVERAGE_ROWS]
    ]
    displacers = [f"{d.path} ({d.queries} queries)" for d in coverage.displacers]
    lines = [
        "",
        "<details><summary>Coverage of the knowledge base: documents expected "
        f"{share_text(total.documents_expected, total.documents)}, sections "
        f"{share_text(total.sections_expected, total.sections)}</summary>",
        "",
        *_table(["folder", "documents expected", "sections expected"], folders),
    ]
    if len(coverage.folders) > COVERAGE_ROWS:
        lines += ["", f"… and {len(coverage.folders) - COVERAGE_ROWS} more folders."]
    lines += ["", f"Never returned in any query's top {coverage.k}:", ""]
    lines += _listed(coverage.never_returned, len(coverage.never_returned))
    lines += ["", "Frequent displacers (in many queries' top k, expected by none of them):", ""]
    lines += _listed(displacers, len(displacers))
    return [*lines, "", "</details>"]


def _detail_row(position: int, result: QueryResult, verdict: QueryVerdict, k: int) -> list[str]:
    top = result.top_k[0] if result.top_k else None
    first = rank_move(verdict) if verdict.compared else rank_text(verdict.first_rank)
    return [
        str(position),
        md(verdict.label, 80),
        md(result.query, 160),
        verdict.verdict,
        first,
        f"{Metric(RECALL, k).of_query(result.metrics):.2f}",
        "—" if top is None else md(hit_label(top.path, top.heading), 120),
    ]


def _details(inputs: ReportInputs, budget: int) -> list[str]:
    """Every query in a ``<details>`` block, as many as ``budget`` characters hold."""
    run, verdicts = inputs.run, inputs.verdicts
    k = verdicts.k
    header = ["#", "query id", "query", "verdict", "first rank", Metric(RECALL, k).label, "top hit"]
    rows: list[list[str]] = []
    used = 0
    pairs = zip(run.per_query, verdicts.queries, strict=True)
    for position, (result, verdict) in enumerate(pairs, 1):
        row = _detail_row(position, result, verdict, k)
        used += len(_row(row)) + 1
        if used > budget:
            break
        rows.append(row)
    total = len(run.per_query)
    lines = [
        "",
        f"<details><summary>Per query ({total} queries)</summary>",
        "",
        *_table(header, rows),
    ]
    if len(rows) < total:
        lines += [
            "",
            f"{total - len(rows)} of {total} queries left out to keep this report under "
            f"{MAX_CHARS:,} characters (the JSON report has every query).",
        ]
    return [*lines, "", "</details>"]


def render_markdown(inputs: ReportInputs) -> str:
    """The whole report, under :data:`MAX_CHARS` characters (see the module docstring)."""
    head = headline(inputs)
    top = _verdict(head) + _aggregate(inputs, head)
    changes = _changes(head) + _coverage(inputs)
    footer = [
        "",
        f"_{md(inputs.prog)} · run of {md(display_timestamp(inputs.run.timestamp))}_",
    ]
    # a reserve for the sections' own lines (titles, table heads, the "left out" notes)
    fixed = sum(len(line) + 1 for line in (*top, *changes, *footer)) + 2_000
    failing = _failing(inputs, max(0, (MAX_CHARS - fixed) // 2))
    used = fixed + sum(len(line) + 1 for line in failing)
    details = _details(inputs, max(0, MAX_CHARS - used))
    return "\n".join([*top, *failing, *changes, *details, *footer]) + "\n"
