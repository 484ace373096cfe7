"""Chunks of the two evaluation corpora, as the index stores them (hash embedder)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from pytest_groove.engine.builtin import open_engine
from pytest_groove.evaluation.golden.file import load_golden
from pytest_groove.kb.source.markdown import heading_of
from pytest_groove.settings.config import IndexSettings, Settings

CORPORA = REPO_ROOT / "tests" / "corpora"


def _is_heading_line(line: str) -> bool:
    stripped = line.strip()
    return not stripped or heading_of(line) is not None or stripped.startswith("# ")


@pytest.mark.parametrize("corpus", ["kb-eval", "kb-bilingual"])
def test_no_chunk_is_only_headings(corpus: str, tmp_path: Path) -> None:
    kb = tmp_path / corpus
    shutil.copytree(CORPORA / corpus, kb)
    with open_engine(kb, Settings(index=IndexSettings(model="hash")), progress=False) as engine:
        chunks = list(engine.iter_chunk_texts())
    assert chunks
    heading_only = [
        (c.path, c.heading)
        for c in chunks
        if all(_is_heading_line(line) for line in c.content.splitlines())
    ]
    assert heading_only == []


def test_bilingual_golden_has_the_promised_shape() -> None:
    kb = CORPORA / "kb-bilingual"
    golden = load_golden(CORPORA / "kb-bilingual-golden.yml", kb)
    notes = sorted(p.relative_to(kb).as_posix() for p in kb.rglob("*.md"))
    expected = {e.path for q in golden.queries for e in q.expected}
    assert len(notes) >= 25 and expected <= set(notes)
    assert {n.endswith(".ja.md") for n in notes} == {True, False}
    assert len(golden.queries) >= 40
    cross = [q for q in golden.queries if q.id.startswith("x-")]
    for q in cross:  # each asks in one language for a note written in the other
        asks_japanese = any(
            "\u3040" <= ch <= "\u30ff" or "\u4e00" <= ch <= "\u9fff" for ch in q.query
        )
        assert asks_japanese != q.expected[0].path.endswith(".ja.md"), q.id
    assert len(cross) >= 10
    assert sum(len(q.expected) > 1 for q in golden.queries) >= 8
