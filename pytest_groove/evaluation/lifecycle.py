"""An evaluation's life, owned by the library: plan, begin, search, finish.

- :func:`~pytest_groove.evaluation.plan.plan_evaluation` checks the options, the
  config and the golden file (no index, no search);
- :func:`begin_evaluation`, given a :class:`~pytest_groove.engine.searcher.Searcher`,
  checks the golden set against what the searcher can answer with, builds the run
  fingerprint, reads the history and picks the baseline -- the point after which
  searching is worth it;
- the door searches (each query through :meth:`Evaluation.run_query`: the CLI in a
  loop, the plugin one item at a time, maybe in several processes);
- :func:`~pytest_groove.evaluation.finish.finish_evaluation` records, compares, gates
  and reports.

Neither door builds a fingerprint, reads the history or chooses a baseline itself.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_groove.engine.searcher import SearcherIdentity
from pytest_groove.errors import clip
from pytest_groove.evaluation.gate.baseline import BaselineChoice, find_run, pick_baseline
from pytest_groove.evaluation.gate.compare import match_queries, query_regressed
from pytest_groove.evaluation.gate.verdict import QueryVerdict, query_verdict
from pytest_groove.evaluation.golden.expected_check import (
    INDEX,
    KB_FILES,
    check_before_search,
    unindexed_paths,
    unmatched_headings,
)
from pytest_groove.evaluation.plan import EvalPlan, StoredRuns
from pytest_groove.evaluation.runs.corpus_files import DIGEST_CHARS, CorpusDelta, document_digests
from pytest_groove.evaluation.runs.record import (
    Fingerprint,
    QueryResult,
    evaluate_query,
    format_timestamp,
)
from pytest_groove.evaluation.runs.trust import refuse_untrusted, trusted_runs, untrusted
from pytest_groove.evaluation.searched import EvaluatedSearcher
from pytest_groove.kb.source.unindexed import why_not_indexed
from pytest_groove.scoring.metrics import is_miss
from pytest_groove.scoring.records import GoldenQuery


@dataclass(frozen=True)
class Evaluation:
    """A begun evaluation: its plan, who answers, the fingerprint and the baseline."""

    plan: EvalPlan
    fingerprint: Fingerprint
    #: the history as read before the first search; the finish compares against it
    stored: StoredRuns
    #: how the baseline was chosen (None under no-history / no-diff)
    choice: BaselineChoice | None
    #: each golden query's counterpart in the baseline (None = none), in golden order
    baseline_queries: tuple[QueryResult | None, ...] = ()
    #: the searcher that answers (None when the results were produced elsewhere)
    searcher: EvaluatedSearcher | None = None
    #: the baseline run's per-document digests when no choice is at hand (an xdist
    #: worker is handed them); None = take them from ``choice``
    baseline_files: Mapping[str, str] | None = None
    #: (path, normalised heading) of each expected heading an edit of its document
    #: removed since the baseline: a lost answer the gate fails on, as on a deleted
    #: document, and that nothing displaced
    lost_headings: frozenset[tuple[str, str]] = frozenset()
    #: expected documents deleted since a trusted stored run that was not the baseline
    #: held them, with the digest that run recorded: lost answers like the baseline's
    vanished_files: Mapping[str, str] = field(default_factory=dict)
    #: positions of the golden queries that missed in the accepted baseline: still
    #: missing, each is an expected failure (a known miss) unless the plan is strict
    known_misses: frozenset[int] = frozenset()
    #: every document the searcher can answer with and its section headings, as read
    #: at the start (None: it cannot say); what the golden set's coverage is taken of
    document_headings: Mapping[str, Collection[str | None]] | None = None
    #: this corpus against the baseline's, per document (read once, at first need)
    _delta: list[CorpusDelta | None] = field(default_factory=list, compare=False, repr=False)
    #: why an expected file still on disk is not indexed, per path (read at first need)
    _unindexed: dict[str, str | None] = field(default_factory=dict, compare=False, repr=False)

    def known_miss(self, position: int, result: QueryResult) -> bool:
        """Golden query number ``position`` missed in the accepted baseline and still
        misses: an expected failure, not a failure (``--strict`` fails it)."""
        if self.plan.strict or not is_miss(result.metrics, self.plan.k_values):
            return False
        # a run being accepted records its misses as the known ones
        return position in self.known_misses or self.plan.options.accept

    def run_query(self, query: GoldenQuery) -> QueryResult:
        """Search one golden query and score its hits."""
        assert self.searcher is not None, "an evaluation begun without a searcher"
        plan = self.plan
        hits = self.searcher.search(query.query, plan.depth)
        # hits no KB file holds cannot be judged: the searcher stops the run once its
        # first queries' hits show that none will be
        self.searcher.check_hits(hits)
        return evaluate_query(query, hits, plan.k_values, plan.metrics)

    def regressed_metrics(self, position: int, result: QueryResult) -> list[str]:
        """The metrics of golden query number ``position`` that dropped past their
        threshold against the baseline, when that fails its item: empty without a
        baseline or a gate, and under ``--significance``, where one query's drop -- a
        single observation, which the test can never tell from chance -- fails nothing
        and only an aggregate drop with ``p < ALPHA`` fails the gate (``groove eval``
        and pytest alike).  The query's verdict still says what dropped."""
        options = self.plan.options
        if not options.fail_on_regression or not self.plan.compares or options.accept:
            return []
        if self.plan.gate.significance is not None:
            return []
        previous = (
            self.baseline_queries[position] if position < len(self.baseline_queries) else None
        )
        if previous is None:
            return []
        return query_regressed(result, previous, self.plan.thresholds)

    def query_verdict(self, position: int, result: QueryResult) -> QueryVerdict:
        """Golden query number ``position``'s verdict against its baseline counterpart
        (:mod:`.verdict`: the one the reports show for it)."""
        plan = self.plan
        previous = None
        if plan.compares and position < len(self.baseline_queries):
            previous = self.baseline_queries[position]
        return query_verdict(
            result,
            previous,
            plan.thresholds,
            plan.k_values,
            self.corpus_delta(),
            self.why_unindexed,
            self.lost_headings,
        )

    def why_unindexed(self, path: str) -> str | None:
        """Why the expected file ``path``, still on disk under the KB, is not in the
        index (an ignore rule, ...); None when there is no such file."""
        if path not in self._unindexed:
            self._unindexed[path] = why_not_indexed(self.plan.kb, path, self.plan.settings.index)
        return self._unindexed[path]

    def corpus_delta(self) -> CorpusDelta | None:
        """The documents now against the baseline run's (None: either side unknown)."""
        if not self._delta:
            self._delta.append(self._read_delta())
        return self._delta[0]

    def baseline_digests(self) -> Mapping[str, str] | None:
        """The baseline run's per-document digests (None: no baseline, or none recorded)."""
        if self.baseline_files is not None:
            return self.baseline_files
        choice = self.choice
        files = None if choice is None or choice.baseline is None else choice.baseline.corpus
        digests = document_digests(files)
        if not self.vanished_files:
            return digests
        # a deleted answer an older run held is lost all the same, in every later run
        return {**self.vanished_files, **(digests or {})}

    def _read_delta(self) -> CorpusDelta | None:
        before = self.baseline_digests()
        if self.searcher is None or before is None:
            return None
        with self.searcher.read_snapshot():
            digests = self.searcher.document_digests()
        if digests is None:
            return None
        return CorpusDelta(now={p: d[:DIGEST_CHARS] for p, d in digests.items()}, before=before)


