"""One verdict per golden query, and what explains it: computed once, read by every report.

A query's verdict against the baseline run (the compatible one the comparison chose):

- ``missed`` -- nothing expected within the largest k (the item fails, gate or not);
- ``violated`` -- a constraint of the golden query broke (:mod:`~pytest_groove.scoring.
  constraints`): a ``not_expected`` entry within the largest k, or the first expected
  hit below ``within`` (the item fails, gate or not; the gate fails on a violation the
  baseline's ranking did not have);
- ``regressed`` -- some metric of the query dropped by more than its threshold
  (:func:`~pytest_groove.evaluation.gate.compare.query_regressed`, the rule the item uses
  under ``--fail-on-regression`` without ``--significance``); each such metric with its
  value before and after;
- ``pass`` -- neither.

Beside the verdict: the rank of the first expected hit now and in the baseline (what
*moved*), the expected paths removed from the knowledge base since the baseline (and
where their content lives now, when the same file digest appears under a new path, or
why the index leaves them out when the file is still on disk: an ignore rule, ...),
the expected headings an edit of their note removed since the baseline, and, for a
regressed or missed query, the expected documents it *lost* -- each one
that ranked within the largest k in the baseline and ranks lower now, whichever of
them it is -- with the ones among them whose own file changed since the baseline run,
and the documents that now rank above a lost one and did not in the baseline (what
*displaced* it), each ``added``, ``changed`` or ``unchanged`` since the baseline run
(:mod:`.corpus_files`).  An expected document that was not within the largest k in
the baseline either was not lost: nothing displaced it; nor was an answer that is
gone (its note removed, or its heading removed from the note).

The pytest item, the text, JSON and HTML reports and ``groove history diff`` all read
these records, so they agree on every query.  Which search leg (full-text or vector)
moved an answer is not said: the run record keeps the fused ranking only.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pytest_groove.evaluation.gate.compare import (
    Comparison,
    largest_k,
    match_queries,
    query_regressed,
)
from pytest_groove.evaluation.gate.query_names import report_names
from pytest_groove.evaluation.runs.corpus_files import (
    Change,
    CorpusDelta,
    corpus_delta,
    document_digests,
)
from pytest_groove.evaluation.runs.record import QueryResult, RunRecord
from pytest_groove.scoring.constraints import Violation, violations
from pytest_groove.scoring.metric_table import metric_value
from pytest_groove.scoring.metrics import (
    entry_satisfied,
    expected_ranks,
    is_miss,
    normalise_heading,
)
from pytest_groove.scoring.thresholds import Thresholds

Verdict = Literal["pass", "regressed", "missed", "violated"]

#: the reason given for an expected path the baseline run's corpus held
REMOVED_REASON = "removed from the knowledge base since the baseline run"
#: the reason given for a lost expected document whose own file changed
CHANGED_REASON = "changed since the baseline run"
#: the reason given for an expected heading an edit of its note removed
HEADING_REMOVED_REASON = "heading removed from the note since the baseline run"

#: why a KB-relative file still on disk is not in the index (None: no such file)
WhyUnindexed = Callable[[str], str | None]


@dataclass(frozen=True)
class MetricMove:
    """One metric of a query that dropped past its threshold."""

    label: str
    before: float
    after: float


@dataclass(frozen=True)
class Displacer:
    """A document now ranked above the answer that was not above it in the baseline."""

    path: str
    change: Change


@dataclass(frozen=True)
class LostAnswer:
    """An expected entry that ranked within the largest k in the baseline and ranks
    lower now (or is not retrieved)."""

    path: str
    heading: str | None
    before: int
    #: None: not retrieved now
    after: int | None


@dataclass(frozen=True)
class QueryVerdict:
    id: str
    verdict: Verdict
    #: rank of the first hit satisfying an expected entry (None: not retrieved)
    first_rank: int | None
    #: the same in the baseline run (None: not retrieved there, or no baseline)
    baseline_first_rank: int | None
    #: a compatible baseline had this query
    compared: bool
    regressed: tuple[MetricMove, ...] = ()
    #: expected paths in the baseline run's corpus and not in this run's
    removed: tuple[str, ...] = ()
    #: (removed path, the path its content has now)
    renamed: tuple[tuple[str, str], ...] = ()
    #: (removed path, why the index leaves it out): the file is still on disk
    unindexed: tuple[tuple[str, str], ...] = ()
    #: (path, heading) of each expected entry whose heading an edit of the note
    #: removed since the baseline run: gone, like a removed path, not pushed down
    headings_removed: tuple[tuple[str, str], ...] = ()
    #: the expected entries lost since the baseline (a failing query only), best first
    lost: tuple[LostAnswer, ...] = ()
    #: lost expected paths whose own file changed since the baseline run
    changed: tuple[str, ...] = ()
    displaced_by: tuple[Displacer, ...] = ()
    #: recall at the largest k, now and in the baseline (None: no baseline)
    recall_now: float = 0.0
    recall_before: float | None = None
    #: the query's name in the reports when it is not its id: its pytest node id, when
    #: another query of the run has the same id (:mod:`.query_names`); "" = the id
    name: str = ""
    #: the golden query's constraints this run broke (``not_expected``, ``within``)
    violations: tuple[Violation, ...] = ()
    #: those of :attr:`violations` the baseline's ranking did not break (all of them
    #: when nothing is compared): what the gate fails on
    new_violations: tuple[Violation, ...] = ()

    @property
    def label(self) -> str:
        """What the reports call the query: :attr:`name`, else its id."""
        return self.name or self.id

    @property
    def moved(self) -> bool:
        """The first answer's rank changed against the baseline."""
        return self.compared and self.first_rank != self.baseline_first_rank

    @property
    def failed(self) -> bool:
        return self.verdict != "pass"


