"""A hit's path mapped to the KB file it names: through a symlink to the KB, and
percent-encoded or in another Unicode normalisation form, when it names one KB file.
Real libraries where the defect involves one (LlamaIndex's reader and
MarkdownNodeParser); nothing is downloaded.
"""

from __future__ import annotations

import json
import unicodedata
import urllib.parse
from pathlib import Path

import pytest

from pytest_groove.search.retrievers.external import kb_relative
from pytest_groove.search.retrievers.hit_checks import hits_outside_kb
from pytest_groove.search.retrievers.hit_paths import kb_path_for
from tests.helpers.kb_files import write_notes
from tests.helpers.retriever_runs import (
    KEYWORD_NODES,
    errors_of,
    eval_retriever,
    report_of,
    retriever_module,
    warnings_of,
)


def test_a_store_built_through_a_link_to_the_kb_is_judged_against_the_kb(
    example_kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SimpleDirectoryReader over a symlink to the KB: file_path goes through the link."""
    pytest.importorskip("llama_index.core")
    link = tmp_path / "kb_link"
    link.symlink_to(example_kb_copy, target_is_directory=True)
    name = retriever_module(tmp_path, KEYWORD_NODES.format(kb=str(link)), monkeypatch)
    done = eval_retriever(example_kb_copy, tmp_path, f"{name}:retriever", "--format", "json")
    report = report_of(done)
    assert not errors_of(done) and "outside the knowledge base" not in done.stderr
    assert not any(h["path"].startswith("/") for q in report["per_query"] for h in q["top_k"])
    assert report["aggregate"]["recall_at_k"]["10"] > 0.5


def test_a_path_through_a_link_is_resolved_only_when_outside_the_kb(tmp_path: Path) -> None:
    kb = write_notes(tmp_path / "kb", {"ops/a.md": "# A\n"})
    elsewhere = write_notes(tmp_path / "elsewhere", {"b.md": "# B\n"})
    (tmp_path / "kb_link").symlink_to(kb, target_is_directory=True)
    (tmp_path / "out_link").symlink_to(elsewhere, target_is_directory=True)
    assert kb_relative(str(tmp_path / "kb_link" / "ops" / "a.md"), kb) == "ops/a.md"
    assert kb_relative("../kb_link/ops/a.md", kb) == "ops/a.md"
    assert kb_relative(f"file://{tmp_path / 'kb_link' / 'ops' / 'a.md'}", kb) == "ops/a.md"
    # a link leading elsewhere stays outside, and the KB root is no file of it
    assert kb_relative(str(tmp_path / "out_link" / "b.md"), kb) is None
    assert kb_relative("../out_link/b.md", kb) is None
    assert kb_relative(str(tmp_path / "kb_link"), kb) is None


CAFE = "api/caché.md"


SPACED = "ops/release train.md"


SPELT = """\
import os, unicodedata, urllib.parse

KB = {kb!r}
PATHS = {paths!r}
STYLE = {style!r}


def spelt(path):
    if STYLE == "percent":
        return urllib.parse.quote(path)
    if STYLE == "nfd":
        return unicodedata.normalize("NFD", path)
    if STYLE == "nfc":
        return unicodedata.normalize("NFC", path)
    if STYLE == "absolute-percent":
        return urllib.parse.quote(os.path.join(KB, path))
    return "file://" + urllib.parse.quote(os.path.join(KB, path))


def search(query, limit):
    return [{{"path": spelt(PATHS[query]), "score": 1.0}}]
"""


def _spelt_kb(tmp_path: Path, form: str) -> tuple[Path, dict[str, str]]:
    cafe = unicodedata.normalize(form, CAFE)
    kb = write_notes(
        tmp_path / "kb",
        {cafe: "# Caching\n\nCached for five minutes.\n", SPACED: "# Trains\n\nOn Tuesdays.\n"},
    )
    (kb / ".groove-eval.yml").write_text(
        "queries:\n"
        f"  - id: cache\n    query: how long cached\n    expected: [{{path: {json.dumps(cafe)}}}]\n"
        f"  - id: train\n    query: when trains\n    expected: [{{path: {SPACED!r}}}]\n",
        encoding="utf-8",
    )
    return kb, {"how long cached": cafe, "when trains": SPACED}


@pytest.mark.parametrize(
    ("form", "style"),
    [
        ("NFC", "percent"),
        ("NFC", "nfd"),
        ("NFD", "nfc"),
        ("NFC", "absolute-percent"),
        ("NFD", "file-uri-nfc"),
    ],
)
def test_encoded_and_normalised_paths_name_their_kb_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str, style: str
) -> None:
    kb, paths = _spelt_kb(tmp_path, form)
    if style == "file-uri-nfc":  # a file URI whose (decoded) name is in the other form
        paths = {q: unicodedata.normalize("NFC", p) for q, p in paths.items()}
    source = SPELT.format(kb=str(kb), paths=paths, style=style)
    name = retriever_module(tmp_path, source, monkeypatch)
    done = eval_retriever(kb, tmp_path, f"{name}:search", "--format", "json")
    report = report_of(done)
    assert report["aggregate"]["recall_at_k"]["1"] == 1.0, report["per_query"]
    assert not [w for w in warnings_of(done) if "knowledge base" in w], done.stderr


def test_a_spelling_that_names_two_kb_files_is_not_mapped() -> None:
    nfc, nfd = (unicodedata.normalize(f, CAFE) for f in ("NFC", "NFD"))
    both = {nfc, nfd, SPACED}
    encoded = urllib.parse.quote(nfc)
    assert kb_path_for(encoded, both, Path("kb")) is None
    assert kb_path_for(encoded, {nfc, SPACED}, Path("kb")) == nfc
    message = hits_outside_kb("r", [[encoded]], both, Path("kb"))
    assert message is not None
    assert "the paths look percent-encoded" in message and "so it is not mapped" in message