def build_fingerprint(plan: EvalPlan, identity: SearcherIdentity) -> Fingerprint:
    """The run fingerprint: what makes two runs comparable."""
    return Fingerprint.build(
        model=identity.model,
        reranker_id=identity.reranker_id,
        limit=plan.limit,
        k_values=plan.k_values,
        golden_hash=plan.golden.hash,
        search=plan.settings.search,
        context_mode=identity.context_mode,
        retriever=identity.retriever,
        vector_index=identity.vector_index,
        metrics=plan.metrics,
        graded=any(e.grade != 1 for q in plan.golden.queries for e in q.expected),
    )


def pick_baseline_for(
    plan: EvalPlan, stored: StoredRuns, fingerprint: Fingerprint
) -> BaselineChoice | None:
    """The run named with ``--baseline`` (an error when unknown or incompatible), else
    the frozen or newest compatible run; None when nothing is compared."""
    if not plan.compares:
        return None
    if stored.accepted is not None:
        # committed and reviewed: the gate's baseline whatever the run changed
        newest = stored.runs[0] if stored.runs else None
        run = stored.accepted.run
        return BaselineChoice(run, newest, frozen=False, skipped=0, accepted=stored.accepted.path)
    if plan.options.baseline is not None:
        refuse_untrusted(find_run(stored.runs, plan.options.baseline, plan.history_path))
    # an edited or future-dated run is never the baseline (history_trust.py)
    runs = trusted_runs(stored.runs)
    return pick_baseline(runs, fingerprint, plan.options.baseline, plan.history_path)