@dataclass(frozen=True)
class RunVerdicts:
    """Every query's verdict, in run order, and the moved ones worst first."""

    queries: tuple[QueryVerdict, ...]
    #: the largest k (a rank past it is "not in the top k")
    k: int
    compared: bool

    @property
    def failed(self) -> tuple[QueryVerdict, ...]:
        return tuple(v for v in self.queries if v.failed)

    @property
    def moved(self) -> tuple[QueryVerdict, ...]:
        """Queries whose first-answer rank changed, the biggest drop first."""
        moved = [v for v in self.queries if v.moved]
        return tuple(sorted(moved, key=lambda v: -rank_drop(v, self.k)))

    @property
    def removed_answers(self) -> tuple[QueryVerdict, ...]:
        return tuple(v for v in self.queries if v.removed or v.headings_removed)


def rank_drop(verdict: QueryVerdict, k: int) -> int:
    """How many places the first answer fell (negative: it rose); not retrieved
    counts as one past the deepest rank either side holds."""
    floor = max(k, verdict.first_rank or 0, verdict.baseline_first_rank or 0) + 1
    after = verdict.first_rank if verdict.first_rank is not None else floor
    before = verdict.baseline_first_rank if verdict.baseline_first_rank is not None else floor
    return after - before


def first_rank(result: QueryResult) -> int | None:
    """The rank of the first hit that satisfies any expected entry (None if none)."""
    ranks = [rank for rank in expected_ranks(result.expected, result.top_k) if rank is not None]
    return min(ranks) if ranks else None


def _is_answer(result: QueryResult, path: str, heading: str | None) -> bool:
    return any(entry_satisfied(entry, path, heading) for entry in result.expected)


def _above(result: QueryResult, cutoff: int) -> list[str]:
    """Paths of the non-answer hits ranked above ``cutoff``, best first, once each."""
    paths = [
        hit.path
        for hit in result.top_k
        if hit.rank < cutoff and not _is_answer(result, hit.path, hit.heading)
    ]
    return list(dict.fromkeys(paths))


