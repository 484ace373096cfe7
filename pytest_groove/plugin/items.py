"""The pytest nodes: a collector for the golden file and one item per golden query.

An item searches its query, scores the hits, and keeps the :class:`QueryResult` so the
plugin can put it on the test report (that is how results reach the pytest-xdist
controller).  It fails when the query misses -- nothing expected within the largest
k -- and, under ``--groove-fail-on-regression``, when the query's own metrics dropped
against the baseline run (not under ``--groove-significance``: one query's drop cannot be
told from chance, so only the aggregate gate decides).  Failure texts are plain data,
not tracebacks: the query, what was expected, where each expected entry ranked, and the
top hits.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import pytest

from pytest_groove.errors import GrooveError, StopsTheRun
from pytest_groove.evaluation.golden.file import marker_name_for_tag, node_ids
from pytest_groove.evaluation.runs.record import QueryResult
from pytest_groove.scoring.metric_table import query_summary
from pytest_groove.scoring.metrics import expected_ranks, is_miss
from pytest_groove.scoring.records import GoldenQuery, GoldenSet
from pytest_groove.search.hits import grouping_note, hit_label


class QueryRunner(Protocol):
    """What an item needs of its process: search a query, judge it against the baseline."""

    #: why the golden queries of this process stopped (None: they did not)
    stopped: str | None
    #: the golden item that failed with that line (the later ones' skip names it)
    stopped_at: str | None

    @property
    def k_values(self) -> tuple[int, ...]: ...

    @property
    def grouped_by_document(self) -> bool:
        """Whether the search grouped its hits by document (``[search] document_first``)."""

    def run_query(self, position: int, query: GoldenQuery) -> QueryResult:
        """Search golden query number ``position`` and score it."""

    def regression(self, name: str, position: int, result: QueryResult) -> str | None:
        """The headline of the item's regression failure (None: it did not regress)."""

    def known_miss(self, position: int, result: QueryResult) -> str | None:
        """Why a missed query is an expected failure (None: it is a failure)."""

    def miss_causes(self, position: int, result: QueryResult) -> list[str]:
        """What the reports say caused a miss (the headline adds them)."""

    def junit_properties(self, result: QueryResult) -> list[tuple[str, object]]:
        """The user properties the item records (empty unless asked for)."""


#: the marker every golden item carries (``-m groove`` / ``-m "not groove"``)
GROOVE_MARKER = "groove"
#: hits listed in a failure text
SHOWN_HITS = 10

#: the marker name a golden tag becomes (one definition, shared with the golden loader)
tag_marker = marker_name_for_tag


class QueryFailed(Exception):
    """An item's verdict: the text is the whole failure report (no traceback)."""


def _label(path: str, heading: str | None) -> str:
    return hit_label(path, heading)


def _rank_text(rank: int | None, max_k: int, fetched: int) -> str:
    if rank is None:
        return f"not retrieved (searched {fetched})"
    if rank > max_k:
        return f"rank {rank} (outside the top {max_k})"
    return f"rank {rank}"


def describe_result(
    result: QueryResult, k_values: Sequence[int], headline: str, *, grouped: bool = False
) -> str:
    """The failure text: query, expected entries with their ranks, top hits (no hits:
    three lines; ``grouped``: the search grouped them by document, said when their
    scores do not descend)."""
    max_k = max(k_values)
    if not result.top_k:
        # nothing to rank: each entry "not retrieved" and every metric 0 say nothing more
        expected = ", ".join(_label(e.path, e.heading) for e in result.expected[:SHOWN_HITS])
        more = len(result.expected) - SHOWN_HITS
        expected += f" and {more} more" if more > 0 else ""
        return "\n".join(
            [
                headline,
                f"  query:    {result.query}",
                f"  the search returned no hits (expected: {expected})",
            ]
        )
    ranks = expected_ranks(result.expected, result.top_k)
    width = max(len(_label(e.path, e.heading)) for e in result.expected)
    lines = [headline, f"  query:    {result.query}", "  expected:"]
    for entry, rank in zip(result.expected, ranks, strict=True):
        label = _label(entry.path, entry.heading)
        lines.append(f"    {label:<{width}}  {_rank_text(rank, max_k, len(result.top_k))}")
    shown = result.top_k[:SHOWN_HITS]
    lines.append(f"  top {len(shown)} of {len(result.top_k)} hits:")
    for hit in shown:
        lines.append(f"    {hit.rank:>3}. {_label(hit.path, hit.heading)}  ({hit.score:.4f})")
    note = grouping_note([round(hit.score, 4) for hit in shown], grouped)
    if note is not None:
        lines.append(f"  {note}")
    lines.append(f"  metrics:  {query_summary(result.metrics, k_values)}")
    return "\n".join(lines)


