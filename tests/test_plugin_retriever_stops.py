"""A retriever that fails in a way every later golden query would repeat stops the run
under pytest once -- with and without pytest-xdist -- and says so in one line.

- its hits name no KB file: the same stop, the same summary and exit status with and
  without xdist, and no partial aggregate presented as a subset.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

# Imported here, not only inside the inner runs: pytester's in-process runs drop the
# modules a run imported, and PyYAML's C loader does not survive being imported twice.
import pytest_groove.plugin.controller
import pytest_groove.plugin.runner  # noqa: F401
from pytest_groove.evaluation.history import HISTORY_FILE_NAME

EXAMPLE_KB = Path(__file__).resolve().parents[1] / "examples" / "kb"
#: the example KB's golden queries
QUERIES = 14

DISTS = [[], ["-n", "2"]]
DIST_IDS = ["one-process", "xdist"]

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
    shutil.copytree(
        EXAMPLE_KB,
        pytester.path / "kb",
        ignore=shutil.ignore_patterns(".groove", ".groove-eval-history*"),
    )
    (pytester.path / "prefixed.py").write_text(PREFIXED, encoding="utf-8")
    return pytester


def _output(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


def _no_traceback(output: str) -> None:
    assert "Traceback" not in output and "INTERNALERROR" not in output
    assert "UsageError" not in output  # pytest.UsageError raised inside an item
    assert not [line for line in output.splitlines() if line.startswith("E   ")]


def _recorded(project: pytest.Pytester) -> bool:
    return (project.path / "kb" / HISTORY_FILE_NAME).exists()


# --------------------------------------------------------------------------- no KB file


@pytest.mark.parametrize("dist", DISTS, ids=DIST_IDS)
def test_hits_naming_no_kb_file_stop_the_run_alike_with_and_without_xdist(
    project: pytest.Pytester, dist: list[str]
) -> None:
    result = project.runpytest_subprocess(
        "--groove-kb", "kb", "--groove-retriever", "prefixed:search",
        "-p", "no:cacheprovider", *dist,
    )  # fmt: skip
    output = _output(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output
    _no_traceback(output)
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
