"""Keep the documentation in step with the code.

In the manner of sqlite-utils' ``test_docs.py``: the command-line parser, the pytest
plugin's options and the config validator are the source of truth, and each test here
fails as soon as a flag, option, ini key or config key is added (or renamed) without the
reference page that lists it being updated -- or when a page documents something the code
no longer accepts.

Everything is read from the working tree and introspected in-process (one in-process
``pytest --help`` through ``pytester``); no network, well under a second.
"""

from __future__ import annotations

import argparse
import functools
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import pytest

from conftest import REPO_ROOT
from pytest_groove import plugin
from pytest_groove.cli.commands import build_parser
from pytest_groove.evaluation.golden.file import DEFAULT_GOLDEN_NAME
from pytest_groove.settings.config import (
    IndexSettings,
    SearchSettings,
    Settings,
    parse_settings,
)
from tests.helpers.config_keys import accepted_keys, keys_of

ROOT = REPO_ROOT
DOCS = ROOT / "docs"
README = ROOT / "README.md"
CLI_DOC = DOCS / "cli.md"
PLUGIN_DOC = DOCS / "pytest-plugin.md"
CONFIG_DOC = DOCS / "configuration.md"
EVAL_DOC = DOCS / "eval.md"

#: argparse's own help switches are not ours to document
HELP_OPTIONS = frozenset({"-h", "--help"})

_FENCE = re.compile(r"^(```|~~~)")
#: ``[text](target)``; images and reference-style links are not used in these docs
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
#: a ``--flag`` as written in prose or tables (``--`` alone is not a flag)
_FLAG_TOKEN = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


# --------------------------------------------------------------------------- helpers


