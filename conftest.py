"""Repository-wide pytest setup.

The suite drives the plugin through ``pytester`` (enabled in pyproject's addopts),
so nothing here may configure groove options: a test that wants the plugin active
passes ``--groove-kb`` to its own inner pytest run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
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
    # In CI the examples are derived from each test (the same on every run), so a run
    # that passed on a developer's machine with CI=true passes on the CI runner too;
    # locally each run draws new ones, which is where new failures get found.
    settings.register_profile("groove-ci", parent=settings.get_profile("groove"), derandomize=True)
    settings.load_profile("groove-ci" if os.environ.get("CI") else "groove")

#: pytest plugins the test extra's libraries bring along and no test here needs: LangChain
#: installs langsmith's (about a second of imports in every pytest process) and httpx
#: installs anyio's.  Kept out of the pytest processes the tests start (the xdist workers
#: too, which read PYTEST_ADDOPTS); tests/docs/test_retrievers.py runs the documented commands
#: with every installed plugin, as a user's environment would.
LEAN_PLUGINS = "-p no:langsmith_plugin -p no:anyio"
os.environ["PYTEST_ADDOPTS"] = f"{LEAN_PLUGINS} {os.environ.get('PYTEST_ADDOPTS', '')}".strip()

REPO_ROOT = Path(__file__).resolve().parent

if os.environ.get("PYTHONDONTWRITEBYTECODE"):
    # Set in many CI images: then every module of this checkout is compiled from source
    # again in each process and in-process pytest run the tests start -- minutes over
    # the suite.  Bytecode goes to one folder outside the source tree instead (what the
    # setting is usually there to keep clean), for this process and the ones it starts.
    _PYCACHE = REPO_ROOT / ".pytest_cache" / "pycache"
    os.environ.pop("PYTHONDONTWRITEBYTECODE")
    os.environ["PYTHONPYCACHEPREFIX"] = str(_PYCACHE)
    sys.dont_write_bytecode = False
    sys.pycache_prefix = str(_PYCACHE)
KB_EVAL = REPO_ROOT / "tests" / "corpora" / "kb-eval"
KB_EVAL_GOLDEN = REPO_ROOT / "tests" / "corpora" / "kb-eval-golden.yml"
EXAMPLE_KB = REPO_ROOT / "examples" / "kb"

#: what running the example leaves in a KB (index, history); never copied into tests
LOCAL_STATE = shutil.ignore_patterns(".groove", ".groove-eval-history.json*")


def copy_example_kb(target: Path) -> Path:
    """A writable copy of the example KB at ``target``, without its local state."""
    shutil.copytree(EXAMPLE_KB, target, ignore=LOCAL_STATE)
    return target


def package_modules_after(statement: str) -> list[str]:
    """The pytest_groove modules a fresh interpreter holds after ``statement``: what an
    entry point costs to import, and what runs before its error boundary."""
    code = (
        f"import sys; {statement}; "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('pytest_groove'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.split()


@pytest.fixture
def kb_eval_copy(tmp_path: Path) -> Path:
    """A writable copy of the bilingual kb-eval corpus."""
    target = tmp_path / "kb-eval"
    shutil.copytree(KB_EVAL, target, ignore=LOCAL_STATE)
    return target


@pytest.fixture
def example_kb_copy(tmp_path: Path) -> Path:
    """A writable copy of the example KB shipped in examples/kb."""
    return copy_example_kb(tmp_path / "example-kb")


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester whose inner runs leave out the plugins no inner run here needs.

    hypothesis's, which pytester re-imports (with assertion rewriting) on every
    in-process run, and :data:`LEAN_PLUGINS`, each costing most of a second a run.  Set
    after pytester's own isolation, which clears PYTEST_ADDOPTS.
    """
    monkeypatch.setenv("PYTEST_ADDOPTS", f"-p no:hypothesispytest {LEAN_PLUGINS}")
    return pytester


#: locales that decode file names in another encoding than UTF-8, each with what
#: ``sys.getfilesystemencoding()`` says under it (``C`` only with UTF-8 mode off)
FOREIGN_LOCALES = {"C": "ascii", "de_DE.ISO-8859-1": "iso8859-1", "ja_JP.EUC-JP": "euc_jp"}


def _names_decoded_as(env: dict[str, str]) -> str:
    probe = "import sys; print(sys.getfilesystemencoding())"
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=False
    )
    return done.stdout.strip()


def _foreign_env(name: str, folder: Callable[[], Path]) -> dict[str, str] | str:
    """The environment of a process under the locale ``name``, or why there is none."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("LC_")}
    env.pop("PYTHONIOENCODING", None)  # standard output follows the locale too
    env.update(LC_ALL=name, PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    wanted = FOREIGN_LOCALES[name]
    if _names_decoded_as(env) == wanted:
        return env  # installed on this machine
    if shutil.which("localedef") is None or "." not in name:
        return f"the {name} locale is not installed and localedef is missing"
    # compiled into a folder of this session's own (LOCPATH): nothing installed, no root
    where = folder()
    language, charset = name.split(".")
    subprocess.run(
        ["localedef", "-i", language, "-f", charset, str(where / name)],
        capture_output=True,
        check=False,
    )
    env["LOCPATH"] = str(where)
    if _names_decoded_as(env) != wanted:
        return f"localedef could not make the {name} locale"
    return env


@pytest.fixture(scope="session")
def foreign_locale(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], tuple[dict[str, str], str]]:
    """``foreign_locale(name)``: the environment of a process under the locale ``name``
    (a key of :data:`FOREIGN_LOCALES`) and the encoding it decodes names in.

    A locale the machine lacks is made with ``localedef`` into a folder of the session
    (``LOCPATH``); the test is skipped when that cannot be done.
    """
    made: dict[str, dict[str, str] | str] = {}

    def environment(name: str) -> tuple[dict[str, str], str]:
        if name not in made:
            made[name] = _foreign_env(name, lambda: tmp_path_factory.mktemp("locales"))
        env = made[name]
        if isinstance(env, str):
            pytest.skip(env)
        return env, FOREIGN_LOCALES[name]

    return environment
