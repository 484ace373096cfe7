"""pytest's assertion rewriter stays off pytest-groove's own modules."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_groove

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
    code = (
        "import sys, pytest_groove.plugin; "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('pytest_groove'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [
        "pytest_groove",
        "pytest_groove.errors",  # standard library only
        "pytest_groove.options",
        "pytest_groove.plugin",
        "pytest_groove.plugin.hookspecs",
        "pytest_groove.plugin.options",
        "pytest_groove.plugin.plain_imports",
    ]


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
            sys.modules.pop("pytest_groove.kb.text", None)
            import pytest_groove.kb.text as text
            print("LOADER", type(text.__loader__).__name__)
        """
    )
    pytester.makepyfile(test_x="def test_x():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-s")
    result.stdout.fnmatch_lines(["LOADER SourceFileLoader"])
    result.assert_outcomes(passed=1)