def lost_answers(
    result: QueryResult,
    previous: QueryResult,
    k: int,
    gone: Sequence[str] = (),
    gone_headings: Collection[tuple[str, str]] = (),
) -> tuple[LostAnswer, ...]:
    """The relevant expected entries of ``result`` that ranked within ``k`` in
    ``previous`` and rank lower now, by baseline rank; an entry whose path is in
    ``gone`` (no longer in the index), or whose (path, normalised heading) is in
    ``gone_headings`` (the note no longer has it), was not pushed down and is left out."""
    ranks = expected_ranks(previous.expected, previous.top_k)
    before = dict(zip(previous.expected, ranks, strict=True))
    now = expected_ranks(result.expected, result.top_k)
    lost: list[LostAnswer] = []
    for entry, after in zip(result.expected, now, strict=True):
        then = before.get(entry)
        if not entry.relevant or entry.path in gone or then is None or then > k:
            continue
        if _heading_gone(entry.path, entry.heading, gone_headings):
            continue
        if after is None or after > then:
            lost.append(LostAnswer(entry.path, entry.heading, then, after))
    lost.sort(key=lambda answer: answer.before)
    return tuple(dict.fromkeys(lost))


def _heading_gone(
    path: str, heading: str | None, gone_headings: Collection[tuple[str, str]]
) -> bool:
    return heading is not None and (path, normalise_heading(heading)) in gone_headings


def _displaced_by(
    result: QueryResult,
    previous: QueryResult,
    lost: Sequence[LostAnswer],
    k: int,
    delta: CorpusDelta | None,
) -> tuple[Displacer, ...]:
    """The documents now above a lost answer that were not above it in the baseline,
    best first, once each."""
    ranks = {hit.path: hit.rank for hit in reversed(result.top_k)}
    found: dict[str, None] = {}
    for answer in lost:
        was_above = set(_above(previous, answer.before))
        cutoff = answer.after if answer.after is not None else k + 1
        for path in _above(result, cutoff):
            if path not in was_above:
                found[path] = None
    return tuple(
        Displacer(path, "unknown" if delta is None else delta.change(path))
        for path in sorted(found, key=lambda path: ranks[path])
    )


@dataclass(frozen=True)
class _GoneAnswers:
    """The expected answers no longer in the index since the baseline, and why."""

    removed: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()
    unindexed: tuple[tuple[str, str], ...] = ()
    headings_removed: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class _Losses:
    """What a failing query lost since the baseline, and what took its place."""

    lost: tuple[LostAnswer, ...] = ()
    changed: tuple[str, ...] = ()
    displaced: tuple[Displacer, ...] = ()


def query_verdict(
    result: QueryResult,
    previous: QueryResult | None,
    thresholds: Thresholds,
    k_values: Sequence[int],
    delta: CorpusDelta | None = None,
    why_unindexed: WhyUnindexed | None = None,
    lost_headings: Collection[tuple[str, str]] = (),
) -> QueryVerdict:
    """One query's verdict against its baseline counterpart (None: nothing to compare).

    ``why_unindexed`` is asked about each expected path the baseline run's corpus held
    and this one does not: a file still on disk is left out of the index on purpose
    (an ignore rule, ...), not removed.  ``lost_headings`` holds the (path, normalised
    heading) of each expected heading an edit of its note removed since the baseline
    (:func:`~pytest_groove.evaluation.lifecycle.begin_evaluation` tells them)."""
    k = largest_k(k_values)
    moves = () if previous is None else _metric_moves(result, previous, thresholds)
    broken = result_violations(result, k)
    verdict: Verdict = (
        "missed"
        if is_miss(result.metrics, k_values)
        else "violated"
        if broken
        else "regressed"
        if moves
        else "pass"
    )
    gone = _gone_answers(result, previous, delta, why_unindexed, lost_headings)
    losses = _Losses()
    if previous is not None and verdict != "pass":
        losses = _losses(result, previous, k, delta, gone.removed, lost_headings)
    return QueryVerdict(
        id=result.id,
        verdict=verdict,
        first_rank=first_rank(result),
        baseline_first_rank=None if previous is None else first_rank(previous),
        compared=previous is not None,
        regressed=moves,
        removed=gone.removed,
        renamed=gone.renamed,
        unindexed=gone.unindexed,
        headings_removed=gone.headings_removed,
        lost=losses.lost,
        changed=losses.changed,
        displaced_by=losses.displaced,
        recall_now=result.metrics.recall_at_k.get(k, 0.0),
        recall_before=None if previous is None else previous.metrics.recall_at_k.get(k, 0.0),
        violations=broken,
        new_violations=_new_violations(broken, result, previous, k),
    )


