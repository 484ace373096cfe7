"""A retriever that fails in a way every later golden query would repeat stops the run
under pytest once -- with and without pytest-xdist -- and says so in one line.

- it cannot be built (its module does not import, a lock another process holds): one
  ``ERROR:`` line, exit status 4, as a single process gives before any item; under
  ``-n`` each worker fails one item with the line (no traceback) and skips the rest;
- it raises while searching (a store refusing connections, a sync method left
  unimplemented): that item fails with the line, the later golden items are skipped,
  the retriever is not called again, and the summary says the run stopped;
- its hits name no KB file: the same stop, the same summary and exit status with and
  without xdist, and no partial aggregate presented as a subset.
"""

from __future__ import annotations

import pytest

from conftest import copy_example_kb
from pytest_groove.evaluation.history.file import HISTORY_FILE_NAME

#: the example KB's golden queries
QUERIES = 14

DISTS = [[], ["-n", "2"]]
DIST_IDS = ["one-process", "xdist"]

LOCKED = """\
import fcntl, pathlib

_lock = open(pathlib.Path(__file__).parent / "store.lock", "w")
fcntl.flock(_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)


def search(query, limit):
    return [{"path": "ops/rollback.md", "heading": None, "score": 1.0}]
"""

RAISING = """\
import os, pathlib


def raises(query, limit):
    with open(pathlib.Path(__file__).parent / "calls.txt", "a") as log:
        log.write(f"{os.getpid()}\\n")
    raise ConnectionError("qdrant at 10.0.0.5:6333 refused")
"""

#: every hit's path starts with the KB folder's own name (relative to the working
#: directory, not to the KB): no hit names a KB file
PREFIXED = """\
def search(query, limit):
    return [
        {"path": "kb/ops/rollback.md", "heading": None, "score": 1.0},
        {"path": "kb/api/errors.md", "heading": None, "score": 0.5},
    ]
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    copy_example_kb(pytester.path / "kb")
    for name, text in (("locked_search", LOCKED), ("raising", RAISING), ("prefixed", PREFIXED)):
        (pytester.path / f"{name}.py").write_text(text, encoding="utf-8")
    return pytester


def _output(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


def _run_stopped(
    project: pytest.Pytester, ends: pytest.ExitCode, *args: str
) -> tuple[pytest.RunResult, str]:
    """A run on the KB in a subprocess that ends ``ends`` without a traceback; its
    result and output."""
    result = project.runpytest_subprocess("--groove-kb", "kb", "-p", "no:cacheprovider", *args)
    output = _output(result)
    assert result.ret == ends, output
    _no_traceback(output)
    return result, output


def _no_traceback(output: str) -> None:
    assert "Traceback" not in output and "INTERNALERROR" not in output
    assert "UsageError" not in output  # pytest.UsageError raised inside an item
    assert not [line for line in output.splitlines() if line.startswith("E   ")]


def _recorded(project: pytest.Pytester) -> bool:
    return (project.path / "kb" / HISTORY_FILE_NAME).exists()


# --------------------------------------------------------------------------- cannot be built


@pytest.mark.parametrize(
    "named", [[], ["--groove-retriever-name", "locked"]], ids=["unnamed", "named"]
)
def test_a_retriever_a_worker_cannot_import_is_one_error_line(
    project: pytest.Pytester, named: list[str]
) -> None:
    """The retriever takes an exclusive lock at import: named or not, only the workers
    build it (the controller never imports it), the first takes the lock and the
    other's import fails.  Once: ~14,000 lines, a traceback per golden query."""
    holder = "another xdist worker built it and searched"
    result, output = _run_stopped(
        project, pytest.ExitCode.USAGE_ERROR,
        "--groove-retriever", "locked_search:search", *named,
        "-n", "2",
    )  # fmt: skip
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1, output
    assert errors[0].startswith(
        "ERROR: retriever locked_search:search: could not import locked_search (BlockingIOError: "
    )
    # who holds it, and the way out
    assert holder in errors[0] and "run without -n" in errors[0]
    # a worker that could not build it failed one item with the line and skipped the
    # others (the worker holding the lock searched: its misses fail too)
    outcomes = result.parseoutcomes()
    assert outcomes["skipped"] >= 1
    # each failed item says it twice (its section and the summary line), the ERROR once:
    # never once per golden query
    assert output.count("could not import locked_search") <= 2 * outcomes["failed"] + 1
    assert not _recorded(project)


