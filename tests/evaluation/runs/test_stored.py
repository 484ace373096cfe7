"""A stored run's queries read at their first use, and its text kept while it holds."""

from __future__ import annotations

import pickle
from dataclasses import replace

from pytest_groove.evaluation.runs.stored import LazyTuple
from tests.helpers.eval_factories import big_run


def test_a_lazy_tuple_reads_once_and_is_the_tuple_it_reads() -> None:
    calls: list[int] = []
    items = (1, 2, 3)

    def load() -> tuple[int, ...]:
        calls.append(1)
        return items

    lazy = LazyTuple(load)
    assert not lazy.loaded and repr(lazy) == "LazyTuple(<unread>)"
    assert lazy == items and items == lazy and hash(lazy) == hash(items)
    assert lazy[0] == 1 and lazy[1:] == (2, 3) and list(lazy) == [1, 2, 3] and len(lazy) == 3
    assert lazy == LazyTuple(lambda: items) and lazy != (1, 2)
    assert lazy.loaded and calls == [1]
    assert pickle.loads(pickle.dumps(lazy)) == items


def test_a_run_with_lazy_queries_equals_the_run_it_was_read_from() -> None:
    run = big_run(minutes=1, queries=2)
    lazy = replace(run, per_query=LazyTuple(lambda: run.per_query))
    assert lazy == run and run == lazy
    assert pickle.loads(pickle.dumps(lazy)) == run


def test_a_runs_stored_text_holds_only_while_its_fields_are_those_read() -> None:
    run = big_run(minutes=1, queries=2).keeping_text("{the line}")
    assert run.stored_text() == "{the line}"
    assert replace(run, frozen=True).stored_text() == "{the line}"
    assert replace(run, edited=True).stored_text() is None
    assert replace(run, per_query=run.per_query[:1]).stored_text() is None
    assert replace(run, aggregate=replace(run.aggregate, mrr=0.9)).stored_text() is None
    assert big_run(minutes=1, queries=2).stored_text() is None
