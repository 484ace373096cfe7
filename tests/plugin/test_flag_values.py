"""Bad option values through the pytest door: the same rules as ``groove``, exit 4.

Each refusal is one ``ERROR:`` line before any golden query is collected (a value the
plan checks included), naming the ini key and the file when the value came from there.
"""

from __future__ import annotations

import fnmatch

import pytest

from tests.plugin.test_run import MISSING, Project

pytest_plugins = ["pytester"]


@pytest.fixture
def project(pytester: pytest.Pytester) -> Project:
    return Project(pytester)


def _one_error_line(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    out, err = result.stdout.str(), result.stderr.str()
    assert "Traceback" not in out + err
    assert "no golden query ran" not in out  # refused before the session
    errors = [line for line in err.splitlines() if line.startswith("ERROR: ")]
    assert len(errors) == 1, err
    return errors[0]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--groove-reranker=foo"],
            "ERROR: unknown reranker 'foo': use one of none, bge-v2-m3, jina-v2-ml, "
            "bge-base, or cross-encoder:<hub id or local path>",
        ),
        (["--groove-model=bogus"], "ERROR: unknown embedding model 'bogus'; known models: *"),
        (
            ["--groove-baseline=2026", "--groove-no-history"],
            "ERROR: --groove-baseline needs the history: drop --groove-no-history",
        ),
        (
            ["--groove-baseline=2026", "--groove-no-diff"],
            "ERROR: --groove-baseline needs a comparison: drop --groove-no-diff",
        ),
    ],
)
def test_bad_values_the_plan_finds_are_one_line(
    project: Project, args: list[str], line: str
) -> None:
    found = _one_error_line(project.run(*args))
    assert fnmatch.fnmatch(found, line), found


@pytest.mark.parametrize(
    ("arg", "says"),
    [
        ("--groove-k=1,,5", "--groove-k: '1,,5' has an empty item"),
        ("--groove-k=\u0663", "--groove-k: '\u0663' is not a whole number"),
        ("--groove-metrics=map,,precision", "--groove-metrics: 'map,,precision' has an empty"),
        ("--groove-fail-under=mrr=\u0660.\u0665", "mrr: '\u0660.\u0665' is not a number"),
        ("--groove-retriever=my_search", "'my_search': expected module:attribute"),
    ],
)
def test_empty_items_and_other_digits_are_refused(project: Project, arg: str, says: str) -> None:
    result = project.run(arg)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert says in result.stderr.str()


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        pytest.param(
            "groove_k = 1,,5",
            "groove_k: '1,,5' has an empty item (two commas in a row, or one at an end): "
            "separate the items with single commas (e.g. groove_k 1,5,10)",
            id="list-with-an-empty-item",
        ),
        pytest.param(
            "groove_no_history = maybe",
            "groove_no_history takes true or false (got 'maybe')",
            id="bad-boolean",
        ),
        pytest.param(
            "groove_retriever = http:localhost:8000/search",
            "groove_retriever 'http:localhost:8000/search': expected module:attribute (for "
            "example my_search:retriever) or an http:// URL; a URL needs the // after http:",
            id="misspelt-retriever",
        ),
    ],
)
def test_a_bad_ini_value_names_the_key_and_the_file(
    project: Project, setting: str, says: str
) -> None:
    project.pytester.makeini(f"[pytest]\n{setting}\n")
    key = setting.split(" = ")[0]
    ini = project.pytester.path / "tox.ini"
    assert _one_error_line(project.run()) == f"ERROR: invalid {key} in {ini}: {says}"


def test_an_ini_baseline_beside_no_history_names_where_each_came_from(project: Project) -> None:
    project.pytester.makeini("[pytest]\ngroove_baseline = 2026\n")
    ini = project.pytester.path / "tox.ini"
    assert _one_error_line(project.run("--groove-no-history")) == (
        f"ERROR: groove_baseline in {ini} needs the history: drop --groove-no-history"
    )


def test_repeated_list_options_merge(project: Project) -> None:
    result = project.run(
        "--groove-no-history", "--groove-k", "1", "--groove-k", "3",
        "--groove-metrics", "precision", "--groove-metrics", "map",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["  recall@1 *", "  recall@3 *", "  MRR *", "  nDCG@3 *", "  P@3 *", "  MAP *"]
    )


def test_the_floor_gate_names_the_ini_key_that_set_the_floors(project: Project) -> None:
    project.pytester.makeini("[pytest]\ngroove_fail_under = recall@10=0.9\n")
    ini = project.pytester.path / "tox.ini"
    project.answer(MISSING)  # 3 of 4 found: recall@10 0.75
    result = project.run("--groove-no-history")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stderr.fnmatch_lines([f"*under its floor*because groove_fail_under in {ini} sets*"])


def test_a_second_knowledge_base_is_refused_not_dropped(project: Project) -> None:
    (project.pytester.path / "kb2").mkdir()
    line = _one_error_line(project.run("--groove-kb", "kb2"))  # run() passes --groove-kb kb
    assert line.startswith("ERROR: --groove-kb names 2 knowledge bases (")
    assert line.endswith("a session evaluates one: run pytest once per knowledge base")
    # the same folder twice (addopts and the command line, say) is one knowledge base
    assert project.run("--groove-kb", "./kb").ret == pytest.ExitCode.OK
