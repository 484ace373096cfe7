"""The release build, checked the way a user meets it.

``python -m build`` makes the sdist and the wheel, ``twine check --strict`` accepts
their metadata, the wheel holds the package (with ``py.typed``) and nothing else of
the repository, and the wheel installed into a fresh virtualenv runs the README's main
job -- ``pytest --groove-kb examples/kb`` -- from a directory that is not this checkout,
so what runs is the installed wheel and not the working tree.

Slow (a build in an isolated environment and a fresh virtualenv with every dependency
installed from pip's cache): ``python -m pytest -m slow tests/test_release.py`` or
``tox -e wheel``.
"""

from __future__ import annotations

import email
import email.message
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import pytest_groove
from conftest import REPO_ROOT, copy_example_kb

pytestmark = pytest.mark.slow

#: a Markdown link or image target that is not an absolute URL breaks on a package index
_RELATIVE_LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:)([^)\s]+)\)")


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=600
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{' '.join(args)} exited {result.returncode}:\n{output}"
    return output


def _clean_env() -> dict[str, str]:
    """The environment without anything that would point Python at this checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env.pop("VIRTUAL_ENV", None)
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO_ROOT)], cwd=REPO_ROOT)
    return out


@pytest.fixture(scope="module")
def wheel(dist: Path) -> Path:
    wheels = sorted(dist.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_bytes(archive.read(name))


def test_build_makes_an_sdist_and_a_wheel_that_twine_accepts(dist: Path) -> None:
    version = pytest_groove.__version__
    assert sorted(p.name for p in dist.iterdir()) == [
        f"pytest_groove-{version}-py3-none-any.whl",
        f"pytest_groove-{version}.tar.gz",
    ]
    output = _run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())], cwd=dist
    )
    assert output.count("PASSED") == 2, output


def test_the_wheel_holds_the_package_and_nothing_else(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top_level = {name.split("/", 1)[0] for name in names}
    assert top_level == {"pytest_groove", f"pytest_groove-{pytest_groove.__version__}.dist-info"}
    assert "pytest_groove/py.typed" in names
    assert "pytest_groove/__init__.py" in names
    shipped = {name for name in names if name.startswith("pytest_groove/")}
    in_tree = {
        path.relative_to(REPO_ROOT).as_posix()
        for path in (REPO_ROOT / "pytest_groove").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert shipped == in_tree, {"missing": in_tree - shipped, "extra": shipped - in_tree}


def test_the_sdist_can_run_the_suite_and_holds_no_local_state(dist: Path, tmp_path: Path) -> None:
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    tracked = subprocess.run(
        ["git", "ls-files", "tests", "examples", "docs"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if tracked.returncode == 0:  # in a checkout: everything tracked there ships
        assert set(tracked.stdout.split()) <= names
    assert {"conftest.py", "CHANGELOG.md", "tox.ini", "constraints/lowest.txt"} <= names
    assert "examples/kb/.groove-eval.yml" in names
    # every test file and the data it reads ship, checkout or not
    in_tree = {
        path.relative_to(REPO_ROOT).as_posix()
        for path in (REPO_ROOT / "tests").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and ".hypothesis" not in path.parts
    }
    assert in_tree <= names, sorted(in_tree - names)[:10]
    leaked = [
        n
        for n in names
        if "__pycache__" in n
        or "/.groove/" in n
        or n.rsplit("/", 1)[-1].startswith(".groove-eval-history.json")
    ]
    assert not leaked, leaked
    # ... and the suite runs from the unpacked sdist: every test module imports and its
    # tests are collected, as many as from the checkout
    unpacked = tmp_path / "sdist"
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    (root,) = unpacked.iterdir()
    collected = [_collected_count(folder) for folder in (root, REPO_ROOT)]
    assert collected[0] == collected[1] > 1000, collected


def _collected_count(folder: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    match = re.search(r"(\d+)(?:/\d+)? tests? collected", done.stdout)
    assert match is not None, done.stdout[-500:]
    return int(match.group(1))


def test_the_metadata_is_the_project_page(wheel: Path) -> None:
    meta = _metadata(wheel)
    assert meta["Version"] == pytest_groove.__version__
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta["License-Expression"] == "MIT"
    description = meta.get_payload()
    assert isinstance(description, str)
    assert description.startswith("# pytest-groove")
    assert not _RELATIVE_LINK.findall(description), "relative links break on a package index"
    python_classifiers = {
        c.rsplit(":: ", 1)[1]
        for c in meta.get_all("Classifier", [])
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    }
    assert python_classifiers == {"3.11", "3.12", "3.13"}


def test_the_installed_wheel_runs_the_readme_job(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    bin_dir = venv / "bin"
    env = _clean_env()
    _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], cwd=tmp_path, env=env)

    # a user's project: the example KB, and no checkout on sys.path
    project = tmp_path / "project"
    copy_example_kb(project / "examples" / "kb")

    where = _run(
        [str(bin_dir / "python"), "-c", "import pytest_groove; print(pytest_groove.__file__)"],
        cwd=project,
        env=env,
    )
    assert Path(where.strip()).is_relative_to(venv), where

    version = _run([str(bin_dir / "groove"), "--version"], cwd=project, env=env)
    assert version.strip() == f"groove {pytest_groove.__version__}"

    output = _run([str(bin_dir / "pytest"), "--groove-kb", "examples/kb"], cwd=project, env=env)
    assert "groove retrieval quality" in output
    assert re.search(r"\b\d+ passed\b", output), output
    assert (project / "examples" / "kb" / ".groove-eval-history.json").is_file()