def baseline_counterparts(
    queries: Sequence[GoldenQuery], choice: BaselineChoice | None
) -> tuple[QueryResult | None, ...]:
    """Each golden query's result in the baseline run (None = none or no baseline)."""
    if choice is None or choice.baseline is None:
        return tuple(None for _ in queries)
    return tuple(match_queries(queries, choice.baseline))


#: every document the searcher can answer with, and each one's section headings
IndexedHeadings = Mapping[str, Collection[str | None]]
#: the history as read and the baseline picked from it
Picked = tuple[StoredRuns, BaselineChoice | None]


def _read_and_pick(plan: EvalPlan, fingerprint: Fingerprint) -> Picked:
    stored = plan.read_history()
    return stored, pick_baseline_for(plan, stored, fingerprint)


def _baseline_paths(choice: BaselineChoice | None) -> Collection[str]:
    """The documents of the baseline run's corpus (empty when it recorded none)."""
    if choice is None or choice.baseline is None:
        return ()
    return document_digests(choice.baseline.corpus) or {}


#: this corpus's per-document digests, read at the first need (and then kept)
DigestsNow = Callable[[], Mapping[str, str]]


def _digests_now(searcher: EvaluatedSearcher) -> DigestsNow:
    """This corpus's per-document digests, cut as stored runs keep them: read once,
    when a check first needs them (only a golden entry that names nothing does)."""

    @functools.cache
    def read() -> Mapping[str, str]:
        with searcher.read_snapshot():
            digests = searcher.document_digests() or {}
        return {p: d[:DIGEST_CHARS] for p, d in digests.items()}

    return read


def _changed_since_baseline(
    paths: Sequence[str], choice: BaselineChoice | None, digests_now: DigestsNow
) -> set[str]:
    """Those of ``paths`` whose document the baseline run held with other bytes.

    The baseline was checked against this golden file (its fingerprint holds the file's
    hash), so an expected heading it had and the document now lacks went with the edit.
    """
    before = _baseline_paths(choice)
    if not paths or not before:
        return set()
    assert isinstance(before, Mapping)
    now = digests_now()
    return {p for p in paths if p in before and p in now and now[p] != before[p]}


def _edited_since_stored(
    paths: Sequence[str], stored: StoredRuns, fingerprint: Fingerprint, digests_now: DigestsNow
) -> set[str]:
    """The ``paths`` a trusted stored run of this golden file held with other bytes: an
    edit removed the expected heading since (that run was checked against it)."""
    if not paths:
        return set()
    now = digests_now()
    out: set[str] = set()
    for run in trusted_runs(stored.runs):
        if run.fingerprint.golden_hash != fingerprint.golden_hash:
            continue
        files = document_digests(run.corpus) or {}
        out |= {p for p in paths if p in files and p in now and files[p] != now[p]}
    return out


