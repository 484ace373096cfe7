"""Why a hit's path names no KB file, said as the fix: an encoding or normalisation
form, a store built at another location, a chunk id after the file name.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from pytest_groove.search.retrievers.hit_checks import hits_outside_kb
from tests.helpers.retriever_runs import (
    errors_of,
    eval_retriever,
    retriever_module,
)
from tests.search.retrievers.test_hit_paths import CAFE, SPACED


@pytest.mark.parametrize(
    ("path", "advice"),
    [
        (
            "kb/ops/release%20train.md",
            "the paths look percent-encoded ('kb/ops/release%20train.md' is "
            "'kb/ops/release train.md' once decoded), and then the paths look relative to "
            "the working directory",
        ),
        (
            unicodedata.normalize("NFD", "docs/" + CAFE),
            "the paths look spelt in another Unicode normalisation form than the KB's file names",
        ),
    ],
)
def test_the_advice_names_encoding_or_normalisation_as_the_cause(path: str, advice: str) -> None:
    message = hits_outside_kb("r", [[path]], {CAFE, SPACED}, Path("kb"))
    assert message is not None and advice in message, message
    assert "is the retriever built over another folder" not in message


def test_a_store_built_at_another_location_is_named_as_such(
    example_kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Absolute paths from the image the store was built in (/app/kb/...)."""
    kb = example_kb_copy
    name = retriever_module(
        tmp_path,
        "import pathlib\n"
        f"FILES = sorted(p.relative_to({str(kb)!r}).as_posix() for p in "
        f"pathlib.Path({str(kb)!r}).rglob('*.md'))\n"
        "def search(query, limit):\n"
        "    return [{'path': '/app/kb/' + f} for f in FILES[:limit]]\n",
        monkeypatch,
    )
    done = eval_retriever(kb, tmp_path, f"{name}:search")
    (error,) = errors_of(done)
    assert "the store was built at another location (/app/kb): set each hit's path" in error
    # the sample is a hit whose re-rooted path keeps a folder of the KB: a bare file
    # name left (README.md) could as well be another source's file
    assert "(e.g. '/app/kb/api/authentication.md')" in error
    assert "to the KB-relative path ('api/authentication.md')" in error
    assert not (kb / ".groove-eval-history.json").exists()


@pytest.mark.parametrize("suffix", ["_part_0", ":12", "::chunk-3", "/2", "@v2"])
def test_a_chunk_id_after_the_file_name_gets_the_precise_hint(suffix: str) -> None:
    path = f"guide/setup.md{suffix}"
    message = hits_outside_kb("r", [[path]], {"guide/setup.md", "guide/faq.md"}, Path("kb"))
    assert message is not None
    assert (
        f"the paths carry a suffix after the file name ({path!r}, a chunk or node id?): "
        "return the file's path alone ('guide/setup.md'" in message
    )


def test_a_longer_kb_name_is_no_suffix_of_a_shorter_one() -> None:
    kb_files = {"a.md", "a.md.bak", "b.md"}
    message = hits_outside_kb("r", [["a.md.bak#3"]], kb_files, Path("kb"))
    assert message is not None and "return the file's path alone ('a.md.bak')" in message
    # a name that goes on with letters is another file, not a suffix
    other = hits_outside_kb("r", [["b.mdx"]], kb_files, Path("kb"))
    assert other is not None and "suffix" not in other and "fragment" not in other


def test_bare_file_names_are_misnamed_kb_paths_with_the_fix(tmp_path: Path) -> None:
    from pytest_groove.search.retrievers.path_advice import PathJudge

    judge = PathJudge({"ops/rollback.md", "api/tokens.md", "README.md"}, tmp_path)
    fix = judge.misnamed("rollback.md")
    assert fix is not None and fix.startswith(
        "the paths are bare file names ('rollback.md'; the KB has 'ops/rollback.md')"
    )
    assert "store_full_path=True" in fix  # Haystack's converters keep only the name
    assert judge.misnamed("tokens.txt") is None  # no KB file of that name


#: a store built over file names only: every hit a KB file's bare name
BARE_NAMES = """\
import pathlib
CALLS = pathlib.Path(__file__).with_name("calls.txt")

def search(query, limit):
    with CALLS.open("a") as calls:
        calls.write(query + "\\n")
    return [{"path": "rollback.md"}, {"path": "on-call.md"}]
"""


def test_bare_file_names_stop_the_run_after_the_first_queries(
    example_kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = retriever_module(tmp_path, BARE_NAMES, monkeypatch)
    done = eval_retriever(example_kb_copy, tmp_path, f"{name}:search")
    (error,) = errors_of(done)
    assert "in the first 3 queries it answered" in error, error
    assert "the paths are bare file names" in error
    assert len((tmp_path / "calls.txt").read_text().splitlines()) == 3  # of 14
