"""The pytest-xdist hand-off: the controller begins, the workers search.

The controller begins the evaluation just before the workers start (the index is
brought up to date once, under the indexer's lock, so the workers never race to build
it) and hands each worker what it needs to judge its items like a single process
would: the run fingerprint and each golden query's baseline result -- and, to every
worker whatever it will run, the golden set the controller parsed (one JSON string: a
worker decodes it in C rather than parsing the YAML again, and judges exactly the
queries the controller's fingerprint was built from).  A ``module:attr``
retriever without a ``--groove-retriever-name`` is the exception: its name is learnt
only by importing it, which the controller -- that searches nothing -- never does; each
worker begins over the retriever it built and reports its name, and the controller
begins under that name at the end (``ProcessRunner.begin_named``).  A worker opens
the index the controller left and searches; it never reads the history.  What comes
back travels on the test reports of its golden items (``runner.py``'s ``REPORT_*``
attributes): each result, a stop, and the searcher's notes (a custom retriever's kind
and warnings, which the controller's end-of-run checks need but never searched for).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.lifecycle import Evaluation, begin_evaluation
from pytest_groove.evaluation.plan import EvalPlan, StoredRuns
from pytest_groove.evaluation.runs.record import Fingerprint, QueryResult, RecordFormatError
from pytest_groove.evaluation.searched import EvaluatedSearcher
from pytest_groove.plugin.collection import golden_may_run
from pytest_groove.plugin.runner import ProcessRunner
from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery, GoldenSet

XDIST_HANDOFF_NAME = "groove-xdist-handoff"
#: workerinput key: what the controller hands the workers
WORKER_INPUT = "groove"
#: workerinput key: the golden set the controller parsed (:func:`golden_payload`)
WORKER_GOLDEN = "groove_golden"


def golden_payload(golden: GoldenSet) -> str:
    """The golden set as one JSON string (execnet ships one string far faster than
    thousands of nested values; :func:`handed_golden` reads it back)."""
    queries = [
        [
            q.id,
            q.query,
            [_entry_row(e) for e in q.expected],
            list(q.tags),
            q.line,
            q.explicit_id,
            [_entry_row(e) for e in q.not_expected],
            q.within,
        ]
        for q in golden.queries
    ]
    return json.dumps([golden.path, golden.hash, queries])


def _entry_row(entry: ExpectedEntry) -> list[Any]:
    return [entry.path, entry.heading, entry.line, entry.grade]


def handed_golden(workerinput: Any) -> GoldenSet | None:
    """The golden set the controller handed this worker; None when it handed none (or
    something this version cannot read): the worker then parses the file itself."""
    raw = workerinput.get(WORKER_GOLDEN) if isinstance(workerinput, dict) else None
    if not isinstance(raw, str):
        return None
    try:
        path, digest, rows = json.loads(raw)
        queries = tuple(
            GoldenQuery(
                id=qid,
                query=text,
                expected=tuple(ExpectedEntry(*e) for e in expected),
                tags=tuple(tags),
                line=line,
                explicit_id=explicit,
                not_expected=tuple(ExpectedEntry(*e) for e in not_expected),
                within=within,
            )
            for qid, text, expected, tags, line, explicit, not_expected, within in rows
        )
    except (ValueError, TypeError):
        return None
    return GoldenSet(path=path, hash=digest, queries=queries)


def handoff_payload(evaluation: Evaluation) -> dict[str, Any]:
    """What a worker is handed (JSON-able: xdist sends it over execnet)."""
    return {
        "fingerprint": evaluation.fingerprint.to_json(),
        "baseline": [None if r is None else r.to_json() for r in evaluation.baseline_queries],
        # what tells a worker's item that an answer was deleted or renamed
        "baseline_files": evaluation.baseline_digests(),
        # ... or that its note lost the expected heading
        "lost_headings": [list(pair) for pair in sorted(evaluation.lost_headings)],
        # ... and which of its queries missed in the accepted baseline too
        "known_misses": sorted(evaluation.known_misses),
    }


def _baseline(raw: Any, count: int) -> tuple[QueryResult | None, ...]:
    entries = raw if isinstance(raw, list) and len(raw) == count else [None] * count
    baseline: list[QueryResult | None] = []
    for entry in entries:
        try:
            baseline.append(None if entry is None else QueryResult.from_json(entry))
        except RecordFormatError:
            baseline.append(None)  # a bad entry judges that item without a baseline
    return tuple(baseline)


def worker_evaluation(
    plan: EvalPlan, workerinput: dict[str, Any], searcher: EvaluatedSearcher
) -> Evaluation:
    """The evaluation a worker judges its items with, from the controller's hand-off."""
    payload = workerinput.get(WORKER_INPUT) or {}
    if payload.get("begin") is True:
        # the controller left the retriever to the workers: each begins over its own
        # (the history is only read here; the controller records at the end)
        return begin_evaluation(plan, searcher)
    if "fingerprint" not in payload:
        # the controller judged that no golden query would be selected (collection.
        # golden_may_run) and began nothing; a conftest that adds markers at collection
        # can prove it wrong
        raise GrooveError(
            "a golden query was selected although the -m expression selects none of the "
            "golden items by their own markers (groove and their tags), so the xdist "
            "controller prepared no evaluation: select golden queries by their tags, or "
            "run without -n"
        )
    fingerprint = Fingerprint.from_json(payload.get("fingerprint"))
    return Evaluation(
        plan=plan,
        fingerprint=fingerprint,
        stored=StoredRuns(),
        choice=None,
        baseline_queries=_baseline(payload.get("baseline"), len(plan.golden.queries)),
        searcher=searcher,
        baseline_files=_files(payload.get("baseline_files")),
        lost_headings=_pairs(payload.get("lost_headings")),
        known_misses=_positions(payload.get("known_misses")),
    )


