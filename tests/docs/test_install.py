"""The install lines of the README and the CI recipes work as written.

pytest-groove is not on a package index, the HTML report needs the ``plots`` extra,
and ``python -m build`` needs the ``build`` package: a recipe that forgets one of these
fails for whoever copies it (exit 4 for ``--groove-html`` without matplotlib).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO_ROOT

ROOT = REPO_ROOT
PAGES = [ROOT / "README.md", ROOT / "docs" / "ci.md", ROOT / "docs" / "eval.md"]
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_PIP = re.compile(r"pip install\s+(?P<what>\S+)")


def _blocks(page: Path) -> list[str]:
    return [body for _lang, body in _BLOCK.findall(page.read_text("utf-8"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_recipe_writing_the_html_report_installs_the_plots_extra(page: Path) -> None:
    for block in _blocks(page):
        if "--groove-html" not in block and not re.search(r"groove eval .*--html", block):
            continue
        installs = [m.group("what").strip("'\"") for m in _PIP.finditer(block)]
        assert installs, f"{page.name}: a recipe writes HTML without installing:\n{block}"
        assert all("[plots]" in what for what in installs if "groove" in what), (
            f"{page.name}: --groove-html needs pytest-groove[plots]:\n{block}"
        )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_recipe_installs_from_a_package_index(page: Path) -> None:
    for block in _blocks(page):
        for match in _PIP.finditer(block):
            what = match.group("what").strip("'\"")
            assert not what.startswith("pytest-groove"), (
                f"{page.name}: pytest-groove is not published; install a checkout or a "
                f"wheel: {match.group(0)}"
            )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_python_m_build_comes_after_installing_build(page: Path) -> None:
    text = page.read_text("utf-8")
    for found in re.finditer(r"python -m build", text):
        before = text[max(0, found.start() - 200) : found.start()]
        assert "pip install build" in before, f"{page.name}: `python -m build` needs build"


def test_the_readme_says_what_the_test_extra_installs() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    names = [
        re.split(r"[<>=!~\[ ;]", req, maxsplit=1)[0]
        for req in extras["optional-dependencies"]["test"]
    ]
    readme = (ROOT / "README.md").read_text("utf-8")
    said = readme[readme.index("The `test` extra installs") :].split("\n\n", 1)[0]
    missing = [name for name in names if f"`{name}`" not in said]
    assert not missing, f"README.md: the test extra's paragraph does not name {missing}"
    assert "minutes" in said
