"""Command-line options and ini keys of the pytest plugin, and their validation.

Every ``--groove-*`` option has an ini twin (``groove_*``) so a project can set it once
in ``pytest.ini`` / ``pyproject.toml`` / ``tox.ini``; the command line wins over the
ini file, and both win over ``groove.toml``.  Values are validated when they are read:
a bad command-line value fails at argument parsing (argparse ``type=``), a bad ini
value raises :class:`pytest.UsageError` naming the key.  Either way pytest exits with
status 4 and one line, never a traceback.

The options themselves -- names, checks, help -- are the shared table in
:mod:`pytest_groove.settings.options`; this module only spells them the pytest way and reads
them back.  Import-light on purpose: it is imported by ``pytest_addoption`` in every
pytest run where the plugin is installed, so it needs nothing beyond the standard
library and pytest.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import argparse
import difflib
import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import pytest

from pytest_groove.settings.options import (
    GATE_OPTIONS,
    LIST_KINDS,
    OPTIONS,
    OPTIONS_BY_NAME,
    Option,
    RunOptions,
    contradiction,
    read_run_options,
)

__all__ = [
    "KB_KEY",
    "PLUGIN_OPTIONS",
    "PluginOptions",
    "add_options",
    "check_ini_keys",
    "read_options",
]

GROUP = "groove"
#: ini key that switches the plugin on
KB_KEY = "groove_kb"
#: the golden file's default name (``evaluation.golden.file.DEFAULT_GOLDEN_NAME``, not
#: imported: this module stays light); a path to one typed on the command line implies
#: its folder as the knowledge base
GOLDEN_FILE_NAME = ".groove-eval.yml"

#: the table options that exist under pytest (as ``--groove-<name>`` and/or ``groove_<name>``)
PLUGIN_OPTIONS: tuple[Option, ...] = tuple(o for o in OPTIONS if o.plugin_flag or o.ini)


def _dest(option: Option) -> str:
    """The pytest option's dest: ``groove_<name>`` (the ini key's spelling)."""
    return option.ini_key


def _argparse_type(option: Option) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return option.parse(option.pytest_flag, text)
        except ValueError as exc:
            # argparse prints "argument --groove-k: <message>"; pytest exits 4
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = _dest(option)
    return convert


def add_options(parser: pytest.Parser) -> None:
    """Register the ``groove`` option group and the ini keys, from the one table."""
    group = parser.getgroup(GROUP, "pytest-groove: retrieval quality of a knowledge base")
    for option in PLUGIN_OPTIONS:
        if option.plugin_flag:
            if option.kind == "flag":
                group.addoption(
                    option.pytest_flag,
                    action="store_true",
                    default=None,
                    dest=_dest(option),
                    help=option.help,
                )
            elif option.kind in LIST_KINDS:
                # may repeat: --groove-k 1,5 --groove-k 10 is --groove-k 1,5,10
                group.addoption(
                    option.pytest_flag,
                    dest=_dest(option),
                    default=None,
                    action="extend",
                    metavar=option.metavar,
                    type=_argparse_type(option),
                    help=f"{option.help}; may repeat",
                )
            else:
                group.addoption(
                    option.pytest_flag,
                    dest=_dest(option),
                    default=None,
                    # every --groove-kb is kept, so a second knowledge base is refused
                    # rather than silently dropped (one KB per session)
                    action="append" if option.name == "kb" else "store",
                    metavar=option.metavar,
                    type=_argparse_type(option),
                    help=option.help,
                )
        if option.ini:
            ini_type: Literal["bool", "string"] = "bool" if option.kind == "flag" else "string"
            parser.addini(option.ini_key, option.help, type=ini_type, default=None)


# --------------------------------------------------------------------------- resolution


@dataclass(frozen=True)
class PluginOptions:
    """The plugin's effective options (command line, else ini).

    Paths are absolute: a command-line path is relative to the directory pytest was
    started in, an ini path to the directory of the ini file.
    """

    kb: Path
    #: True when --groove-kb was given on the command line (not only in the ini file)
    kb_from_cli: bool
    run: RunOptions


def _ini_base(config: pytest.Config) -> Path:
    inipath = config.inipath
    return inipath.parent if inipath is not None else config.rootpath


def _unset(raw: object) -> bool:
    """An ini value that counts as not given.

    pytest 7.4 answers ``[]`` for a key declared with ``default=None`` that the ini
    file does not set; a blank string is not a value either.
    """
    return raw is None or raw == [] or (isinstance(raw, str) and not raw.strip())


def _ini_value(config: pytest.Config, option: Option) -> Any:
    """The ini value of ``option`` parsed and validated, None when unset."""
    if not option.ini:
        return None
    where = config.inipath or "the ini file"
    try:
        raw = config.getini(option.ini_key)
    except (ValueError, pytest.UsageError) as exc:
        # pytest reads a bool key itself: "invalid truth value 'maybe'", naming neither
        # the key nor the file (a ValueError before pytest 9, a UsageError since)
        got = str(exc).removeprefix("invalid truth value ")
        raise pytest.UsageError(
            f"invalid {option.ini_key} in {where}: {option.ini_key} takes true or false (got {got})"
        ) from None
    if _unset(raw):
        return None
    if option.kind == "flag":
        return bool(raw)
    try:
        value = option.parse(option.ini_key, str(raw))
    except ValueError as exc:
        raise pytest.UsageError(f"invalid {option.ini_key} in {where}: {exc}") from None
    if option.kind == "path":
        return _ini_base(config) / value
    return value


def _cli_value(config: pytest.Config, option: Option) -> Any:
    if not option.plugin_flag:
        return None
    value = config.getoption(_dest(option), default=None)
    if option.name == "kb" and isinstance(value, list):  # kept per occurrence
        here = config.invocation_params.dir
        given = list(dict.fromkeys(os.path.normpath(here / v) for v in value))
        if len(given) > 1:
            raise pytest.UsageError(
                f"{option.pytest_flag} names {len(given)} knowledge bases ({', '.join(given)}); "
                "a session evaluates one: run pytest once per knowledge base"
            )
        value = value[-1]
    if option.kind == "path" and value is not None:
        return config.invocation_params.dir / value
    return value


def _lookup(config: pytest.Config, option: Option) -> Any:
    value = _cli_value(config, option)
    return value if value is not None else _ini_value(config, option)


def _ini_origins(config: pytest.Config) -> tuple[tuple[str, str], ...]:
    """The gate options read from the ini file, with its path (the loosening warning)."""
    where = str(config.inipath or "the ini file")
    return tuple(
        (option.name, where)
        for option in PLUGIN_OPTIONS
        if option.name in GATE_OPTIONS
        and _cli_value(config, option) is None
        and _ini_value(config, option) is not None
    )


def read_options(config: pytest.Config) -> PluginOptions | None:
    """The plugin's options, or None when the plugin should stay inert.

    The plugin is switched on by ``--groove-kb`` or the ``groove_kb`` ini key.  Any
    other ``--groove-*`` option on the command line without a knowledge base is a
    usage error (it would otherwise be silently ignored); other ini keys without
    ``groove_kb`` are fine -- they configure runs that pass ``--groove-kb``.
    """
    check_ini_keys(config)
    kb_option = OPTIONS_BY_NAME["kb"]
    kb_cli = _cli_value(config, kb_option)
    kb = kb_cli if kb_cli is not None else _ini_value(config, kb_option)
    if kb is None:
        kb = _kb_of_named_golden(config)
    if kb is None:
        for option in PLUGIN_OPTIONS:
            if option.plugin_flag and config.getoption(_dest(option), default=None) is not None:
                raise pytest.UsageError(
                    f"{option.pytest_flag} needs a knowledge base: pass --groove-kb DIR "
                    f"(or set {KB_KEY} in the pytest ini file)"
                )
        return None

    run = read_run_options(lambda option: _lookup(config, option))
    run = replace(run, origins=_ini_origins(config))
    refusal = contradiction(run, lambda name: _spelled(config, OPTIONS_BY_NAME[name]))
    if refusal is not None:
        raise pytest.UsageError(refusal)
    _check_report_extras(config, run)
    return PluginOptions(
        kb=Path(kb), kb_from_cli=kb_cli is not None and _typed(config, kb_option), run=run
    )


def _kb_of_named_golden(config: pytest.Config) -> str | None:
    """The folder of a golden file the command line names by path or node id
    (``pytest KB/.groove-eval.yml::ship-days``: an IDE's "run this test"), when no
    knowledge base is configured; None when it names none."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return None
    base = config.invocation_params.dir
    for arg in config.args:
        path = arg.split("::", 1)[0]
        if os.path.basename(path) != GOLDEN_FILE_NAME:
            continue
        try:
            if (base / path).is_file():
                return os.path.dirname(path) or os.curdir
        except OSError:
            continue
    return None


def _spelled(config: pytest.Config, option: Option) -> str:
    """``option`` as this session was given it: its flag, else its ini key and file."""
    if _cli_value(config, option) is not None:
        return option.pytest_flag
    return f"{option.ini_key} in {config.inipath or 'the ini file'}"


def _typed(config: pytest.Config, option: Option) -> bool:
    """Whether ``option`` was typed on the command line itself.

    ``addopts`` and ``PYTEST_ADDOPTS`` reach :meth:`pytest.Config.getoption` like typed
    arguments, but they are a project's standing configuration, as the ini key is: a
    plain ``pytest`` under them must still run the project's tests.
    """
    flag = option.pytest_flag
    return any(
        isinstance(arg, str) and (arg == flag or arg.startswith(flag + "="))
        for arg in config.invocation_params.args
    )


def _check_report_extras(config: pytest.Config, run: RunOptions) -> None:
    """A report that needs an extra (the HTML report, ``plots``): say so now, before
    any search, naming the flag or the ini key that asked for it."""
    from pytest_groove.errors import GrooveError
    from pytest_groove.evaluation.reports.formats import check_report_extras

    def name(option_name: str) -> str:
        option = OPTIONS_BY_NAME[option_name]
        return option.pytest_flag if _cli_value(config, option) is not None else option.ini_key

    try:
        check_report_extras(run, name)
    except GrooveError as exc:
        raise pytest.UsageError(exc.message_for("pytest")) from None


# --------------------------------------------------------------------------- ini typos

#: every ini key the plugin reads
KNOWN_INI_KEYS: frozenset[str] = frozenset(o.ini_key for o in PLUGIN_OPTIONS if o.ini)


def _ini_file_keys(config: pytest.Config) -> Iterable[str]:
    """The keys the ini file sets (pytest 9 keeps them in ``_inicfg``; older ``inicfg``)."""
    raw = getattr(config, "_inicfg", None)
    if raw is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated in pytest 9, the only way before
            raw = getattr(config, "inicfg", None) or {}
    return list(raw)


def check_ini_keys(config: pytest.Config) -> None:
    """An unknown ``groove_*`` key in the ini file is a usage error naming the closest key.

    ``groove_fail_on_regresion = true`` would otherwise turn the gate off with only
    pytest's generic "unknown config option" warning.
    """
    unknown = sorted(
        key
        for key in _ini_file_keys(config)
        if key.lower().startswith("groove_") and key not in KNOWN_INI_KEYS
    )
    if not unknown:
        return
    key = unknown[0]
    # compared without the shared prefix, which would make every key look alike
    suffixes = sorted(k.removeprefix("groove_") for k in KNOWN_INI_KEYS)
    close = difflib.get_close_matches(key.lower().removeprefix("groove_"), suffixes, 1, 0.6)
    hint = f"did you mean groove_{close[0]}?" if close else "see docs/pytest-plugin.md for the keys"
    where = config.inipath or "the ini file"
    raise pytest.UsageError(f"unknown ini key {key} in {where}: {hint}")
