"""Collection: the golden file into pytest's collection, its tags as markers.

- :func:`route_golden` makes collection include the golden file (the rules are in the
  docstring of ``plugin/__init__.py``);
- :func:`register_markers` registers ``groove`` and one marker per golden tag, and
  :func:`refuse_tags_naming_foreign_markers` keeps a tag from becoming a marker that
  pytest or another plugin acts on;
- :class:`GoldenCollector` is the hook object that turns the golden file into a
  :class:`~pytest_groove.plugin.items.GrooveGoldenFile`.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from pytest_groove.errors import GrooveError, clip
from pytest_groove.plugin.items import GROOVE_MARKER, GrooveGoldenFile, QueryRunner, tag_marker
from pytest_groove.scoring.records import GoldenSet

#: set when ``--groove-kb`` without paths made the golden file pytest's only argument
GOLDEN_ONLY_KEY = pytest.StashKey[bool]()
#: False when collection was left without the golden file (particular tests named)
GOLDEN_ROUTED_KEY = pytest.StashKey[bool]()
#: the description of the markers golden tags become (how they are told from others')
TAG_MARKER_SUFFIX = ": golden query tag (pytest-groove)"


def marker_names(lines: Iterable[str]) -> set[str]:
    """Marker names from ``markers`` ini lines (``name(args): description``)."""
    return {line.split(":", 1)[0].split("(", 1)[0].strip() for line in lines if line.strip()}


def register_markers(config: pytest.Config, golden: GoldenSet) -> None:
    """``groove`` on every golden item, and one marker per golden tag."""
    config.addinivalue_line(
        "markers", f"{GROOVE_MARKER}: a golden retrieval query collected by pytest-groove"
    )
    tags = {m for q in golden.queries for m in map(tag_marker, q.tags) if m is not None}
    for marker in sorted(tags):
        config.addinivalue_line("markers", f"{marker}{TAG_MARKER_SUFFIX}")


def refuse_tags_naming_foreign_markers(
    config: pytest.Config, golden: GoldenSet, markers_before: set[str]
) -> None:
    """A golden tag must never become a marker pytest or another plugin registered.

    The golden loader already refuses pytest's built-in acting markers (``skip``,
    ``xfail`` ...).  Other plugins register markers that act too (``timeout``,
    ``flaky``, ``asyncio`` ...) and nothing says which do, so any marker registered
    by someone other than the user's own ini file is off limits for tags.  Markers
    the user registers in their ini file stay usable (``-m smoke``): they are
    ``markers_before``, the markers known when the plugin was configured, which is
    before pytest's own plugins and the conftest files register theirs.
    """
    registered = [line for line in config.getini("markers") if not line.endswith(TAG_MARKER_SUFFIX)]
    foreign = marker_names(registered) - markers_before - {GROOVE_MARKER}
    for query in golden.queries:
        for tag in query.tags:
            marker = tag_marker(tag)
            if marker is not None and marker in foreign:
                raise GrooveError(
                    f"golden file {golden.path}: line {query.line}: tag "
                    f"`{clip(tag)}` would become the `{marker}` marker, which pytest or a "
                    "plugin registered and which may change the query's outcome; "
                    "rename the tag"
                )


def _names_golden(arg: str, base: Path, golden: Path) -> bool:
    path_part = arg.split("::", 1)[0]
    try:
        return (base / path_part).resolve() == golden
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop before Python 3.13
        return False


def _walk_reaches(config: pytest.Config, arg: str, base: Path, golden: Path) -> bool:
    """Whether collecting the directory ``arg`` walks down to the golden file."""
    try:
        folder = (base / arg.split("::", 1)[0]).resolve()
        below = golden.parent.relative_to(folder)
    except (OSError, RuntimeError, ValueError):
        return False
    patterns = config.getini("norecursedirs")
    return folder.is_dir() and not any(
        fnmatch.fnmatch(part, pattern) for part in below.parts for pattern in patterns
    )


def route_golden(config: pytest.Config, kb_from_cli: bool, golden: Path) -> None:
    """Make collection include the golden file (rules: ``plugin/__init__.py``).

    A directory among the paths that already walks down to the golden file collects
    it: naming the file as well would collect it twice on pytest 7 and, on pytest 8,
    makes pytest keep only the narrower path (the other tests of that directory
    vanish).  So the golden file is added only when no path reaches it.
    """
    args = config.args
    base = config.invocation_params.dir
    if any(_names_golden(arg, base, golden) for arg in args):
        return
    typed_paths = config.args_source == pytest.Config.ArgsSource.ARGS
    if kb_from_cli and not typed_paths:
        args[:] = [str(golden)]
        config.stash[GOLDEN_ONLY_KEY] = True
    elif not kb_from_cli and typed_paths and args and all(_names_tests(a, base) for a in args):
        # the ini key (or addopts) asks for the golden queries beside a suite; naming
        # particular test files or node ids (an IDE's "run this test") asks for those
        config.stash[GOLDEN_ROUTED_KEY] = False
        return
    elif not any(_walk_reaches(config, arg, base, golden) for arg in args):
        args.append(str(golden))


def _names_tests(arg: str, base: Path) -> bool:
    """Whether ``arg`` names particular tests: a node id, or a file rather than a folder."""
    if "::" in arg:
        return True
    try:
        return (base / arg).is_file()
    except OSError:
        return False


class GoldenCollector:
    """The hook object that collects the golden file (every process)."""

    def __init__(self, golden_path: Path, golden: GoldenSet, runner: QueryRunner) -> None:
        self.golden_path = golden_path
        self.golden = golden
        self.runner = runner

    def pytest_collect_file(
        self, file_path: Path, parent: pytest.Collector
    ) -> pytest.Collector | None:
        if file_path.name != self.golden_path.name:
            return None
        try:
            if file_path.resolve() != self.golden_path:
                return None
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop before Python 3.13
            return None
        collector: pytest.Collector = GrooveGoldenFile.from_parent(
            parent, path=file_path, golden=self.golden, runner=self.runner
        )
        return collector


def golden_may_run(config: pytest.Config, golden: GoldenSet) -> bool:
    """Whether this session may run a golden query; False only when it surely runs none.

    For a process that must prepare before any item is collected (an xdist controller
    begins the evaluation before its workers start).  Sure means: the golden file was
    left out of collection, or the ``-m`` expression selects none of the golden items
    by the markers they are collected with (``groove`` and their tags' markers), as
    ``pytest -m "not groove"`` does.  Anything it cannot judge (``-k``, an expression
    this pytest's parser refuses) counts as "may run".
    """
    if not config.stash.get(GOLDEN_ROUTED_KEY, True):
        return False
    expression_text = config.getoption("markexpr", "") or ""
    if not expression_text:
        return True
    try:
        from _pytest.mark.expression import Expression  # pytest's own -m grammar

        expression = Expression.compile(expression_text)
    except Exception:  # not this pytest's, or not an expression: pytest itself will say
        return True
    for query in golden.queries:
        names = {GROOVE_MARKER, *(m for m in map(tag_marker, query.tags) if m is not None)}
        try:
            if expression.evaluate(_carries(frozenset(names))):
                return True
        except Exception:
            return True
    return False


def _carries(names: frozenset[str]) -> Callable[..., bool]:
    """``-m``'s matcher for an item carrying the markers ``names`` (which take no
    arguments, so ``-m "smoke(x=1)"`` selects none of them)."""

    def carries(name: str, /, **kwargs: object) -> bool:
        return not kwargs and name in names

    return carries
