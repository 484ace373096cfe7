"""Hostile input, round two (issue 22): no traceback, no run lost.

Four classes of input, each generated (``hostile_inputs.py``) and sent through the
real doors -- ``groove eval`` in-process (``pytest_groove.cli.main``) and
``pytest --groove-kb`` (pytester):

- numbers Python refuses to print (integers of more than 4,300 digits in any
  spelling, floats past the range) in the golden file, as values and as keys, and
  in the KB's ``groove.toml`` and a ``--config`` file;
- YAML tags on values that are not of that type;
- expected paths, ``index_dir`` and ``[eval].golden`` the OS would refuse;
- histories whose keys repeat (``runs`` twice, keys inside a run): every run kept,
  a backup of the bytes, a warning.

Each input ends in exit 0, or in one ``Error:`` line (exit 1 or 2) / one ``ERROR:``
line (pytest, exit 4); never a traceback.  The default run takes a small sample;
``-m slow`` runs the campaign (over 10,000 cases).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groove.evaluation.history.file import HISTORY_FILE_NAME, read_history, save_history
from tests.helpers.cli_invoke import Groove
from tests.helpers.hostile_inputs import (
    CONFIG_PATH_SLOTS,
    CONFIG_VALUE_SLOTS,
    GOLDEN_VALUE_SLOTS,
    fill,
    golden_with,
    os_refused_path,
    repeated_history,
    tagged_node,
    toml_long_integer,
    toml_string,
    yaml_long_integer,
    yaml_odd_float,
)

DOC = "## Release schedule\n\nReleases leave on Tuesday and Thursday mornings.\n"
GOLDEN = "queries:\n  - query: release schedule\n    expected:\n      - path: a.md\n"

#: examples per class: the default run's sample and the slow campaign's
FAST = 8
SLOW = {"golden-number": 2500, "golden-tag": 2500, "config": 2500, "path": 1500}
SLOW_HISTORY = 800
SLOW_HISTORY_CLI = 250


@dataclass
class Outcome:
    code: int
    out: str
    err: str


@dataclass
class Site:
    """A KB with its index built, a golden file and a config file beside it."""

    root: Path
    kb: Path
    golden: Path
    config: Path
    groove: Groove

    def eval(self, *args: str) -> Outcome:
        done = self.groove("eval", "--kb-path", self.kb, "--model", "hash", *args)
        return Outcome(*done)

    def reset(self) -> None:
        """Back to the valid golden file, no groove.toml, no history or backups."""
        self.golden.write_text(GOLDEN, encoding="utf-8")
        for path in self.kb.iterdir():
            if path.name == "groove.toml" or path.name.startswith(HISTORY_FILE_NAME):
                path.unlink()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, groove: Groove) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("hostile")
    kb = root / "kb"
    kb.mkdir()
    (kb / "a.md").write_text(DOC, encoding="utf-8")
    here = Site(root, kb, root / "golden.yml", root / "outside.toml", groove)
    here.reset()
    first = here.eval("--golden", str(here.golden), "--no-history")
    assert first.code == 0, first.err
    yield here
    shutil.rmtree(root, ignore_errors=True)


def assert_one_line(outcome: Outcome, accepted: tuple[int, ...] = (0,)) -> None:
    """Exit 0 (``accepted``), or one ``Error:`` line and exit 1 or 2; no traceback."""
    assert "Traceback" not in outcome.out + outcome.err
    if outcome.code in accepted:
        return
    assert outcome.code in (1, 2), (outcome.code, outcome.err[:500])
    lines = outcome.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), outcome.err[:500]
    assert len(lines[0]) < 1000, lines[0][:500]


def _examples(count: int) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return settings(
        max_examples=count,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


# --------------------------------------------------------------------------- the checks


def golden_case(site: Site, text: str) -> None:
    site.golden.write_text(text, encoding="utf-8")
    outcome = site.eval("--golden", str(site.golden), "--no-history")
    assert_one_line(outcome)


def config_case(site: Site, text: str, outside: bool) -> None:
    site.reset()
    if outside:
        site.config.write_text(text, encoding="utf-8")
        args: tuple[str, ...] = ("--config", str(site.config))
    else:
        (site.kb / "groove.toml").write_text(text, encoding="utf-8")
        args = ()
    outcome = site.eval("--golden", str(site.golden), "--no-history", *args)
    (site.kb / "groove.toml").unlink(missing_ok=True)
    # none of these configs is valid (every value is out of shape or refused)
    assert_one_line(outcome, accepted=())


def _run_objects(site: Site, count: int) -> list[dict[str, Any]]:
    """``count`` real stored runs (their JSON objects), newest first."""
    site.reset()
    for _ in range(count):
        assert site.eval("--golden", str(site.golden)).code == 0
    doc = json.loads((site.kb / HISTORY_FILE_NAME).read_bytes())
    site.reset()
    runs: list[dict[str, Any]] = doc["runs"]
    return runs


@pytest.fixture(scope="module")
def stored_runs(site: Site) -> list[dict[str, Any]]:
    return _run_objects(site, 4)


def history_library_case(site: Site, data: bytes, stamps: set[str]) -> None:
    """Read, then save one more run: every run survives, the bytes go to one backup."""
    parsed = read_history(data)
    assert parsed.damaged
    assert {_stamp(run.timestamp) for run in parsed.runs} == stamps
    assert len(parsed.runs) == len(stamps)
    folder = site.root / "library"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    path = folder / HISTORY_FILE_NAME
    path.write_bytes(data)
    newest = max(run.timestamp for run in parsed.runs)
    new_run = replace(parsed.runs[0], timestamp=newest + timedelta(seconds=1), frozen=False)
    save_history(path, parsed.runs, new_run, history_size=20)
    kept = {_stamp(run.timestamp) for run in read_history(path.read_bytes()).runs}
    assert kept == stamps | {_stamp(new_run.timestamp)}
    backups = [p.read_bytes() for p in folder.iterdir() if ".bak-" in p.name]
    assert backups == [data]


def history_cli_case(site: Site, data: bytes, stamps: set[str]) -> None:
    """A damaged history through ``groove eval``: warned, backed up, every run kept."""
    site.reset()
    history = site.kb / HISTORY_FILE_NAME
    history.write_bytes(data)
    outcome = site.eval("--golden", str(site.golden))
    assert outcome.code == 0, outcome.err
    assert "Traceback" not in outcome.out + outcome.err
    assert "written twice" in outcome.err
    kept = {_stamp(run.timestamp) for run in read_history(history.read_bytes()).runs}
    assert stamps < kept and len(kept) == len(stamps) + 1  # every old run and the new one
    backups = [p for p in site.kb.iterdir() if p.name.startswith(HISTORY_FILE_NAME + ".bak-")]
    assert [p.read_bytes() for p in backups] == [data]


def _stamp(moment: Any) -> str:
    from pytest_groove.evaluation.runs.record import format_timestamp

    return format_timestamp(moment)


# --------------------------------------------------------------------------- strategies

LONG_NUMBERS = st.one_of(yaml_long_integer(), yaml_odd_float())
GOLDEN_NUMBERS = golden_with(LONG_NUMBERS)
GOLDEN_TAGS = golden_with(tagged_node())
GOLDEN_PATHS = st.builds(
    lambda path: fill(GOLDEN_VALUE_SLOTS[2], json.dumps(path)), os_refused_path()
)
CONFIG_NUMBERS = st.tuples(
    st.sampled_from(CONFIG_VALUE_SLOTS).flatmap(
        lambda slot: toml_long_integer().map(lambda value: fill(slot, value))
    ),
    st.booleans(),
)
CONFIG_PATHS = st.tuples(
    st.sampled_from(CONFIG_PATH_SLOTS).flatmap(
        lambda slot: os_refused_path().map(lambda path: fill(slot, toml_string(path)))
    ),
    st.booleans(),
)


def _golden_test(strategy: st.SearchStrategy[str], count: int) -> Callable[[Site], None]:
    @_examples(count)
    @given(text=strategy)
    def check(site: Site, text: str) -> None:
        golden_case(site, text)

    return check


def _config_test(
    strategy: st.SearchStrategy[tuple[str, bool]], count: int
) -> Callable[[Site], None]:
    @_examples(count)
    @given(case=strategy)
    def check(site: Site, case: tuple[str, bool]) -> None:
        config_case(site, *case)

    return check


def _history_test(
    count: int, case: Callable[[Site, bytes, set[str]], None]
) -> Callable[[Site, list[dict[str, Any]]], None]:
    @_examples(count)
    @given(data=st.data())
    def check(site: Site, stored_runs: list[dict[str, Any]], data: st.DataObject) -> None:
        chosen = data.draw(
            st.lists(st.sampled_from(range(len(stored_runs))), min_size=1, unique=True)
        )
        raw, stamps = data.draw(repeated_history([stored_runs[i] for i in sorted(chosen)]))
        case(site, raw, stamps)

    return check


# --------------------------------------------------------------------------- default run

test_golden_numbers_sample = _golden_test(GOLDEN_NUMBERS, FAST)
test_golden_tags_sample = _golden_test(GOLDEN_TAGS, FAST)
test_golden_paths_sample = _golden_test(GOLDEN_PATHS, FAST)
test_config_numbers_sample = _config_test(CONFIG_NUMBERS, FAST)
test_config_paths_sample = _config_test(CONFIG_PATHS, FAST)
test_repeated_history_keys_sample = _history_test(FAST, history_library_case)
test_repeated_history_keys_through_eval_sample = _history_test(2, history_cli_case)


# --------------------------------------------------------------------------- slow campaign

test_golden_numbers_campaign = pytest.mark.slow(_golden_test(GOLDEN_NUMBERS, SLOW["golden-number"]))
test_golden_tags_campaign = pytest.mark.slow(_golden_test(GOLDEN_TAGS, SLOW["golden-tag"]))
test_golden_paths_campaign = pytest.mark.slow(_golden_test(GOLDEN_PATHS, SLOW["path"] // 2))
test_config_numbers_campaign = pytest.mark.slow(_config_test(CONFIG_NUMBERS, SLOW["config"]))
test_config_paths_campaign = pytest.mark.slow(_config_test(CONFIG_PATHS, SLOW["path"] // 2))
test_repeated_history_keys_campaign = pytest.mark.slow(
    _history_test(SLOW_HISTORY, history_library_case)
)
test_repeated_history_keys_through_eval_campaign = pytest.mark.slow(
    _history_test(SLOW_HISTORY_CLI, history_cli_case)
)


# --------------------------------------------------------------------------- known cases


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("queries:\n  - query: 0x" + "f" * 4000 + "\n    expected: [{path: a.md}]\n",
         "queries[0].query: invalid type: an integer of about 4,817 digits, expected a string"),
        ("queries:\n  - query: q\n    expected: [{path: a.md}]\n? 0b1" + "0" * 15000 + "\n: 1\n",
         "unknown field `an integer of about 4,516 digits`"),
        ("queries:\n  - query: " + "9" * 5000 + "\n    expected: [{path: a.md}]\n",
         "an integer of more than 4,300 digits, which cannot be used as a number; write a "
         "shorter number, or put it in quotes to make it text) at line 2"),
        ("queries:\n  - query: !!bool maybe\n    expected: [{path: a.md}]\n",
         "cannot read `maybe` (not a valid !!bool value; correct it, or remove the tag"),
        ("queries:\n  - query: !!timestamp soon\n    expected: [{path: a.md}]\n",
         "not a valid !!timestamp value"),
        ("queries:\n  - query: !!int ''\n    expected: [{path: a.md}]\n", "!!int"),
        ("queries: !!map text\n", "(a !!map tag on something that is not a mapping"),
        ("queries: !!seq text\n", "(a !!seq tag on something that is not a list"),
        ("queries:\n  - query: q\n    expected: [{path: " + "n" * 300 + ".md}]\n",
         "has a name of 303 bytes, over the 255-byte limit"),
        ("queries:\n  - query: q\n    expected: [{path: " + "d/" * 2100 + "a.md}]\n",
         "is 4,204 bytes long, over the 4,096-byte path limit"),
    ],
)  # fmt: skip
def test_known_cases_name_the_problem(site: Site, text: str, wanted: str) -> None:
    site.golden.write_text(text, encoding="utf-8")
    outcome = site.eval("--golden", str(site.golden), "--no-history")
    assert_one_line(outcome, accepted=())
    assert wanted in outcome.err
    assert str(site.golden) in outcome.err


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("[eval]\nhistory_size = 0x" + "f" * 4000 + "\n",
         "eval.history_size must be a whole number in [1, 10000] (got <an integer of about"),
        ("[search.fusion]\nrrf_k = 0o" + "7" * 5000 + "\n",
         "rrf_k must be a number in [1, 1e+06] (got <an integer of about"),
        ("model = " + "9" * 4400 + "\n",
         "not valid TOML (an integer of more than 4,300 digits"),
        ("index_dir = \"a\\u0000b\"\n", "index_dir 'a\\x00b' contains a NUL character"),
        ("[eval]\ngolden = \"" + "g" * 300 + "\"\n", "over the 255-byte limit"),
        ("x = " + "[" * 200_000 + "\n", "not valid TOML (nested too deeply)"),
        ("[eval]\nk_values = [1, 0x" + "f" * 4000 + "]\n",
         "every k must be at most 1,000,000,000 (got an integer of about 4,817 digits)"),
    ],
)  # fmt: skip
def test_known_config_cases_name_the_key(site: Site, text: str, wanted: str) -> None:
    site.reset()
    (site.kb / "groove.toml").write_text(text, encoding="utf-8")
    outcome = site.eval("--golden", str(site.golden), "--no-history")
    (site.kb / "groove.toml").unlink()
    assert_one_line(outcome, accepted=())
    assert wanted in outcome.err and "groove.toml" in outcome.err


def test_a_runs_key_written_twice_keeps_both_lists_through_a_save(
    site: Site, stored_runs: list[dict[str, Any]]
) -> None:
    older, newer = stored_runs[2:], stored_runs[:2]
    data = (
        '{"format": 2,\n "runs": ' + json.dumps(newer) + ',\n "runs": ' + json.dumps(older) + "}\n"
    ).encode()
    before = read_history(data)
    assert len(before.runs) == 4 and before.duplicated == ("top level: runs",)
    stamps = {str(run["timestamp"]) for run in stored_runs}
    history_cli_case(site, data, stamps)
    # the save rewrote one list, so the next run reads it undamaged and keeps all five
    again = site.eval("--golden", str(site.golden))
    assert again.code == 0 and "written twice" not in again.err
    history = site.kb / HISTORY_FILE_NAME
    assert len(read_history(history.read_bytes()).runs) == 6


# --------------------------------------------------------------------------- pytest door


@pytest.fixture
def door(pytester: pytest.Pytester) -> pytest.Pytester:
    kb = pytester.path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text(DOC, encoding="utf-8")
    return pytester


PYTEST_CASES = [
    ("golden", "queries:\n  - query: 0x" + "f" * 4000 + "\n    expected: [{path: a.md}]\n"),
    ("golden", "queries:\n  - query: q\n    expected: [{path: a.md}]\n? 0" + "7" * 5000 + "\n:\n"),
    ("golden", "queries:\n  - query: !!bool maybe\n    expected: [{path: a.md}]\n"),
    ("golden", "queries:\n  - query: !!map text\n    expected: [{path: a.md}]\n"),
    ("golden", "queries:\n  - query: q\n    expected: [{path: " + "n" * 300 + "}]\n"),
    ("config", "[search.fusion]\nrrf_k = 0x" + "f" * 4000 + "\n"),
    ("config", "model = " + "9" * 4400 + "\n"),
    ("config", 'index_dir = "' + "i" * 300 + '"\n'),
    ("config", '[eval]\ngolden = "a\\u0000.yml"\n'),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "text"), PYTEST_CASES)
def test_pytest_door_gives_one_usage_error_line(
    door: pytest.Pytester, kind: str, text: str
) -> None:
    kb = door.path / "kb"
    (kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    if kind == "golden":
        (kb / ".groove-eval.yml").write_text(text, encoding="utf-8")
    else:
        (kb / "groove.toml").write_text(text, encoding="utf-8")
    result = door.runpytest("--groove-kb", "kb", "--groove-model", "hash")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output[-2000:]
    assert "Traceback" not in output and "INTERNALERROR" not in output
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1, output[-2000:]
    assert not (kb / HISTORY_FILE_NAME).exists()


def test_pytest_door_keeps_every_run_of_a_repeated_runs_key(
    door: pytest.Pytester, site: Site, stored_runs: list[dict[str, Any]]
) -> None:
    kb = door.path / "kb"
    (kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    history = kb / HISTORY_FILE_NAME
    data = (
        '{"format":2,"runs":'
        + json.dumps(stored_runs[:1])
        + ',"runs":'
        + json.dumps(stored_runs[1:])
        + "}"
    ).encode()
    history.write_bytes(data)
    result = door.runpytest("--groove-kb", "kb", "--groove-model", "hash")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK, output[-2000:]
    assert "written twice" in output and "Traceback" not in output
    assert len(read_history(history.read_bytes()).runs) == len(stored_runs) + 1
    backups = [p for p in kb.iterdir() if p.name.startswith(HISTORY_FILE_NAME + ".bak-")]
    assert [p.read_bytes() for p in backups] == [data]
    assert os.path.exists(history)


def test_a_stored_number_past_the_float_range_skips_that_run_only(
    stored_runs: list[dict[str, Any]],
) -> None:
    runs = [json.dumps(run, separators=(",", ":")) for run in stored_runs]
    # 1 followed by 400 zeros: printable, but float() overflows
    runs[1] = runs[1].replace('"mrr":1.0', '"mrr":1' + "0" * 400, 1)
    assert '"mrr":1' + "0" * 400 in runs[1]
    data = ('{"format":2,"runs":[' + ",".join(runs) + "]}").encode()
    parsed = read_history(data)
    assert len(parsed.runs) == len(stored_runs) - 1
    assert parsed.skipped and parsed.skipped[0].startswith("runs[1]")