class GrooveGoldenFile(pytest.File):
    """The golden YAML file; collects one :class:`GrooveQueryItem` per query."""

    def __init__(self, *, golden: GoldenSet, runner: QueryRunner, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.golden = golden
        self.runner = runner

    def collect(self) -> Iterator[GrooveQueryItem]:
        queries = self.golden.queries
        for position, (query, name) in enumerate(zip(queries, node_ids(queries), strict=True)):
            item = GrooveQueryItem.from_parent(
                self, name=name, query=query, position=position, runner=self.runner
            )
            item.add_marker(GROOVE_MARKER)
            for tag in query.tags:
                marker = tag_marker(tag)
                if marker is not None:
                    item.add_marker(marker)
            yield item


class GrooveQueryItem(pytest.Item):
    """One golden query as a test."""

    def __init__(
        self, *, query: GoldenQuery, position: int, runner: QueryRunner, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.query = query
        #: the query's place in the golden file
        self.position = position
        self.runner = runner
        #: set by runtest; read by the plugin's makereport hook
        self.groove_result: QueryResult | None = None
        #: a golden query takes no fixtures (conftest hooks that read the names of an
        #: item's fixtures, as of any pytest Function or DoctestItem, find none)
        self.fixturenames: list[str] = []

    def runtest(self) -> None:
        runner = self.runner
        if runner.stopped is not None:
            # a short reference: the line itself is said by the stopped item and the
            # summary, not again by each skipped item (-rs, JUnit)
            pytest.skip(f"not searched: the golden queries stopped at {runner.stopped_at}")
        try:
            result = runner.run_query(self.position, self.query)
        except StopsTheRun as exc:
            # every later query would fail the same way (a service down, hits no KB file
            # holds): this item fails with the one line and the later golden items of
            # this process are skipped with it -- not one identical failure (and one
            # wait) each -- while the project's other tests still run
            runner.stopped = exc.message
            runner.stopped_at = repr(self.name)
            raise QueryFailed(exc.message) from None
        self.groove_result = result
        self.user_properties.extend(runner.junit_properties(result))
        k_values = runner.k_values
        known = runner.known_miss(self.position, result)
        if known is not None:
            pytest.xfail(known)
        if is_miss(result.metrics, k_values):
            raise QueryFailed(
                describe_result(
                    result,
                    k_values,
                    f"golden query {self.name!r} missed: nothing expected in the top "
                    f"{max(k_values)}"
                    + "".join(f"; {c}" for c in runner.miss_causes(self.position, result)),
                    grouped=runner.grouped_by_document,
                )
            )
        regression = runner.regression(self.name, self.position, result)
        if regression is not None:
            raise QueryFailed(
                describe_result(result, k_values, regression, grouped=runner.grouped_by_document)
            )

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        if isinstance(excinfo.value, QueryFailed):
            return str(excinfo.value)
        if isinstance(excinfo.value, GrooveError):
            return f"golden query {self.name!r}: {excinfo.value.message_for('pytest')}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        line = self.query.line - 1 if self.query.line > 0 else None
        return self.path, line, f"golden query {self.name}"