def _deleted_since_stored(
    paths: Sequence[str], stored: StoredRuns, digests_now: DigestsNow
) -> dict[str, str]:
    """For each of ``paths`` the newest stored run's corpus held, how the golden-file
    message says it went: deleted since that run, or renamed (its digest is now under a
    path that run did not have).  Trusted runs are asked first; a run edited by hand
    still shows the note was there (it is evidence for a message, never a baseline)."""
    if not paths:
        return {}
    # newest first (the history is read in time order, history_format.read_history),
    # trusted runs before the others: a stable sort keeps each group's order
    ordered = sorted(stored.runs, key=lambda run: untrusted(run) is not None)
    held = [(run, document_digests(run.corpus)) for run in ordered]
    out: dict[str, str] = {}
    for path in paths:
        found = next(((run, files) for run, files in held if files and path in files), None)
        if found is None:
            continue
        run, files = found
        assert files is not None
        when = f"the run of {format_timestamp(run.timestamp)} in the history"
        if untrusted(run) is not None:
            when += " (a run that cannot be the baseline)"
        moved = CorpusDelta(now=digests_now(), before=files).renamed_to(path)
        if moved is not None:
            out[path] = f"it was renamed to `{clip(moved)}` (the same bytes) since {when}"
        else:
            out[path] = f"the note was deleted since {when}, which indexed it"
    return out


def _held_by_trusted_runs(paths: Sequence[str], stored: StoredRuns) -> dict[str, str]:
    """Each of ``paths`` a trusted stored run's corpus held, with its digest there
    (the newest such run's)."""
    held: dict[str, str] = {}
    for run in trusted_runs(stored.runs):  # newest first
        files = document_digests(run.corpus) or {}
        for path in paths:
            if path in files and path not in held:
                held[path] = files[path]
    return held


@dataclass(frozen=True)
class _Vanished:
    """What the history says of expected paths and headings the index lacks: gone since
    a stored run (a lost answer, or a message that is no typo), not a golden mistake."""

    #: the history and the baseline, read because something went missing (else None)
    picked: Picked | None = None
    #: the baseline corpus's documents (an expected path among them was deleted since)
    removed: Collection[str] = ()
    #: expected path -> how another stored run shows it was deleted or renamed
    deleted: dict[str, str] = field(default_factory=dict)
    #: expected paths whose document the baseline held with other bytes
    changed: set[str] = field(default_factory=set)
    #: (path, normalised heading) the edit of a changed document removed
    lost: frozenset[tuple[str, str]] = frozenset()
    #: expected path -> its digest in the newest trusted stored run that held it
    held: dict[str, str] = field(default_factory=dict)


def _read_expected_headings(plan: EvalPlan, searcher: EvaluatedSearcher) -> IndexedHeadings | None:
    """The searcher's headings map, with the expected documents' headings read from the
    snapshot the paths came from (an engine's map reads a document's headings when
    first asked)."""
    with searcher.read_snapshot():
        headings = searcher.headings_by_path()
        if headings is not None:
            for query in plan.golden.queries:
                for entry in query.named_entries:
                    headings.get(entry.path)
    return headings