@pytest.mark.parametrize("dist", DISTS, ids=DIST_IDS)
def test_a_named_retriever_that_does_not_import_is_one_error_line(
    project: pytest.Pytester, dist: list[str]
) -> None:
    # named, it is built where it searches: in one process before any item (as an
    # unnamed one is), under xdist in each worker -- once, 14 identical failures
    result, _ = _run_stopped(
        project, pytest.ExitCode.USAGE_ERROR,
        "--groove-retriever", "nosuch:x",
        "--groove-retriever-name", "foo", *dist,
    )  # fmt: skip
    result.stderr.fnmatch_lines(
        ["ERROR: retriever nosuch:x: could not import nosuch (ModuleNotFoundError: *)"]
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) <= (2 if dist else 0)
    assert "passed" not in outcomes
    assert not _recorded(project)


# --------------------------------------------------------------------------- raises


@pytest.mark.parametrize("dist", DISTS, ids=DIST_IDS)
def test_a_retriever_that_raises_stops_the_run_at_its_first_query(
    project: pytest.Pytester, dist: list[str]
) -> None:
    (project.path / "test_own.py").write_text("def test_own():\n    pass\n", encoding="utf-8")
    result, output = _run_stopped(
        project, pytest.ExitCode.TESTS_FAILED,
        "--groove-retriever", "raising:raises", "test_own.py", "-rs", *dist,
    )  # fmt: skip
    # one failure per process that searched, the rest skipped with its line, and the
    # retriever called once per process, not once per golden query
    calls = (project.path / "calls.txt").read_text(encoding="utf-8").split()
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == len(calls) <= max(1, len(dist) and 2)
    assert outcomes["skipped"] == QUERIES - len(calls)
    assert outcomes["passed"] == 1  # the project's own test still ran
    result.stdout.fnmatch_lines(
        [
            "groove: the run stopped: retriever raising:raises failed on query '*': "
            "ConnectionError: qdrant at 10.0.0.5:6333 refused; nothing was recorded and "
            "the retrieval gate did not run",
            "SKIPPED *not searched: the golden queries stopped at *",
        ]
    )
    assert "no golden query ran" not in output  # they ran, and stopped
    assert not _recorded(project)


HOOK_RETURNS_THE_CLASS = """\
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever


class Notes(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager=None):
        return [Document(page_content="Roll back.", metadata={"source": "ops/rollback.md"})]


def pytest_groove_retriever(config):
    return Notes
"""

ASYNC_ONLY = """\
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever


class Notes(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager=None):
        raise NotImplementedError("this retriever is async only")

    async def _aget_relevant_documents(self, query, *, run_manager):
        return [Document(page_content="Roll back.", metadata={"source": "ops/rollback.md"})]


def pytest_groove_retriever(config):
    return Notes()
"""


def test_a_hook_returning_the_retriever_class_is_refused_before_any_search(
    project: pytest.Pytester,
) -> None:
    pytest.importorskip("langchain_core")
    project.makeconftest(HOOK_RETURNS_THE_CLASS)
    result, _ = _run_stopped(project, pytest.ExitCode.USAGE_ERROR)
    result.stderr.fnmatch_lines(
        [
            "ERROR: retriever conftest.Notes is the class Notes, not a retriever: return "
            "(or name) an instance of it, Notes(...)"
        ]
    )
    assert "failed" not in result.parseoutcomes()


def test_an_async_only_langchain_retriever_stops_with_the_way_to_wrap_it(
    project: pytest.Pytester,
) -> None:
    pytest.importorskip("langchain_core")
    project.makeconftest(ASYNC_ONLY)
    result, output = _run_stopped(project, pytest.ExitCode.TESTS_FAILED)
    assert result.parseoutcomes() == {"failed": 1, "skipped": QUERIES - 1}
    assert "NotImplementedError: this retriever is async only; if it implements only" in output
    assert "return asyncio.run(retriever.ainvoke(query))" in output
    assert not _recorded(project)