def result_violations(result: QueryResult, k: int) -> tuple[Violation, ...]:
    """The constraints of ``result``'s golden query its ranking breaks within ``k``."""
    return violations(result.expected, result.not_expected, result.within, result.top_k, k)


def _new_violations(
    broken: tuple[Violation, ...], result: QueryResult, previous: QueryResult | None, k: int
) -> tuple[Violation, ...]:
    """The violations the baseline's ranking, held to this run's constraints, did not
    have (the history keeps no constraints: the golden file of this run decides)."""
    if not broken or previous is None:
        return broken
    before = violations(previous.expected, result.not_expected, result.within, previous.top_k, k)
    known = {violation.key for violation in before}
    return tuple(violation for violation in broken if violation.key not in known)


def _metric_moves(
    result: QueryResult, previous: QueryResult, thresholds: Thresholds
) -> tuple[MetricMove, ...]:
    return tuple(
        MetricMove(
            label, metric_value(previous.metrics, label), metric_value(result.metrics, label)
        )
        for label in query_regressed(result, previous, thresholds)
    )


def _gone_answers(
    result: QueryResult,
    previous: QueryResult | None,
    delta: CorpusDelta | None,
    why_unindexed: WhyUnindexed | None,
    lost_headings: Collection[tuple[str, str]],
) -> _GoneAnswers:
    """The expected paths removed since the baseline -- renamed, or still on disk but
    left out of the index -- and the expected headings an edit removed."""
    paths = list(dict.fromkeys(entry.path for entry in result.expected))
    removed = tuple(p for p in paths if delta is not None and delta.removed(p))
    unindexed = tuple(
        (path, why)
        for path in removed
        if why_unindexed is not None and (why := why_unindexed(path)) is not None
    )
    left_out = {path for path, _ in unindexed}
    renamed = tuple(
        (path, new)
        for path in removed
        if path not in left_out
        and delta is not None
        and (new := delta.renamed_to(path)) is not None
    )
    headings_removed = (
        ()
        if previous is None
        else tuple(
            dict.fromkeys(
                (entry.path, entry.heading)
                for entry in result.expected
                if entry.heading is not None
                and _heading_gone(entry.path, entry.heading, lost_headings)
            )
        )
    )
    return _GoneAnswers(removed, renamed, unindexed, headings_removed)


def _losses(
    result: QueryResult,
    previous: QueryResult,
    k: int,
    delta: CorpusDelta | None,
    removed: Sequence[str],
    lost_headings: Collection[tuple[str, str]],
) -> _Losses:
    """The answers pushed down since the baseline, the changed ones among them and what
    displaced them.  An answer that is gone (its note, or its heading in the note) was
    not pushed down: nothing displaced it; nor was one that was not within the largest
    k in the baseline either."""
    lost = lost_answers(result, previous, k, removed, lost_headings)
    changed = tuple(
        dict.fromkeys(
            a.path for a in lost if delta is not None and delta.change(a.path) == "changed"
        )
    )
    return _Losses(lost, changed, _displaced_by(result, previous, lost, k, delta))


