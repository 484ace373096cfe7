"""Bad flag values through the ``groove`` command: one rule for every flag.

A value that is wrong in itself -- out of range, an unknown name, a list with an empty
item, digits other than 0-9, two flags that contradict each other -- is one line,
``groove <command>: error: ...``, and exit status 2, whether argparse or the plan
finds it; a bad value in ``groove.toml`` is a config error naming the file (exit 1).
A list flag may repeat (the lists merge); a missing index names the command that
builds it.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.helpers.cli_invoke import CliRun, invoke
from tests.helpers.kb_files import write_notes

GOLDEN = """\
queries:
  - id: deploy-days
    query: "which days do we deploy"
    expected:
      - path: "ops/deploys.md"
  - id: rotate
    query: "how are tokens rotated"
    expected:
      - path: "api/auth.md"
"""

NOTES = {
    ".groove-eval.yml": GOLDEN,
    "ops/deploys.md": "# Deploys\n\n## Schedule\n\nWe deploy on Tuesdays and Thursdays.\n",
    "api/auth.md": "# Auth\n\n## Rotation\n\nTokens are rotated every ninety days.\n",
}


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    # a space in the path: a command named in a message must be quoted for a shell
    return write_notes(tmp_path / "my kb", NOTES)


def eval_run(kb: Path, *flags: str) -> CliRun:
    return invoke("eval", "--kb-path", kb, "--model", "hash", *flags)


def _one_usage_line(done: CliRun, command: str = "eval") -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"groove {command}: error: "), lines[0]
    return lines[0]


# --------------------------------------------------------------------------- one rule


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        # found by argparse
        (["--limit", "0"], "error: --limit must be at least 1 (got 0) (see groove eval --help)"),
        (["--mmr", "maybe"], "error: --mmr takes true or false"),
        # found once the flags were read: the same line, the same status
        (["--k", "1000000001"], "--k: every k must be at most 1,000,000,000"),
        (["--reranker", "foo"], "unknown reranker 'foo'"),
        (["--reranker", "cross-encoder:"], "reranker 'cross-encoder:' names no model"),
        (["--model", "bogus"], "unknown embedding model 'bogus'"),
        (["--threshold", "recall@7=0.1"], "--threshold names recall@7, which this run"),
        (["--fail-under", "recall@7=0.5"], "--fail-under names recall@7, which this run"),
        (["--freeze-baseline", "--no-history"], "--freeze-baseline needs the history"),
        # the form of a retriever spec is the flag's value; whether it imports is not
        (["--retriever", "my_search"], "--retriever 'my_search': expected module:attribute"),
        (["--retriever", "a:b:c"], "--retriever 'a:b:c': expected module:attribute"),
        (["--retriever", "http:localhost:8000"], "a URL needs the // after http:"),
        (["--retriever", "https://"], "not an http:// or https:// URL with a host"),
        (["--retriever", "http://h:port/s"], "URL with a host and a numeric port"),
    ],
)
def test_every_bad_flag_value_is_one_usage_line_and_exit_2(
    kb: Path, flags: list[str], says: str
) -> None:
    line = _one_usage_line(eval_run(kb, *flags))
    assert says in line, line
    assert not (kb / ".groove").exists()  # refused before any index work


def test_search_refuses_limit_0_with_the_eval_validator(kb: Path) -> None:
    done = invoke("search", "--kb-path", kb, "--model", "hash", "--limit", "0", "deploy")
    line = _one_usage_line(done, "search")
    assert line == (
        "groove search: error: --limit must be at least 1 (got 0) (see groove search --help)"
    )
    assert done.stdout == ""


def test_search_refuses_an_unknown_reranker_before_it_looks_for_an_index(kb: Path) -> None:
    done = invoke("search", "--kb-path", kb, "--model", "hash", "--reranker", "foo", "q")
    assert "unknown reranker 'foo'" in _one_usage_line(done, "search")


def test_a_bad_name_in_groove_toml_is_a_config_error_naming_the_file(kb: Path) -> None:
    config = kb / "groove.toml"
    config.write_text('reranker = "foo"\n', encoding="utf-8")
    done = eval_run(kb, "--no-history")
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        f"Error: invalid config {config.resolve()}: unknown reranker 'foo': use one of none, "
        "bge-v2-m3, jina-v2-ml, bge-base, or cross-encoder:<hub id or local path>"
    ]
    assert not (kb / ".groove").exists()  # before any index work
    config.write_text('model = "bogus"\n', encoding="utf-8")
    done = invoke("index", "--kb-path", kb)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(
        f"Error: invalid config {config.resolve()}: unknown embedding model 'bogus'"
    )


# --------------------------------------------------------------------------- odd numbers


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--k", "1,,5"], "--k: '1,,5' has an empty item"),
        (["--k", "1,5,"], "--k: '1,5,' has an empty item"),
        (["--k", "\u0663"], "--k: '\u0663' is not a whole number"),
        (["--k", "1_0"], "--k: '1_0' is not a whole number"),
        (["--limit", "\u0663"], "--limit takes a whole number of hits (got '\u0663')"),
        (["--metrics", "precision,,map"], "--metrics: 'precision,,map' has an empty item"),
        (["--threshold", "recall@5=0.1,,mrr=0.1"], "has an empty item"),
        (["--threshold", "\u0660.\u0660\u0665"], "is not a number"),
        (["--fail-under", "recall@5=\u0660.\u0665"], "recall@5: '\u0660.\u0665' is not a number"),
        (["--mmr-lambda", "\u0660.\u0665"], "--mmr-lambda must be a number in [0, 1]"),
        (["--significance", "\u0660.\u0660\u0665"], "--significance takes a significance level"),
        (["--retriever-timeout", "\u0663"], "--retriever-timeout takes a positive number"),
    ],
)
def test_empty_items_and_other_digits_are_refused(kb: Path, flags: list[str], says: str) -> None:
    line = _one_usage_line(eval_run(kb, *flags))
    assert says in line, line


def test_floors_step_takes_the_digits_0_to_9_only(kb: Path) -> None:
    done = invoke("floors", "--kb-path", kb, "--step", "0.\u0660\u0661")
    assert "--step takes a number in (0, 0.5]" in _one_usage_line(done, "floors")


def test_an_empty_item_in_the_config_floors_names_the_file(kb: Path) -> None:
    (kb / "groove.toml").write_text('[eval]\nfail_under = "recall@5=0.5,,mrr=0.1"\n', "utf-8")
    done = eval_run(kb, "--no-history")
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("Error: invalid config ") and "groove.toml" in done.stderr
    assert "has an empty item" in done.stderr


# --------------------------------------------------------------------------- repeated flags


def test_repeated_list_flags_merge(kb: Path) -> None:
    done = eval_run(
        kb, "--no-history", "--format", "json", "--k", "1", "--k", "3",
        "--metrics", "precision", "--metrics", "map,precision",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    aggregate = json.loads(done.stdout)["aggregate"]
    assert set(aggregate["recall_at_k"]) == {"1", "3"}
    assert "precision_at_k" in aggregate and "map" in aggregate


def test_help_says_which_flags_may_repeat() -> None:
    help_text = " ".join(invoke("eval", "--help").stdout.split())
    assert "(default: [eval].k_values); may repeat" in help_text
    assert "(default: [eval].metrics); may repeat" in help_text


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (
            ["--baseline", "2026", "--no-history"],
            "groove eval: error: --baseline needs the history: drop --no-history",
        ),
        (
            ["--baseline", "2026", "--no-diff"],
            "groove eval: error: --baseline needs a comparison: drop --no-diff",
        ),
    ],
)
def test_a_baseline_that_would_be_ignored_is_refused(kb: Path, flags: list[str], line: str) -> None:
    assert _one_usage_line(eval_run(kb, *flags)) == line


# --------------------------------------------------------------------------- missing index


def test_no_reindex_without_an_index_names_the_command_and_the_flag(kb: Path) -> None:
    done = eval_run(kb, "--no-reindex", "--no-history")
    assert done.returncode == 1, done.stderr
    command = f"groove index --kb-path {shlex.quote(str(kb))} --model hash"
    assert done.stderr == (
        f"Error: No index found at {kb / '.groove' / 'hash' / 'index.db'}. Run `{command}` "
        "first (or drop --no-reindex so the index is built).\n"
    )
    tuned = invoke("tune", "--kb-path", kb, "--model", "hash", "--no-reindex")
    assert tuned.returncode == 1
    assert tuned.stderr.endswith(
        f"Run `{command}` first (or drop --no-reindex so the index is built).\n"
    )


def test_search_without_an_index_names_the_command_with_its_flags(kb: Path, tmp_path: Path) -> None:
    index_dir = tmp_path / "cache dir"
    done = invoke("search", "--kb-path", kb, "--model", "hash", "--index-dir", index_dir, "deploy")
    assert done.returncode == 1
    command = shlex.join(
        ["groove", "index", "--kb-path", str(kb), "--model", "hash", "--index-dir", str(index_dir)]
    )
    assert done.stderr == (
        f"Error: No index found at {index_dir / 'index.db'}. Run `{command}` first.\n"
    )
    # the command named builds the index the search then opens
    built = invoke(*shlex.split(command)[1:])
    assert built.returncode == 0, built.stderr
    again = invoke("search", "--kb-path", kb, "--model", "hash", "--index-dir", index_dir, "deploy")
    assert again.returncode == 0 and "ops/deploys.md" in again.stdout


# --------------------------------------------------------------------------- floors' source


def test_the_floor_gate_names_groove_toml_when_the_floors_came_from_it(kb: Path) -> None:
    # a query whose expected note is not its answer: recall@1 and MRR stay under 0.99
    golden = GOLDEN + (
        '  - id: wrong\n    query: "how are tokens rotated"\n    expected:\n'
        '      - path: "ops/deploys.md"\n'
    )
    (kb / ".groove-eval.yml").write_text(golden, encoding="utf-8")
    config = kb / "groove.toml"
    config.write_text('[eval]\nfail_under = "recall@1=0.99"\n', encoding="utf-8")
    done = eval_run(kb, "--no-history")
    assert done.returncode == 1, done.stderr
    assert f"because [eval].fail_under in {config.resolve()} sets the floors" in done.stderr
    flagged = eval_run(kb, "--no-history", "--fail-under", "mrr=0.99")
    assert flagged.returncode == 1
    assert "because --fail-under on the command line sets the floors (mrr=0.99)" in (flagged.stderr)


def test_groove_alone_shows_the_commands() -> None:
    done = invoke()
    assert done.returncode == 2
    assert done.stderr.startswith("usage: groove ") and "eval" in done.stderr
    assert "error:" not in done.stderr