# --------------------------------------------------------------------------- no KB file


@pytest.mark.parametrize("dist", DISTS, ids=DIST_IDS)
def test_hits_naming_no_kb_file_stop_the_run_alike_with_and_without_xdist(
    project: pytest.Pytester, dist: list[str]
) -> None:
    result, output = _run_stopped(
        project, pytest.ExitCode.TESTS_FAILED,
        "--groove-retriever", "prefixed:search", *dist,
    )  # fmt: skip
    result.stdout.fnmatch_lines(
        [
            "groove: the run stopped: retriever prefixed:search: none of its * hits in the "
            "first 3 queries it answered name a file of the knowledge base *(e.g. "
            "'kb/*')*; nothing was recorded and the retrieval gate did not run"
        ]
    )
    # the queries scored before the stop are not summed up as a subset nobody chose,
    # and the controller does not judge the workers' hits again as a usage error
    assert "Aggregate" not in output and "Subset run" not in output
    assert "ERROR:" not in output
    assert not _recorded(project)


# --------------------------------------------------------------------------- its own BaseException

OWN_BASE_EXCEPTION = """\
class Cancelled(BaseException):
    pass


def search(query, limit):
    raise Cancelled("the store's client was cancelled\\x1b[2J")
"""


@pytest.mark.parametrize("dist", DISTS, ids=DIST_IDS)
def test_a_retriever_raising_its_own_base_exception_stops_in_one_line(
    project: pytest.Pytester, dist: list[str]
) -> None:
    (project.path / "cancelling.py").write_text(OWN_BASE_EXCEPTION, encoding="utf-8")
    result, output = _run_stopped(
        project, pytest.ExitCode.TESTS_FAILED,
        "--groove-retriever", "cancelling:search", *dist,
    )  # fmt: skip
    assert "\x1b" not in output
    outcomes = result.parseoutcomes()
    assert 1 <= outcomes["failed"] <= max(1, len(dist) and 2)
    assert outcomes["failed"] + outcomes["skipped"] == QUERIES
    result.stdout.fnmatch_lines(
        [
            "groove: the run stopped: retriever cancelling:search failed on query '*': "
            "Cancelled: the store's client was cancelled\\x1b[[]2J; nothing was recorded *"
        ]
    )


# --------------------------------------------------------------------------- hangs

HANGING = """\
import time

import pytest_groove.search.retrievers.watchdog as watchdog

watchdog.STALL_SECONDS = 0.5


def search(query, limit):
    time.sleep(2.0)
    return [{"path": "ops/rollback.md", "heading": None, "score": 1.0}]
"""


@pytest.mark.parametrize("dist", DISTS, ids=DIST_IDS)
def test_a_python_retriever_that_hangs_is_told_of_on_the_terminal(
    project: pytest.Pytester, dist: list[str]
) -> None:
    """The line comes while the retriever is still being waited for, past pytest's
    capture (on standard error; an xdist worker's too), naming the retriever, the query
    and the ways to bound it."""
    (project.path / "hanging.py").write_text(HANGING, encoding="utf-8")
    result = project.runpytest_subprocess(
        "--groove-kb", "kb", "--groove-retriever", "hanging:search", "-k", "ship_days or ship-days",
        "-p", "no:cacheprovider", *dist,
    )  # fmt: skip
    output = _output(result)
    _no_traceback(output)
    lines = [line for line in result.stderr.lines if "has not answered" in line]
    assert lines == [
        "groove: warning: retriever hanging:search has not answered query 'which days of the "
        "week do we push new versions to production' in 0.5 s and is still being waited for: "
        "a Python retriever runs in this process and cannot be cut short; set a timeout on "
        "the client it calls, or bound the run with pytest-timeout (pytest --timeout=SECONDS); "
        "--groove-retriever-timeout applies to http:// retrievers only"
    ], output
