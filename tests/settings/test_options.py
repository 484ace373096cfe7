"""The one option table: both doors derive their options from it, every flag has help."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_groove.cli.args import run_options
from pytest_groove.cli.commands import build_parser
from pytest_groove.errors import flag, spell_flags
from pytest_groove.plugin import options as plugin_options
from pytest_groove.settings.options import OPTIONS, OPTIONS_BY_NAME, RunOptions, settings_for


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(cast(dict[str, argparse.ArgumentParser], action.choices))
    raise AssertionError("no subcommands")


@pytest.mark.parametrize("command", sorted(_subparsers()))
def test_every_cli_flag_has_help_text(command: str) -> None:
    parser = _subparsers()[command]
    bare = [
        action.option_strings or [action.dest]
        for action in parser._actions
        if not (action.help or "").strip()
    ]
    assert not bare, f"`groove {command}` arguments without help: {bare}"


def test_every_table_option_has_help_and_a_spelling() -> None:
    for option in OPTIONS:
        assert option.help.strip(), option.name
        assert option.plugin_flag or option.ini or option.cli, option.name


def test_run_options_has_one_field_per_table_option() -> None:
    """Adding an option to the table without a field (or the reverse) fails here."""
    names = {field.name for field in fields(RunOptions)} - {"origins"}
    assert names == {option.dest for option in OPTIONS} - {"kb"}


def test_the_cli_takes_the_table_spelling_of_shared_options() -> None:
    eval_parser = _subparsers()["eval"]
    flags = {s for action in eval_parser._actions for s in action.option_strings}
    shared = {o.cli_flag for o in OPTIONS if o.cli}
    assert shared - flags == set(), "groove eval should take every shared option"


def test_cli_values_read_into_run_options() -> None:
    args = build_parser().parse_args(
        ["eval", "--kb-path", "kb", "--k", "1,5", "--k", "10", "--mmr-lambda", "0.25",
         "--golden", "g.yml", "--no-diff"]
    )  # fmt: skip
    run = run_options(args)
    assert run.k == (1, 5, 10)
    assert run.mmr_lambda == 0.25
    assert run.golden == Path("g.yml")
    assert run.no_diff is True
    assert run.no_history is False
    assert run.json is None  # a plugin-only option is "not given" on the CLI


@pytest.mark.parametrize("name", ["mmr-lambda", "limit", "k", "mmr"])
def test_both_doors_reject_a_bad_value_with_the_same_check(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    option = OPTIONS_BY_NAME[name]
    bad = "nope"
    with pytest.raises(ValueError) as plugin_error:
        option.parse(option.pytest_flag, bad)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["eval", "--kb-path", "kb", option.cli_flag, bad])
    cli_message = capsys.readouterr().err
    assert str(plugin_error.value).replace(option.pytest_flag, option.cli_flag) in cli_message


def test_every_shared_flag_is_spelled_for_each_door() -> None:
    for option in OPTIONS:
        if option.cli and option.plugin_flag:
            message = f"use {flag(option.name)} here"
            assert spell_flags(message, "cli") == f"use {option.cli_flag} here"
            assert spell_flags(message, "pytest") == f"use {option.pytest_flag} here"


class _IniOnlyConfig:
    """What ``_ini_value`` reads from a config: ``getini`` answering as pytest 7.4 does."""

    inipath = None
    rootpath = Path("/nowhere")

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def getini(self, name: str) -> Any:
        return self.answer


@pytest.mark.parametrize("answer", [None, [], "", "   "])
@pytest.mark.parametrize("name", ["kb", "k", "no-history", "mmr"])
def test_an_unset_ini_key_reads_as_not_given(answer: Any, name: str) -> None:
    """pytest 7.4 answers ``[]`` for an unset key declared with ``default=None``."""
    config = cast(pytest.Config, _IniOnlyConfig(answer))
    assert plugin_options._ini_value(config, OPTIONS_BY_NAME[name]) is None


def test_settings_for_applies_the_run_options_over_groove_toml(tmp_path: Path) -> None:
    (tmp_path / "groove.toml").write_text('model = "e5-small"\n', encoding="utf-8")
    assert settings_for(tmp_path, RunOptions()).index.model == "e5-small"
    chosen = settings_for(tmp_path, RunOptions(model="hash", mmr=True))
    assert (chosen.index.model, chosen.search.mmr.enabled) == ("hash", True)
