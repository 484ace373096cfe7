"""A heading line with closing hashes (``## Rate limits (HTTP 429) ##``), read the KB's
way and CommonMark's: either reading in a retriever's hit names the document's
heading.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_groove.engine.searcher import RetrieverSearcher
from pytest_groove.search.retrievers.external import from_object
from pytest_groove.settings.config import Settings
from tests.helpers.kb_files import write_notes
from tests.helpers.retriever_runs import (
    KEYWORD_NODES,
    eval_retriever,
    report_of,
    retriever_module,
)

TOKENS = """\
# Tokens

Intro about tokens, long enough to stand alone as the note's first section here.

## Rate limits (HTTP 429) ##

Back off exponentially when throttled, starting at two seconds, then double it.

## Setup

Create a sandbox tenant before the suite and delete it afterwards, every time.
"""


def test_a_heading_with_closing_hashes_matches_a_markdown_node_parser_hit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("llama_index.core")
    kb = write_notes(tmp_path / "kb", {"api/tokens.md": TOKENS})
    (kb / ".groove-eval.yml").write_text(
        "queries:\n  - id: rl\n    query: back off exponentially throttled two seconds\n"
        '    expected: [{path: api/tokens.md, heading: "Rate limits (HTTP 429) ##"}]\n',
        encoding="utf-8",
    )
    name = retriever_module(tmp_path, KEYWORD_NODES.format(kb=str(kb)), monkeypatch)
    done = eval_retriever(kb, tmp_path, f"{name}:retriever", "--format", "json")
    report = report_of(done)
    assert report["aggregate"]["recall_at_k"]["1"] == 1.0, report["per_query"]
    assert "not a heading of that document" not in done.stderr


@pytest.mark.parametrize(
    "heading",
    [
        "Rate limits (HTTP 429) ##",  # LangChain's MarkdownHeaderTextSplitter
        "## Rate limits (HTTP 429) ##",  # the heading line itself
        "Rate limits (HTTP 429)",  # a CommonMark parser's reading
        "Tokens > Rate limits (HTTP 429)",  # a breadcrumb of that reading
    ],
)
def test_either_reading_of_a_closing_hash_heading_is_the_documents(
    tmp_path: Path, heading: str
) -> None:
    kb = write_notes(tmp_path / "kb", {"api/tokens.md": TOKENS})
    told: list[str] = []
    retriever = from_object(
        lambda q, n: [{"path": "api/tokens.md", "heading": heading}],
        kb,
        name="r",
        on_warning=told.append,
    )
    (hit,) = RetrieverSearcher(retriever, kb, Settings()).search("q", 5)
    assert hit.heading == "Rate limits (HTTP 429) ##"
    assert told == []
