"""The support matrix is stated in three places that must agree.

pyproject.toml declares the floors and the Python classifiers, constraints/lowest.txt
pins the floors for the "lowest" tox environments, and tox.ini lists the Pythons the
matrix runs on.  A floor raised in one place and not the other would make the
"lowest" run test something other than what users are promised.
"""

from __future__ import annotations

import configparser
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections import defaultdict

from packaging.requirements import Requirement
from packaging.specifiers import Specifier
from packaging.utils import canonicalize_name
from packaging.version import Version

import pytest_groove
from conftest import REPO_ROOT

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
LOWEST = REPO_ROOT / "constraints" / "lowest.txt"
#: test-extra tools that check or package the code rather than run it: not pinned
TOOLS = frozenset({"mypy", "ruff", "build", "twine"})


def _declared_floors() -> dict[str, Version]:
    """``name -> floor`` of every ``>=`` requirement the suite depends on."""
    project = PYPROJECT["project"]
    extras = project["optional-dependencies"]
    floors: dict[str, Version] = {}
    for line in [*project["dependencies"], *extras["test"], *extras["plots"]]:
        requirement = Requirement(line)
        for spec in requirement.specifier:
            if spec.operator == ">=":
                floors[canonicalize_name(requirement.name)] = Version(spec.version)
    return {name: floor for name, floor in floors.items() if name not in TOOLS}


def _pins() -> dict[str, list[Version]]:
    """``name -> pinned versions`` (one per Python range) of constraints/lowest.txt."""
    pins: dict[str, list[Version]] = defaultdict(list)
    for raw in LOWEST.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"constraints/lowest.txt pins exactly: {raw!r}"
        pins[canonicalize_name(requirement.name)].append(Version(spec.version))
    return pins


def _classifier_pythons() -> set[str]:
    return {
        c.rsplit(":: ", 1)[1]
        for c in PYPROJECT["project"]["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    }


def _tox_pythons() -> set[str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(REPO_ROOT / "tox.ini", encoding="utf-8")
    env_list = parser["tox"]["env_list"]
    found: set[str] = set()
    for minors in re.findall(r"py3\{([\d,]+)\}-", env_list):
        found.update(f"3.{minor}" for minor in minors.split(","))
    return found


def test_every_floor_is_pinned_for_the_lowest_run() -> None:
    floors = _declared_floors()
    pins = _pins()
    runtime = {
        canonicalize_name(Requirement(line).name) for line in PYPROJECT["project"]["dependencies"]
    }
    assert runtime <= floors.keys(), "every runtime dependency declares a floor"
    missing = floors.keys() - pins.keys()
    assert not missing, f"constraints/lowest.txt pins no version of {sorted(missing)}"
    wrong = {
        name: (str(floors[name]), [str(v) for v in versions])
        for name, versions in pins.items()
        if name in floors and min(versions) != floors[name]
    }
    assert not wrong, f"the lowest pin differs from the declared floor: {wrong}"


def test_the_tested_pythons_are_the_classified_ones() -> None:
    pythons = _classifier_pythons()
    assert pythons == _tox_pythons()
    requires = Specifier(PYPROJECT["project"]["requires-python"])
    assert requires.operator == ">="
    assert requires.version == min(pythons, key=Version)


def test_groove_version_is_the_installed_version() -> None:
    """One version, in ``pytest_groove.__version__``: the built metadata reads it from
    there (pyproject's dynamic version) and ``groove --version`` prints it."""
    installed = importlib.metadata.version("pytest-groove")
    assert installed == pytest_groove.__version__
    groove = shutil.which("groove", path=os.path.dirname(sys.executable))
    assert groove is not None, "the groove console script is not installed beside python"
    result = subprocess.run(
        [groove, "--version"], capture_output=True, text=True, check=False, timeout=60
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, f"groove {installed}\n", "")
