"""Command-line options and ini keys of the pytest plugin, and their validation.

Every ``--groove-*`` option has an ini twin (``groove_*``) so a project can set it once
in ``pytest.ini`` / ``pyproject.toml`` / ``tox.ini``; the command line wins over the
ini file, and both win over ``groove.toml``.  Values are validated when they are read:
a bad command-line value fails at argument parsing (argparse ``type=``), a bad ini
value raises :class:`pytest.UsageError` naming the key.  Either way pytest exits with
status 4 and one line, never a traceback.

Import-light on purpose: this module is imported by ``pytest_addoption`` in every
pytest run where the plugin is installed, so it needs nothing beyond the standard
library and pytest.  The validators import :mod:`pytest_groove.config` (stdlib only)
lazily, when a value is actually given.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

GROUP = "groove"
#: ini key / dest that switches the plugin on
KB_KEY = "groove_kb"

Kind = Literal["path", "text", "klist", "limit", "tristate", "unit", "flag"]


@dataclass(frozen=True)
class OptionSpec:
    """One plugin option: its flag, its ini key (if any) and how values are checked."""

    flag: str | None
    ini: str | None
    dest: str
    kind: Kind
    metavar: str | None
    help: str


SPECS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "--groove-kb",
        KB_KEY,
        "groove_kb",
        "path",
        "DIR",
        "evaluate the Markdown knowledge base in DIR: one test per golden query "
        "(switches the plugin on; without it pytest-groove does nothing)",
    ),
    OptionSpec(
        "--groove-golden",
        "groove_golden",
        "groove_golden",
        "path",
        "FILE",
        "golden file (default: [eval].golden in groove.toml, else <kb>/.groove-eval.yml)",
    ),
    OptionSpec(
        "--groove-config",
        "groove_config",
        "groove_config",
        "path",
        "FILE",
        "groove.toml to read (default: <kb>/groove.toml when it exists)",
    ),
    OptionSpec(
        "--groove-k",
        "groove_k",
        "groove_k",
        "klist",
        "LIST",
        "cut-offs for recall@k and nDCG@k, e.g. 1,5,10 (default: [eval].k_values)",
    ),
    OptionSpec(
        "--groove-limit",
        "groove_limit",
        "groove_limit",
        "limit",
        "N",
        "hits fetched per query (default: the largest k; capped at 1000)",
    ),
    OptionSpec(
        "--groove-model",
        "groove_model",
        "groove_model",
        "text",
        "NAME",
        "embedding model, e.g. e5-small (default) or hash (fast, lexical, not semantic)",
    ),
    OptionSpec(
        "--groove-reranker",
        "groove_reranker",
        "groove_reranker",
        "text",
        "NAME",
        "reranker stage (default: the config's, else none)",
    ),
    OptionSpec(
        "--groove-mmr",
        "groove_mmr",
        "groove_mmr",
        "tristate",
        "BOOL",
        "turn maximal marginal relevance re-ranking on or off (true/false)",
    ),
    OptionSpec(
        "--groove-mmr-lambda",
        "groove_mmr_lambda",
        "groove_mmr_lambda",
        "unit",
        "X",
        "MMR relevance/diversity balance in [0, 1]",
    ),
    OptionSpec(
        "--groove-mmr-same-doc-penalty",
        "groove_mmr_same_doc_penalty",
        "groove_mmr_same_doc_penalty",
        "unit",
        "X",
        "extra MMR penalty for a second chunk of the same document, in [0, 1]",
    ),
    OptionSpec(
        "--groove-parent-retriever",
        "groove_parent_retriever",
        "groove_parent_retriever",
        "tristate",
        "BOOL",
        "turn the parent retriever (neighbouring / whole-document context) on or off",
    ),
    OptionSpec(
        "--groove-index-dir",
        "groove_index_dir",
        "groove_index_dir",
        "path",
        "DIR",
        "keep the index in DIR instead of <kb>/.groove/<model>/ (e.g. a CI cache)",
    ),
    OptionSpec(
        "--groove-no-reindex",
        "groove_no_reindex",
        "groove_no_reindex",
        "flag",
        None,
        "use the index as it is (error when there is none) instead of bringing it up to date",
    ),
    OptionSpec(
        "--groove-no-history",
        "groove_no_history",
        "groove_no_history",
        "flag",
        None,
        "neither read nor write <kb>/.groove-eval-history.json",
    ),
    OptionSpec(
        "--groove-no-diff",
        "groove_no_diff",
        "groove_no_diff",
        "flag",
        None,
        "do not compare with the baseline run (the regression gate is then a no-op)",
    ),
    OptionSpec(
        "--groove-fail-on-regression",
        "groove_fail_on_regression",
        "groove_fail_on_regression",
        "flag",
        None,
        "fail the session (exit 1), and each regressed query, when a metric dropped by "
        "more than [eval].regression_threshold against the baseline run",
    ),
    OptionSpec(
        "--groove-json",
        "groove_json",
        "groove_json",
        "path",
        "FILE",
        "also write the run as JSON (the `groove eval --format json` shape) to FILE",
    ),
    OptionSpec(
        "--groove-html",
        "groove_html",
        "groove_html",
        "path",
        "FILE",
        "also write an HTML report with plots to FILE (needs pytest-groove[plots])",
    ),
    OptionSpec(
        "--groove-freeze-baseline",
        None,
        "groove_freeze_baseline",
        "flag",
        None,
        "record this run as the frozen baseline that later runs are compared with",
    ),
    OptionSpec(
        None,
        "groove_junit_properties",
        "groove_junit_properties",
        "flag",
        None,
        "add each golden query's metrics to the JUnit XML as <properties> (off by default: "
        "they break strict JUnit schema validation)",
    ),
)

SPECS_BY_DEST: dict[str, OptionSpec] = {spec.dest: spec for spec in SPECS}


# --------------------------------------------------------------------------- validators
#
# Each parser takes the option's display name and the raw text and returns the value,
# raising ValueError with a one-line message.  The argparse and ini front-ends below
# wrap that into the error type each needs.


def _parse_path(name: str, text: str) -> str:
    if not text.strip():
        raise ValueError(f"{name} needs a path, got an empty value")
    return text


def _parse_text(name: str, text: str) -> str:
    value = text.strip()
    if not value:
        raise ValueError(f"{name} needs a value, got an empty one")
    return value


def _parse_klist(name: str, text: str) -> tuple[int, ...]:
    from pytest_groove.config import parse_k_list
    from pytest_groove.errors import GrooveError

    try:
        return parse_k_list(name, text)
    except GrooveError as exc:
        raise ValueError(exc.message) from None


def _parse_limit(name: str, text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"{name} takes a whole number of hits (got {text!r})") from None
    if value < 1:
        raise ValueError(f"{name} must be at least 1 (got {value})")
    return value


def _parse_tristate(name: str, text: str) -> bool:
    from pytest_groove.config import parse_bool_flag
    from pytest_groove.errors import GrooveError

    try:
        return parse_bool_flag(name, text)
    except GrooveError as exc:
        raise ValueError(exc.message) from None


def _parse_unit(name: str, text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError(f"{name} must be a number in [0, 1] (got {text!r})") from None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1] (got {text!r})")
    return value


_PARSERS: dict[Kind, Callable[[str, str], Any]] = {
    "path": _parse_path,
    "text": _parse_text,
    "klist": _parse_klist,
    "limit": _parse_limit,
    "tristate": _parse_tristate,
    "unit": _parse_unit,
}


def _argparse_type(spec: OptionSpec) -> Callable[[str], Any]:
    parse = _PARSERS[spec.kind]
    name = spec.flag or spec.dest

    def convert(text: str) -> Any:
        try:
            return parse(name, text)
        except ValueError as exc:
            # argparse prints "argument --groove-k: <message>"; pytest exits 4
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = spec.dest
    return convert


def add_options(parser: pytest.Parser) -> None:
    """Register the ``groove`` option group and the ini keys."""
    group = parser.getgroup(GROUP, "pytest-groove: retrieval quality of a knowledge base")
    for spec in SPECS:
        if spec.flag is not None:
            if spec.kind == "flag":
                group.addoption(
                    spec.flag, action="store_true", default=None, dest=spec.dest, help=spec.help
                )
            else:
                group.addoption(
                    spec.flag,
                    dest=spec.dest,
                    default=None,
                    metavar=spec.metavar,
                    type=_argparse_type(spec),
                    help=spec.help,
                )
        if spec.ini is not None:
            ini_type: Literal["bool", "string"] = "bool" if spec.kind == "flag" else "string"
            parser.addini(spec.ini, spec.help, type=ini_type, default=None)


# --------------------------------------------------------------------------- resolution


@dataclass(frozen=True)
class PluginOptions:
    """The plugin's effective options (command line, else ini; None = not given).

    Paths are absolute: a command-line path is relative to the directory pytest was
    started in, an ini path to the directory of the ini file.
    """

    kb: Path
    #: True when --groove-kb was given on the command line (not only in the ini file)
    kb_from_cli: bool
    golden: Path | None = None
    config_file: Path | None = None
    k_values: tuple[int, ...] | None = None
    limit: int | None = None
    model: str | None = None
    reranker: str | None = None
    mmr: bool | None = None
    mmr_lambda: float | None = None
    mmr_same_doc_penalty: float | None = None
    parent_retriever: bool | None = None
    index_dir: Path | None = None
    no_reindex: bool = False
    no_history: bool = False
    no_diff: bool = False
    fail_on_regression: bool = False
    json_path: Path | None = None
    html_path: Path | None = None
    freeze_baseline: bool = False
    junit_properties: bool = False


def _ini_base(config: pytest.Config) -> Path:
    inipath = config.inipath
    return inipath.parent if inipath is not None else config.rootpath


def _ini_value(config: pytest.Config, spec: OptionSpec) -> Any:
    """The ini value of ``spec`` parsed and validated, None when unset."""
    if spec.ini is None:
        return None
    raw = config.getini(spec.ini)
    if spec.kind == "flag":
        return bool(raw) if raw is not None else None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    try:
        value = _PARSERS[spec.kind](spec.ini, str(raw))
    except ValueError as exc:
        where = config.inipath or "the ini file"
        raise pytest.UsageError(f"invalid {spec.ini} in {where}: {exc}") from None
    if spec.kind == "path":
        return _ini_base(config) / value
    return value


def _cli_value(config: pytest.Config, spec: OptionSpec) -> Any:
    if spec.flag is None:
        return None
    value = config.getoption(spec.dest, default=None)
    if spec.kind == "path" and value is not None:
        return config.invocation_params.dir / value
    return value


def _lookup(config: pytest.Config, dest: str) -> Any:
    spec = SPECS_BY_DEST[dest]
    value = _cli_value(config, spec)
    return value if value is not None else _ini_value(config, spec)


def read_options(config: pytest.Config) -> PluginOptions | None:
    """The plugin's options, or None when the plugin should stay inert.

    The plugin is switched on by ``--groove-kb`` or the ``groove_kb`` ini key.  Any
    other ``--groove-*`` option on the command line without a knowledge base is a
    usage error (it would otherwise be silently ignored); other ini keys without
    ``groove_kb`` are fine -- they configure runs that pass ``--groove-kb``.
    """
    kb_cli = _cli_value(config, SPECS_BY_DEST["groove_kb"])
    kb = kb_cli if kb_cli is not None else _ini_value(config, SPECS_BY_DEST["groove_kb"])
    if kb is None:
        for spec in SPECS:
            if spec.flag is not None and config.getoption(spec.dest, default=None) is not None:
                raise pytest.UsageError(
                    f"{spec.flag} needs a knowledge base: pass --groove-kb DIR "
                    f"(or set {KB_KEY} in the pytest ini file)"
                )
        return None

    def flag(dest: str) -> bool:
        return bool(_lookup(config, dest))

    if flag("groove_freeze_baseline") and flag("groove_no_history"):
        raise pytest.UsageError(
            "--groove-freeze-baseline needs the history: drop --groove-no-history"
        )
    html_path = _lookup(config, "groove_html")
    if html_path is not None:
        _check_html(config)

    return PluginOptions(
        kb=Path(kb),
        kb_from_cli=kb_cli is not None,
        golden=_lookup(config, "groove_golden"),
        config_file=_lookup(config, "groove_config"),
        k_values=_lookup(config, "groove_k"),
        limit=_lookup(config, "groove_limit"),
        model=_lookup(config, "groove_model"),
        reranker=_lookup(config, "groove_reranker"),
        mmr=_lookup(config, "groove_mmr"),
        mmr_lambda=_lookup(config, "groove_mmr_lambda"),
        mmr_same_doc_penalty=_lookup(config, "groove_mmr_same_doc_penalty"),
        parent_retriever=_lookup(config, "groove_parent_retriever"),
        index_dir=_lookup(config, "groove_index_dir"),
        no_reindex=flag("groove_no_reindex"),
        no_history=flag("groove_no_history"),
        no_diff=flag("groove_no_diff"),
        fail_on_regression=flag("groove_fail_on_regression"),
        json_path=_lookup(config, "groove_json"),
        html_path=html_path,
        freeze_baseline=flag("groove_freeze_baseline"),
        junit_properties=flag("groove_junit_properties"),
    )


def _check_html(config: pytest.Config) -> None:
    """The HTML report needs the ``plots`` extra: say so now, before any search."""
    from pytest_groove.errors import GrooveError
    from pytest_groove.evaluation.report_html import check_html_available

    spec = SPECS_BY_DEST["groove_html"]
    name = spec.flag if _cli_value(config, spec) is not None else spec.ini
    try:
        check_html_available(name or spec.dest)
    except GrooveError as exc:
        raise pytest.UsageError(exc.message) from None


#: engine messages name ``groove`` flags; under pytest the same knob is ``--groove-<flag>``
_CLI_FLAG = re.compile(
    r"(?<![\w-])--(golden|k|limit|model|reranker|config|index-dir|no-reindex|no-history|"
    r"no-diff|fail-on-regression|freeze-baseline|mmr|mmr-lambda|mmr-same-doc-penalty|"
    r"parent-retriever)(?![\w-])"
)


def pytest_flag_names(message: str) -> str:
    """Rewrite ``groove`` CLI flag names in an engine message to the pytest options."""
    return _CLI_FLAG.sub(r"--groove-\1", message)