def read_doc(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def mentions(text: str, name: str) -> bool:
    """``name`` occurs as a whole token: ``--k`` is not found inside ``--kb-path``,
    ``groove_mmr`` not inside ``groove_mmr_lambda``."""
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


def strip_fenced(text: str) -> str:
    """``text`` without its fenced code blocks (a ``# comment`` there is no heading)."""
    kept: list[str] = []
    inside = False
    for line in text.splitlines():
        if _FENCE.match(line.lstrip()):
            inside = not inside
            continue
        if not inside:
            kept.append(line)
    return "\n".join(kept)


def fenced_blocks(text: str, language: str) -> list[str]:
    """The bodies of the fenced blocks opened with ```` ```language ````."""
    blocks: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if current is None:
            if stripped == f"```{language}":
                current = []
        elif stripped == "```":
            blocks.append("\n".join(current) + "\n")
            current = None
        else:
            current.append(line)
    return blocks


def sections(text: str, level: int = 2) -> tuple[str, dict[str, str]]:
    """(text before the first heading of ``level``, {heading: body}) of a Markdown page."""
    marker = "#" * level + " "
    preamble: list[str] = []
    bodies: dict[str, list[str]] = {}
    current: list[str] = preamble
    for line in strip_fenced(text).splitlines():
        if line.startswith(marker):
            current = bodies.setdefault(line[len(marker) :].strip(), [])
        else:
            current.append(line)
    return "\n".join(preamble), {title: "\n".join(body) for title, body in bodies.items()}


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lowercase, punctuation dropped, spaces -> ``-``."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown page (repeated headings get ``-1``, ``-2``...)."""
    seen: dict[str, int] = {}
    result: set[str] = set()
    for line in strip_fenced(read_doc(path)).splitlines():
        match = re.match(r"#{1,6} (.+)", line)
        if match is None:
            continue
        slug = github_slug(match.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def local_links(path: Path) -> Iterator[tuple[str, Path, str | None]]:
    """(link as written, file it points at, anchor) for each relative link of a page."""
    for target in _LINK.findall(strip_fenced(read_doc(path))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        resolved = path if not file_part else (path.parent / file_part).resolve()
        yield target, resolved, anchor or None


# --------------------------------------------------------------------------- groove CLI


@functools.cache
def subcommands() -> dict[str, argparse.ArgumentParser]:
    """``groove``'s sub-parsers by name, as ``build_parser()`` wires them."""
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(cast(dict[str, argparse.ArgumentParser], action.choices))
    raise AssertionError("build_parser() registered no subcommands")


def option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """The flags of ``parser`` and of its own subcommands (``groove import beir``)."""
    nested = [
        option
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for child in cast(dict[str, argparse.ArgumentParser], action.choices).values()
        for option in option_strings(child)
    ]
    return [
        option
        for action in parser._actions
        for option in action.option_strings
        if option not in HELP_OPTIONS
    ] + nested


def cli_section(name: str) -> tuple[str, str]:
    """(shared part, section of ``groove <name>``) of docs/cli.md."""
    preamble, bodies = sections(read_doc(CLI_DOC))
    matching = [body for title, body in bodies.items() if f"`groove {name}`" in title]
    assert matching, f"docs/cli.md has no section headed `groove {name}`"
    return preamble, matching[0]


def test_groove_has_the_documented_subcommands() -> None:
    assert set(subcommands()) >= {"index", "search", "eval", "tune"}


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_cli_option_is_documented_in_its_section(name: str) -> None:
    """Each option of ``groove <name>`` appears in docs/cli.md, in that command's
    section or in the table of flags every subcommand takes."""
    shared, own = cli_section(name)
    missing = [
        option
        for option in option_strings(subcommands()[name])
        if not (mentions(own, option) or mentions(shared, option))
    ]
    assert not missing, f"`groove {name}` options missing from docs/cli.md: {missing}"


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_flag_documented_for_a_command_exists(name: str) -> None:
    """The reverse: no flag in a command's section of docs/cli.md that it does not take."""
    _shared, own = cli_section(name)
    accepted = set(option_strings(subcommands()[name]))
    unknown = sorted(set(_FLAG_TOKEN.findall(own)) - accepted)
    assert not unknown, f"docs/cli.md documents flags `groove {name}` does not accept: {unknown}"


# --------------------------------------------------------------------------- pytest plugin


@dataclass
class OptionRecorder:
    """Stands in for ``pytest.Parser`` and its option groups; records what is added."""

    flags: list[str] = field(default_factory=list)
    ini: list[str] = field(default_factory=list)

    def getgroup(self, name: str, description: str = "", after: str | None = None) -> Any:
        return self

    def addoption(self, *opts: str, **attrs: Any) -> None:
        self.flags.extend(opts)

    def addini(self, name: str, help: str, *args: Any, **kwargs: Any) -> None:
        self.ini.append(name)


@functools.cache
def plugin_options() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(``--groove-*`` options, ``groove_*`` ini keys) the plugin registers."""
    recorder = OptionRecorder()
    plugin.pytest_addoption(cast(pytest.Parser, recorder))
    return tuple(recorder.flags), tuple(recorder.ini)


def plugin_doc() -> str:
    if not PLUGIN_DOC.is_file():
        pytest.skip("docs/pytest-plugin.md does not exist yet (owned by H-plugin)")
    return read_doc(PLUGIN_DOC)


def test_the_plugin_registers_its_options() -> None:
    flags, ini = plugin_options()
    # guards the recorder itself: were these empty, every test below would pass vacuously
    assert "--groove-kb" in flags
    assert "groove_kb" in ini
    assert all(flag.startswith("--groove-") for flag in flags), flags
    assert all(key.startswith("groove_") for key in ini), ini


def test_the_recorded_options_are_what_pytest_shows(pytester: pytest.Pytester) -> None:
    """``pytest --help`` with the installed plugin lists exactly the recorded names, so
    nothing registered some other way escapes the documentation tests."""
    result = pytester.runpytest("--help")
    assert result.ret == 0
    out = result.stdout.str()
    flags, ini = plugin_options()
    shown_flags = set(re.findall(r"(?<![\w-])--groove-[a-z0-9-]+", out))
    shown_ini = set(re.findall(r"^\s+(groove_\w+) \(", out, flags=re.MULTILINE))
    assert shown_flags == set(flags)
    assert shown_ini == set(ini)


def test_every_plugin_option_is_documented() -> None:
    doc = plugin_doc()
    flags, _ini = plugin_options()
    missing = [flag for flag in flags if not mentions(doc, flag)]
    assert not missing, f"plugin options missing from docs/pytest-plugin.md: {missing}"


def test_every_plugin_ini_key_is_documented() -> None:
    doc = plugin_doc()
    _flags, ini = plugin_options()
    missing = [key for key in ini if not mentions(doc, key)]
    assert not missing, f"ini keys missing from docs/pytest-plugin.md: {missing}"


def test_every_groove_option_in_the_plugin_doc_tables_exists() -> None:
    """The reverse, for the option tables (prose also names attributes such as
    ``report.groove_result``, which are not options)."""
    rows = "\n".join(line for line in plugin_doc().splitlines() if line.startswith("|"))
    flags, ini = plugin_options()
    named_flags = set(re.findall(r"(?<![\w-])--groove-[a-z0-9-]*[a-z0-9]", rows))
    named_ini = set(re.findall(r"(?<![\w.-])groove_[a-z0-9_]*[a-z0-9]", rows))
    assert named_flags, "docs/pytest-plugin.md has no option table"
    assert named_flags <= set(flags), sorted(named_flags - set(flags))
    assert named_ini <= set(ini), sorted(named_ini - set(ini))


# --------------------------------------------------------------------------- links


def test_the_readme_names_every_doc_page() -> None:
    """The README is the project page of a package index too, where a relative link
    breaks: it names the pages in text instead, and names every one of them."""
    readme = read_doc(README)
    unnamed = [p.name for p in sorted(DOCS.glob("*.md")) if f"`docs/{p.name}`" not in readme]
    assert not unnamed, f"README.md does not name {unnamed}"


def test_the_readme_has_no_relative_link() -> None:
    relative = [target for target, _path, _anchor in local_links(README)]
    assert not relative, f"README.md is the package page: use absolute URLs, not {relative}"


def _doc_pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("page", _doc_pages(), ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    """Every relative link in the README and docs/ names a file that exists and, for a
    Markdown page, a heading that exists in it."""
    broken: list[str] = []
    for target, path, anchor in local_links(page):
        if not path.exists():
            broken.append(f"{target} (no such file)")
        elif anchor is not None and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target} (no heading #{anchor})")
    assert not broken, f"{page.name}: broken links {broken}"


# --------------------------------------------------------------------------- configuration


def reference_toml() -> str:
    """The big TOML block of docs/configuration.md (the full reference)."""
    blocks = fenced_blocks(read_doc(CONFIG_DOC), "toml")
    assert blocks, "docs/configuration.md has no ```toml block"
    return max(blocks, key=len)


def uncomment_keys(block: str) -> str:
    """The block with commented-out example keys (``# index_dir = ...``) switched on."""
    return re.sub(r"(?m)^#\s*([A-Za-z_][\w-]*\s*=)", r"\1", block)


def test_the_reference_toml_is_accepted_and_shows_the_defaults() -> None:
    """Every key of the documented reference passes the validator, and the values shown
    are the built-in defaults, as the block says."""
    source = DOCS / "groove.toml"  # relative paths in the block resolve against this
    settings = parse_settings(tomllib.loads(reference_toml()), source)
    defaults = Settings()
    assert settings.index == IndexSettings()
    assert settings.search == SearchSettings()
    assert settings.eval.golden == source.parent / DEFAULT_GOLDEN_NAME
    # every [eval] value shown is the default (an optional gate shown switched on once
    # turned floors on for whoever pasted the block)
    assert replace(settings.eval, golden=None) == replace(defaults.eval, golden=None)
    assert settings.retriever == defaults.retriever


def test_the_reference_toml_names_every_key_the_reader_accepts() -> None:
    shown = keys_of(uncomment_keys(reference_toml()))
    accepted = accepted_keys(DOCS / "groove.toml")
    assert sorted(accepted - shown) == [], "docs/configuration.md does not show these keys"
    assert sorted(shown - accepted) == [], "docs/configuration.md shows keys never read"


def test_the_commented_out_reference_keys_are_accepted() -> None:
    block = reference_toml()
    switched_on = uncomment_keys(block)
    assert switched_on != block, "the reference shows no commented-out optional key"
    parse_settings(tomllib.loads(switched_on), DOCS / "groove.toml")


def _toml_snippets() -> list[Any]:
    return [
        pytest.param(block, id=f"{page.name}#{number}")
        for page in sorted(DOCS.glob("*.md"))
        for number, block in enumerate(fenced_blocks(read_doc(page), "toml"), start=1)
    ]


@pytest.mark.parametrize("block", _toml_snippets())
def test_every_toml_snippet_in_the_docs_is_accepted(block: str) -> None:
    """Snippets a reader may paste into groove.toml (e.g. the [eval] table) validate."""
    parse_settings(tomllib.loads(block), DOCS / "groove.toml")


# --------------------------------------------------------------------------- eval.md


def test_eval_doc_quotes_the_messages_the_code_prints() -> None:
    """The user-visible strings docs/eval.md quotes are the ones the code prints."""
    from pytest_groove.evaluation.gate.compare import CONFIG_CHANGED, GOLDEN_CHANGED
    from pytest_groove.evaluation.history.file import HISTORY_FILE_NAME
    from pytest_groove.evaluation.reports.text_report import NEXT_RUN_HINT
    from pytest_groove.evaluation.runs.findings import MIN_DISTINCT_QUERIES, MIN_QUERY_CODE_POINTS
    from pytest_groove.evaluation.runs.record import QUOTE_CHECK
    from pytest_groove.files.guarded_io import GOLDEN_CAP, HISTORY_CAP
    from pytest_groove.scoring.metrics import METRIC_VERSION
    from pytest_groove.search.query.fts_query import FTS_QUERY_VERSION

    doc = read_doc(EVAL_DOC)
    for text in (
        f"⚠️ {GOLDEN_CHANGED}, diff disabled",
        f"⚠️ {CONFIG_CHANGED} (retriever, model differ), diff disabled",
        NEXT_RUN_HINT,
        QUOTE_CHECK,
        HISTORY_FILE_NAME,
        DEFAULT_GOLDEN_NAME,
        f"`metric_version` | `{METRIC_VERSION}`",
        f"`fts_query_version` | `{FTS_QUERY_VERSION}`",
        f"{MIN_QUERY_CODE_POINTS} characters",
        f"{MIN_DISTINCT_QUERIES} or more",
        f"{GOLDEN_CAP:,} bytes",
        f"{HISTORY_CAP:,} bytes",
        "a delta below may reflect that, not retrieval",
        "not recorded in the history and not gated.",
    ):
        assert text in doc, f"docs/eval.md does not quote {text!r}"


def test_eval_doc_names_every_groove_eval_flag() -> None:
    doc = read_doc(EVAL_DOC)
    # the shared --kb-path/--model/--config/--index-dir flags live in docs/cli.md
    own = [o for o in option_strings(subcommands()["eval"]) if o not in ("--config",)]
    missing = [option for option in own if not mentions(doc, option)]
    assert not missing, f"`groove eval` flags docs/eval.md never mentions: {missing}"


def _golden_examples() -> list[Any]:
    return [
        pytest.param(block, id=f"{page.name}#{number}")
        for page in _doc_pages()
        for number, block in enumerate(fenced_blocks(read_doc(page), "yaml"), start=1)
        if block.lstrip().startswith("queries:")
    ]


@pytest.mark.parametrize("block", _golden_examples())
def test_every_golden_file_example_loads(block: str, tmp_path: Path) -> None:
    """A golden file shown in the docs passes the loader a reader will copy it into."""
    from pytest_groove.evaluation.golden.file import load_golden

    golden = tmp_path / DEFAULT_GOLDEN_NAME
    golden.write_text(block, encoding="utf-8")
    assert load_golden(golden, tmp_path).queries


#: `tests/test_x.py`, `tests/folder/test_x.py::test_y`, and `::test_z` (a test of the
#: file named last before it) as the docs cite the test behind a claim
_TEST_CITATION = re.compile(r"`(tests/(?:\w+/)*test_\w+\.py)(?:::(test_\w+))?`|`::(test_\w+)`")


def _cited_tests() -> Iterator[tuple[str, str, str]]:
    """(page, test file, test name or "") for every test a page of docs/ cites."""
    for page in sorted(DOCS.glob("*.md")):
        current: str | None = None
        for file, named, bare in _TEST_CITATION.findall(page.read_text(encoding="utf-8")):
            current = file or current
            if current is not None:
                yield page.name, current, named or bare


def test_every_test_the_docs_cite_exists() -> None:
    """A claim in docs/ (reliability.md's "test that proves it") names a test that runs:
    a renamed or deleted test leaves the claim unproven, so it fails here."""
    missing = []
    for page, file, name in _cited_tests():
        path = ROOT / file
        source = path.read_text(encoding="utf-8") if path.is_file() else None
        defined = source is not None and (
            not name or re.search(rf"^\s*(?:async )?def {name}\b|^{name} = ", source, re.M)
        )
        if not defined:
            missing.append(f"{page}: {file}{'::' + name if name else ''}")
    assert not missing, missing
