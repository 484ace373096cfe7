"""pytest's assertion rewriter stays off pytest-groove's own modules."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_groove
from conftest import package_modules_after

PACKAGE_DIR = Path(pytest_groove.__file__).parent

pytest_plugins = ["pytester"]


def test_every_module_says_it_holds_no_test_assertions() -> None:
    missing = [
        str(path.relative_to(PACKAGE_DIR.parent))
        for path in sorted(PACKAGE_DIR.rglob("*.py"))
        if "PYTEST_DONT_REWRITE"
        not in (ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "")
    ]
    assert missing == []


def test_the_plugin_entry_imports_only_its_thin_modules() -> None:
    assert package_modules_after("import pytest_groove.plugin") == [
        "pytest_groove",
        "pytest_groove.errors",  # standard library only
        "pytest_groove.plugin",
        "pytest_groove.plugin.hookspecs",
        "pytest_groove.plugin.options",
        "pytest_groove.plugin.plain_imports",
        "pytest_groove.settings",  # the package's docstring only
        "pytest_groove.settings.options",
    ]


#: what pytest does for an installed wheel before it loads the ``pytest11`` entry point
#: (it marks the whole package for rewriting), then the import of the entry point; prints
#: each pytest_groove module with the kind of loader that loaded it
ENTRY_POINT_LOAD = """
import sys
from _pytest.config import _prepareconfig

config = _prepareconfig(["-p", "no:groove", "-p", "no:cacheprovider"])
hook = config.pluginmanager.rewrite_hook
assert hook in sys.meta_path
hook.mark_rewrite("pytest_groove")
import pytest_groove.plugin
for name, module in sorted(sys.modules.items()):
    if name.startswith("pytest_groove"):
        print(name, type(module.__loader__).__name__)
"""


def test_only_the_modules_before_the_finder_go_through_the_rewrite_hook(
    tmp_path: Path,
) -> None:
    # the finder is installed by the entry point's own module: it, its package and the
    # finder's module are rewritten; every module they import after that is not (the
    # plugin's option table was once imported first, and rewritten in every pytest run)
    out = subprocess.run(
        [sys.executable, "-c", ENTRY_POINT_LOAD],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    loaders = dict(line.split() for line in out.stdout.splitlines())
    rewritten = {name for name, kind in loaders.items() if kind == "AssertionRewritingHook"}
    # (the top package is not, where an editable install's own finder loads it)
    assert rewritten - {"pytest_groove"} == {
        "pytest_groove.plugin",
        "pytest_groove.plugin.plain_imports",
    }
    assert loaders["pytest_groove.plugin.options"] == "SourceFileLoader"
    assert loaders["pytest_groove.settings.options"] == "SourceFileLoader"


def test_package_modules_imported_during_a_run_bypass_the_rewrite_hook(
    pytester: pytest.Pytester,
) -> None:
    # an installed wheel has its whole package marked for rewriting; mark it here too, so
    # the test means the same for an editable install
    pytester.makeconftest(
        """
        import sys

        def pytest_configure(config):
            config.pluginmanager.rewrite_hook.mark_rewrite("pytest_groove")
            sys.modules.pop("pytest_groove.text.plain", None)
            import pytest_groove.text.plain as text
            print("LOADER", type(text.__loader__).__name__)
        """
    )
    pytester.makepyfile(test_x="def test_x():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-s")
    result.stdout.fnmatch_lines(["LOADER SourceFileLoader"])
    result.assert_outcomes(passed=1)
