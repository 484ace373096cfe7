"""Repository-wide pytest setup.

The suite drives the plugin through ``pytester`` (enabled in pyproject's addopts),
so nothing here may configure groove options: a test that wants the plugin active
passes ``--groove-kb`` to its own inner pytest run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

try:
    from hypothesis import settings
except ImportError:  # the README's main job runs from this folder with only `pip install .`
    pass
else:
    # No per-example deadline anywhere: the suite runs on busy shared machines, where a
    # slow example is not a bug (a timing is never what these property tests check).
    settings.register_profile("groove", deadline=None)
    settings.load_profile("groove")

REPO_ROOT = Path(__file__).resolve().parent
KB_EVAL = REPO_ROOT / "tests" / "corpora" / "kb-eval"
KB_EVAL_GOLDEN = REPO_ROOT / "tests" / "corpora" / "kb-eval-golden.yml"
EXAMPLE_KB = REPO_ROOT / "examples" / "kb"

#: what running the example leaves in a KB (index, history); never copied into tests
LOCAL_STATE = shutil.ignore_patterns(".groove", ".groove-eval-history.json*")


@pytest.fixture
def kb_eval_copy(tmp_path: Path) -> Path:
    """A writable copy of the bilingual kb-eval corpus."""
    target = tmp_path / "kb-eval"
    shutil.copytree(KB_EVAL, target, ignore=LOCAL_STATE)
    return target


@pytest.fixture
def example_kb_copy(tmp_path: Path) -> Path:
    """A writable copy of the example KB shipped in examples/kb."""
    target = tmp_path / "example-kb"
    shutil.copytree(EXAMPLE_KB, target, ignore=LOCAL_STATE)
    return target


@pytest.fixture
def lean_pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester whose inner runs skip hypothesis's plugin.

    pytester re-imports that plugin (with assertion rewriting) on every in-process
    run, which costs most of a second each time.  Set after pytester's own isolation,
    which clears PYTEST_ADDOPTS.
    """
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")
    return pytester


@pytest.fixture
def invoke() -> object:
    """``groove`` in-process (``tests/cli_invoke.py``), for tests that prefer a fixture."""
    from cli_invoke import invoke as run_groove

    return run_groove
