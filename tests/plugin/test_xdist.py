"""The pytest-xdist hand-off: what the controller gives each worker."""

from __future__ import annotations

import json

import pytest

from pytest_groove.plugin.xdist import WORKER_GOLDEN, golden_payload, handed_golden
from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery, GoldenSet
from tests.plugin.test_run import GOOD, XDIST, Project

pytest_plugins = ["pytester"]

RICH = GoldenSet(
    path="/kb/.groove-eval.yml",
    hash="ab" * 32,
    queries=(
        GoldenQuery(
            id="ship-days",
            query='which days do we ship "Tuesdays"',
            expected=(
                ExpectedEntry("ops/deploys.md", "Schedule", line=5, grade=2),
                ExpectedEntry("ops/other.md", None, line=7, grade=0),
            ),
            tags=("ops", "smoke"),
            line=2,
            explicit_id=True,
            not_expected=(ExpectedEntry("misc/more.md", "Intro", line=9),),
            within=3,
        ),
        GoldenQuery(id="キャッシュ", query="キャッシュの削除", expected=(), line=11),
    ),
)


def _lines(golden: GoldenSet) -> list[list[int]]:
    # an entry's line is left out of its equality: compared on its own
    return [[q.line, *(e.line for e in (*q.expected, *q.not_expected))] for q in golden.queries]


def test_the_handed_golden_set_is_the_parsed_one() -> None:
    handed = handed_golden({WORKER_GOLDEN: golden_payload(RICH)})
    assert handed == RICH
    assert handed is not None and _lines(handed) == _lines(RICH)


@pytest.mark.parametrize(
    "workerinput",
    [
        {},
        None,
        {WORKER_GOLDEN: 7},
        {WORKER_GOLDEN: "not json"},
        {WORKER_GOLDEN: json.dumps(["path", "hash"])},
        {WORKER_GOLDEN: json.dumps(["path", "hash", [["only-an-id"]]])},
    ],
)
def test_a_worker_handed_nothing_readable_parses_the_file_itself(workerinput: object) -> None:
    assert handed_golden(workerinput) is None


#: a conftest that rewrites the golden file once the controller has read it, just
#: before the workers start (only the first query is left, under another id)
REWRITES_GOLDEN = """

def pytest_xdist_setupnodes(config, specs):
    golden = pathlib.Path(__file__).parent / "kb" / ".groove-eval.yml"
    golden.write_text(
        "queries:\\n  - id: late\\n    query: which days do we ship\\n"
        "    expected:\\n      - path: ops/deploys.md\\n",
        encoding="utf-8",
    )
"""


def test_workers_run_the_queries_the_controller_read(pytester: pytest.Pytester) -> None:
    """The workers judge the golden set the controller's run is built from, even when
    the file changes as they start (parsing it again, they collected other items)."""
    project = Project(pytester)
    conftest = project.pytester.path / "conftest.py"
    conftest.write_text(conftest.read_text() + REWRITES_GOLDEN)
    project.answer(GOOD)
    result = project.run("--groove-no-history", *XDIST)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=4)
