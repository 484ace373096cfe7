"""The repository's conftest.py loads without the test extra.

The README's first command installs only the package (``pip install .``) and runs
``pytest --groove-kb examples/kb`` from the repository root, where pytest loads
``conftest.py``: anything it imports beyond pytest must be optional.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import REPO_ROOT

#: importing these fails in the child, as in a virtualenv without the test extra
TEST_EXTRA_ONLY = ("hypothesis", "xdist", "matplotlib", "langchain_core", "llama_index")


def test_root_conftest_imports_without_the_test_extra() -> None:
    script = textwrap.dedent(
        f"""
        import importlib.abc, runpy, sys

        class NoTestExtra(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {TEST_EXTRA_ONLY!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}}")
                return None

        sys.meta_path.insert(0, NoTestExtra())
        runpy.run_path({str(REPO_ROOT / "conftest.py")!r})
        print("loaded")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "loaded"