def run_verdicts(
    run: RunRecord,
    baseline: RunRecord | None,
    thresholds: Thresholds,
    why_unindexed: WhyUnindexed | None = None,
    lost_headings: Collection[tuple[str, str]] = (),
    vanished: Mapping[str, str] | None = None,
) -> RunVerdicts:
    """Every query of ``run`` judged against ``baseline`` (a compatible run, or None);
    ``why_unindexed`` and ``lost_headings`` as for :func:`query_verdict`; ``vanished``
    the documents an older stored run held (path -> digest), lost answers too."""
    k_values = run.fingerprint.k_values
    paired: list[QueryResult | None] = (
        [None] * len(run.per_query) if baseline is None else match_queries(run.per_query, baseline)
    )
    delta = _delta_with(run, baseline, vanished)
    # two queries sharing an id are named apart, as pytest names their items
    names = report_names(run.per_query)
    return RunVerdicts(
        queries=tuple(
            _named(
                query_verdict(
                    result, previous, thresholds, k_values, delta, why_unindexed, lost_headings
                ),
                name,
            )
            for result, previous, name in zip(run.per_query, paired, names, strict=True)
        ),
        k=largest_k(k_values),
        compared=baseline is not None,
    )


def _named(verdict: QueryVerdict, name: str) -> QueryVerdict:
    return verdict if name == verdict.id else replace(verdict, name=name)


def comparison_verdicts(
    comparison: Comparison,
    why_unindexed: WhyUnindexed | None = None,
    lost_headings: Collection[tuple[str, str]] = (),
    vanished: Mapping[str, str] | None = None,
) -> RunVerdicts:
    """The verdicts of a comparison's run: against its baseline only when compatible."""
    baseline = comparison.baseline if comparison.compatible else None
    limits = comparison.limits
    return run_verdicts(comparison.run, baseline, limits, why_unindexed, lost_headings, vanished)


def _delta_with(
    run: RunRecord, baseline: RunRecord | None, vanished: Mapping[str, str] | None
) -> CorpusDelta | None:
    """The run's corpus against the baseline's, and against the documents older stored
    runs held (deleted before the baseline run: lost all the same)."""
    delta = None if baseline is None else corpus_delta(run.corpus, baseline.corpus)
    if not vanished:
        return delta
    now = document_digests(run.corpus)
    if now is None:
        return delta
    before = {**vanished, **(delta.before if delta is not None else {})}
    return CorpusDelta(now=now, before=before)


def violation_failures(verdicts: RunVerdicts) -> list[str]:
    """The gate's entry per query that broke a constraint its baseline ranking kept:
    a ``not_expected`` document now in the top k, or a first answer now below
    ``within``.  One the baseline broke too is reported, not gated (like a known
    miss)."""
    return [
        f"{verdict.label}: {'; '.join(v.text(verdicts.k) for v in verdict.new_violations)}"
        for verdict in verdicts.queries
        if verdict.new_violations
    ]


def removed_answer_failures(verdicts: RunVerdicts) -> list[str]:
    """The gate's entry per query that lost an expected document (or an expected
    heading of one) since the baseline: a deleted answer fails the gate like a
    regression, however little the averages moved."""
    out = []
    for verdict in verdicts.removed_answers:
        left_out = {path for path, _ in verdict.unindexed}
        moved = dict(verdict.renamed)
        gone = [p for p in verdict.removed if p not in left_out and p not in moved]
        if gone:
            out.append(f"answer of {verdict.label} removed ({', '.join(gone)})")
        if moved:
            # the same bytes under a new path: the golden file still names the old one
            pairs = ", ".join(f"{old} → {new}" for old, new in moved.items())
            out.append(f"answer of {verdict.label} renamed? ({pairs})")
        if left_out:
            kept = [p for p in verdict.removed if p in left_out]
            out.append(f"answer of {verdict.label} no longer indexed ({', '.join(kept)})")
        if verdict.headings_removed:
            gone_headings = verdict.headings_removed
            named = ", ".join(f"{path}: `{heading}`" for path, heading in gone_headings)
            out.append(f"heading of the answer of {verdict.label} removed ({named})")
    return out