def _positions(raw: Any) -> frozenset[int]:
    if not isinstance(raw, list):
        return frozenset()
    return frozenset(p for p in raw if isinstance(p, int) and not isinstance(p, bool))


def _pairs(raw: Any) -> frozenset[tuple[str, str]]:
    if not isinstance(raw, list):
        return frozenset()
    return frozenset(
        (str(pair[0]), str(pair[1]))
        for pair in raw
        if isinstance(pair, list | tuple) and len(pair) == 2
    )


def _files(raw: Any) -> dict[str, str] | None:
    if not isinstance(raw, dict):
        return None
    return {str(path): str(digest) for path, digest in raw.items()}


def become_worker(runner: ProcessRunner, workerinput: dict[str, Any]) -> None:
    """Give ``runner`` the worker role: it searches the index the controller prepared."""
    runner.worker_evaluation = lambda searcher: worker_evaluation(
        runner.plan, workerinput, searcher
    )


class XdistHandOff:
    """pytest-xdist on the controller: begin before the workers start, hand them the
    fingerprint and the baseline.  Registered only when xdist is loaded."""

    def __init__(self, runner: ProcessRunner) -> None:
        self.runner = runner
        self._golden: str | None = None

    @property
    def needed(self) -> bool:
        """Whether the workers may run a golden query (else no index work at all:
        ``pytest -n 2 -m "not groove"`` runs the project's tests only)."""
        return golden_may_run(self.runner.config, self.runner.plan.golden)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: Any) -> None:
        """Just before the workers start: bring the index up to date, begin -- unless
        the retriever is a ``module:attr`` known by its spec alone, which only the
        workers build (its name is learnt there: :meth:`ProcessRunner.begin_named`)."""
        if not self.needed:
            return
        if _spec_alone(self.runner.plan):
            self.runner.begins_in_workers = True
            return
        self.runner.begin()

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Hand each worker the golden set, and the fingerprint and each query's
        baseline (or, when the workers begin themselves, just that)."""
        if self._golden is None:
            self._golden = golden_payload(self.runner.plan.golden)
        node.workerinput[WORKER_GOLDEN] = self._golden
        if not self.needed:
            return
        if self.runner.begins_in_workers:
            node.workerinput[WORKER_INPUT] = {"begin": True}
            return
        node.workerinput[WORKER_INPUT] = handoff_payload(self.runner.begin())


def _spec_alone(plan: EvalPlan) -> bool:
    """A ``module:attr`` retriever without ``--groove-retriever-name``: building it is
    the only way to learn its name (its ``groove_name``, its store)."""
    from pytest_groove.settings.retriever_spec import is_url

    run = plan.options
    return run.retriever is not None and run.retriever_name is None and not is_url(run.retriever)
