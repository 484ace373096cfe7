"""Hits of the right file without a heading, scored as misses of the entries pinned to a
heading: one warning naming the fix, spelt for the door that ran (the LangChain
tutorial's chain, an HTTP-style answer from a conftest hook).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.kb_files import write_notes
from tests.helpers.retriever_runs import (
    eval_retriever,
    golden_of,
    query_id,
    retriever_module,
    warnings_of,
)

TUTORIAL = """\
from langchain_community.document_loaders import DirectoryLoader, TextLoader
from langchain_community.retrievers import BM25Retriever
from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

docs = DirectoryLoader(
    {kb!r}, glob="**/*.md", loader_cls=TextLoader, loader_kwargs={{"encoding": "utf-8"}}
).load()
# the tutorial's chain: chunks cut by size, no heading in their metadata
chunks = RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=50).split_documents(docs)
retriever = BM25Retriever.from_documents(chunks, k=10)

splitter = MarkdownHeaderTextSplitter([("##", "Header 2"), ("###", "Header 3")])
sections = []
for doc in docs:
    for section in splitter.split_text(doc.page_content):
        section.metadata.update(doc.metadata)
        sections.append(section)
sections_retriever = BM25Retriever.from_documents(sections, k=10)
"""


def test_the_tutorial_chain_without_headings_is_one_warning_naming_the_fix(
    example_kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("langchain_community.retrievers")
    pytest.importorskip("rank_bm25")
    kb = example_kb_copy
    name = retriever_module(tmp_path, TUTORIAL.format(kb=str(kb)), monkeypatch)
    done = eval_retriever(kb, tmp_path, f"{name}:retriever")
    assert done.returncode == 0, done.stderr
    (lost,) = [w for w in warnings_of(done) if "pinned to a heading" in w]
    assert (
        f"retriever {name}:retriever: " in lost
        and " golden entries pinned to a heading, in " in lost
        and " of 14 queries, had their file among the hits but no hit of that file carried "
        "a heading, so they were scored as misses (e.g. query "
        in lost
    ), lost
    pinned = {query_id(q) for q in golden_of(kb) if any(e.get("heading") for e in q["expected"])}
    assert any(f"(e.g. query {qid!r} expects " in lost for qid in pinned), lost
    assert "MarkdownHeaderTextSplitter" in lost and "--retriever-heading-key" in lost
    # split at the headings, the same KB gives no such warning
    sections = eval_retriever(kb, tmp_path, f"{name}:sections_retriever")
    assert sections.returncode == 0, sections.stderr
    assert not [w for w in warnings_of(sections) if "pinned to a heading" in w]


def test_under_pytest_headingless_hits_are_one_warning_spelt_for_pytest(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An HTTP-style answer that leaves ``heading`` out, from the conftest hook."""
    kb = write_notes(
        pytester.path / "kb",
        {
            "deploys.md": "# Deploys\n\n## Schedule\n\nWe ship on Tuesdays.\n",
            "tokens.md": "# Tokens\n\nTokens are rotated every quarter.\n",
        },
    )
    (kb / ".groove-eval.yml").write_text(
        "queries:\n"
        "  - id: ship\n    query: which days do we ship\n"
        "    expected: [{path: deploys.md, heading: Schedule}]\n"
        "  - id: rotate\n    query: how often are tokens rotated\n"
        "    expected: [{path: tokens.md}]\n",
        encoding="utf-8",
    )
    pytester.makeconftest(
        "def pytest_groove_retriever(config):\n"
        "    def search(query, limit):\n"
        "        return [{'path': 'deploys.md', 'score': 1.0}, {'path': 'tokens.md'}]\n"
        "    return search\n"
    )
    result = pytester.runpytest("--groove-kb", "kb", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stderr.fnmatch_lines(
        [
            "groove: warning: retriever *: 1 golden entry pinned to a heading, in 1 of 2 "
            "queries, had its file among the hits but no hit of that file carried a heading, "
            "so it was scored as a miss* (e.g. query 'ship' expects 'deploys.md' heading "
            "'Schedule'; the file came back at rank 1 without one)*"
            "--groove-retriever-heading-key*"
        ]
    )


#: a retriever that splits at headings: each note's opening (its front matter, before
#: the first heading) is a chunk without one, the sections carry theirs
FRONT_MATTER = """\
def search(query, limit):
    return [
        {"path": "ops/release-train.md", "heading": None, "score": 2.0},
        {"path": "ops/on-call.md", "heading": "Handover", "score": 1.0},
    ]
"""


def test_a_front_matter_chunk_of_a_retriever_that_splits_at_headings_gets_no_split_advice(
    example_kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = retriever_module(tmp_path, FRONT_MATTER, monkeypatch)
    done = eval_retriever(example_kb_copy, tmp_path, f"{name}:search")
    assert done.returncode == 0, done.stderr
    assert not [w for w in warnings_of(done) if "split the notes at their headings" in w]
