"""``groove tune`` and golden files that would mislead it: repeated query texts, and
expected entries the index does not hold (in-process CLI, hash embedder, a tiny KB)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_tune import FILLERS, GOLDEN, TOPICS, write_kb
from tests.helpers.cli_invoke import CliRun, invoke


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_kb(tmp_path_factory.mktemp("tune-golden") / "kb", {**TOPICS, **FILLERS})
    indexed = invoke("index", "--kb-path", root, "--model", "hash")
    assert indexed.returncode == 0, indexed.stderr
    return root


def tune(kb: Path, golden: Path, *extra: str) -> CliRun:
    return invoke(
        "tune", "--kb-path", kb, "--model", "hash", "--no-reindex", "--golden", golden, *extra
    )


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _tripled(golden: str) -> str:
    """Every query of ``golden`` three times, ids suffixed -copy0/1/2."""
    body = golden.split("queries:\n", 1)[1]
    items = ["  - id: " + item for item in body.split("  - id: ") if item.strip()]
    out = ["queries:"]
    for copy in range(3):
        out += [item.replace("\n", f"-copy{copy}\n", 1).rstrip("\n") for item in items]
    return "\n".join(out) + "\n"


def test_repeated_queries_count_once_and_are_named_in_one_warning(kb: Path, tmp_path: Path) -> None:
    once = tune(kb, write(tmp_path / "once.yml", GOLDEN), "--format", "json")
    assert once.returncode == 0, once.stderr
    # the same queries three times, plus one copy without an id
    tripled = _tripled(GOLDEN) + (
        '  - query: "zebrafish  WATER temperature"\n'
        "    expected:\n      - path: zebra/husbandry.md\n"
    )
    run = tune(kb, write(tmp_path / "tripled.yml", tripled), "--format", "json")
    assert run.returncode == 0, run.stderr
    before, after = json.loads(once.stdout), json.loads(run.stdout)
    assert after["effective_query_count"] == 3 * before["effective_query_count"] + 1
    # the statistics see each text once: the same folds, differences and verdict
    assert after["loo"] == before["loo"]
    assert after["verdict"] == before["verdict"]
    assert after["grid"] == before["grid"]
    water = [f"zebra-water-copy{i}" for i in range(3)] + ["zebrafish  WATER temperature"]
    assert water in after["repeated_queries"]
    warnings = [line for line in run.stderr.splitlines() if "repeat the text of another" in line]
    assert len(warnings) == 1, run.stderr
    line = warnings[0]
    assert line.startswith("groove tune: WARNING: ")
    assert "(zebra-water-copy0 = zebra-water-copy1 = zebra-water-copy2 = zebrafish" in line
    n = before["effective_query_count"]
    assert f"(effective N = {n}, not {3 * n + 1})" in line
    assert "repeat the text" not in once.stderr


def test_copies_without_an_id_are_named_by_their_lines(kb: Path, tmp_path: Path) -> None:
    item = '  - query: "what do zebrafish larvae eat"\n    expected:\n'
    item += "      - path: zebra/feeding.md\n"
    golden = write(tmp_path / "dups.yml", "queries:\n" + item * 3)
    run = tune(kb, golden)
    assert run.returncode == 0, run.stderr
    assert "(what do zebrafish larvae eat (lines 2, 5, 8));" in run.stderr
    assert "effective N = 1, not 3" in run.stderr


def _eval_error(kb: Path, golden: Path) -> str:
    evaluated = invoke(
        "eval", "--kb-path", kb, "--model", "hash", "--no-reindex", "--no-history",
        "--golden", golden,
    )  # fmt: skip
    assert evaluated.returncode == 1, evaluated.stderr
    return evaluated.stderr


@pytest.mark.parametrize(
    ("entry", "needle"),
    [
        ("      - path: zebra/nothere.md\n", "line 5: expected path `zebra/nothere.md` is not in"),
        (
            "      - path: zebra/feeding.md\n        heading: No Such Heading\n",
            "line 5: expected heading `No Such Heading` is not a heading of `zebra/feeding.md`",
        ),
    ],
)
def test_an_expected_entry_the_index_lacks_is_refused_as_groove_eval_refuses_it(
    kb: Path, tmp_path: Path, entry: str, needle: str
) -> None:
    golden = write(
        tmp_path / "bad.yml",
        'queries:\n  - id: gone\n    query: "zebrafish larvae"\n    expected:\n' + entry,
    )
    run = tune(kb, golden)
    assert (run.returncode, run.stdout) == (1, "")
    error = [line for line in run.stderr.splitlines() if line.startswith("Error: ")]
    assert error == [f"Error: golden file {golden}: {needle}" + error[0].split(needle, 1)[1]]
    assert "Traceback" not in run.stderr and "sweeping" not in run.stderr
    # one engine, several doors: the very line groove eval prints
    assert error[0] + "\n" == _eval_error(kb, golden).splitlines(keepends=True)[-1]


def test_an_empty_expected_list_is_refused_by_the_loader_in_one_line(
    kb: Path, tmp_path: Path
) -> None:
    golden = write(
        tmp_path / "empty.yml", 'queries:\n  - id: e\n    query: "zebrafish"\n    expected: []\n'
    )
    run = tune(kb, golden)
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == (
        f"Error: failed to parse golden file: {golden}: queries[0].expected: the list is empty; "
        "name at least one `path` this query should find at line 4\n"
    )