def _find_vanished(
    plan: EvalPlan, searcher: EvaluatedSearcher, headings: IndexedHeadings, fingerprint: Fingerprint
) -> _Vanished:
    """Ask the history about the expected paths and headings the index lacks (it is
    read only when some are missing)."""
    missing = unindexed_paths(plan.golden, headings)
    unmatched_pairs = unmatched_headings(plan.golden, headings)
    unmatched = list(dict.fromkeys(path for path, _ in unmatched_pairs))
    if not missing and not unmatched:
        return _Vanished()
    picked = _read_and_pick(plan, fingerprint)
    stored, choice = picked
    digests_now = _digests_now(searcher)
    removed: Collection[str] = ()
    deleted: dict[str, str] = {}
    held: dict[str, str] = {}
    if missing:
        # an expected path the baseline run's corpus held was deleted since: a
        # lost answer the run scores, not a golden-file mistake
        removed = _baseline_paths(choice)
        # one another stored run held (the golden file changed with it, say): no
        # typo either, and the message says so
        gone = [p for p in missing if p not in removed]
        deleted = _deleted_since_stored(gone, stored, digests_now)
        # ... and one a trusted run held is a lost answer in every run after the
        # deletion (the second, a -k run, one node id), not only the first
        held = _held_by_trusted_runs(gone, stored)
        removed = {*removed, *held}
        deleted = {p: why for p, why in deleted.items() if p not in held}
    changed: set[str] = set()
    if unmatched:
        # an expected heading the edited document no longer has: lost, like a
        # deleted document, when the baseline (same golden file) still had it --
        # or an earlier trusted run of this golden file did (a run after the edit is
        # the baseline now): lost in every run after the edit, not only the first
        changed = _changed_since_baseline(unmatched, choice, digests_now)
        rest = [p for p in unmatched if p not in changed]
        changed |= _edited_since_stored(rest, stored, fingerprint, digests_now)
    lost = frozenset(pair for pair in unmatched_pairs if pair[0] in changed)
    return _Vanished(picked, removed, deleted, changed, lost, held)


def _check_golden_entries(
    plan: EvalPlan, headings: IndexedHeadings, vanished: _Vanished, *, custom: bool
) -> None:
    """A golden entry naming nothing indexed (now or in the baseline), or an empty KB,
    is a mistake in the input: stop before the first search, record nothing.  With a
    ``custom`` retriever the message names the knowledge base's files, not an index
    (it has none of groove's); the rules are the same in both doors."""

    def why_unindexed(path: str) -> str | None:
        return why_not_indexed(plan.kb, path, plan.settings.index)

    check_before_search(
        plan.golden,
        headings,
        plan.kb,
        plan.settings.index.parsers,
        vanished.removed,
        why_unindexed,
        vanished.deleted,
        vanished.changed,
        KB_FILES if custom else INDEX,
    )


def begin_evaluation(plan: EvalPlan, searcher: EvaluatedSearcher) -> Evaluation:
    """Everything between opening a searcher and the first search.

    Raises :class:`~pytest_groove.errors.GrooveError` for an expected entry that names
    nothing the searcher can answer with (or an empty KB), a refused history, or a
    ``--baseline`` run that is unknown or measured with other settings.  Nothing is
    searched or recorded before these checks pass.
    """
    headings = _read_expected_headings(plan, searcher)
    fingerprint = build_fingerprint(plan, searcher.identity)
    vanished = _Vanished()
    if headings is not None:
        vanished = _find_vanished(plan, searcher, headings, fingerprint)
        _check_golden_entries(plan, headings, vanished, custom=fingerprint.retriever is not None)
    picked = vanished.picked
    stored, choice = picked if picked is not None else _read_and_pick(plan, fingerprint)
    counterparts = baseline_counterparts(plan.golden.queries, choice)
    return Evaluation(
        plan=plan,
        fingerprint=fingerprint,
        stored=stored,
        choice=choice,
        baseline_queries=counterparts,
        searcher=searcher,
        lost_headings=vanished.lost,
        vanished_files=vanished.held,
        known_misses=known_misses(choice, counterparts),
        document_headings=headings,
    )


def known_misses(
    choice: BaselineChoice | None, counterparts: Sequence[QueryResult | None]
) -> frozenset[int]:
    """The positions of the golden queries whose accepted counterpart missed."""
    if choice is None or choice.accepted is None or choice.baseline is None:
        return frozenset()
    k_values = choice.baseline.fingerprint.k_values
    return frozenset(
        position
        for position, before in enumerate(counterparts)
        if before is not None and is_miss(before.metrics, k_values)
    )
