"""Run-level checks of a custom retriever's hits: paths outside the KB, shallow depth."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_groove.search.retrievers.hit_checks import (
    HitCheckReport,
    check_retriever_hits,
    hits_outside_kb,
    shallow_retriever,
)
from pytest_groove.settings.config import IndexSettings
from tests.helpers.kb_files import write_notes
from tests.helpers.retriever_runs import (
    answers_module,
    errors_of,
    eval_retriever,
    golden_of,
    query_id,
    report_of,
    retriever_module,
    warnings_of,
)


def kb_file_set(kb: Path, settings: IndexSettings) -> frozenset[str]:
    """The KB's files as the index would name them (no index is opened or built)."""
    from pytest_groove.kb.source.walk import collect_files

    return frozenset(collect_files(kb, settings).files)


KB_FILES = frozenset({"guide/setup.md", "guide/faq.md", "ops/deploy.md"})


def test_paths_relative_to_the_working_directory_are_one_error_with_the_fix() -> None:
    hits = [["kb/guide/setup.md", "kb/ops/deploy.md"], ["kb/guide/faq.md"]]
    message = hits_outside_kb("lc", hits, KB_FILES, Path("kb"))
    assert message is not None and "\n" not in message
    assert message.startswith(
        "retriever lc: none of its 3 hits name a file of the knowledge base kb "
        "(e.g. 'kb/guide/setup.md'), so no golden entry can match; the paths look "
        "relative to the working directory"
    )
    assert "KB-relative path ('guide/setup.md')" in message


def test_most_hits_outside_is_an_error_and_a_few_are_not() -> None:
    mostly = [["x/guide/setup.md", "x/ops/deploy.md", "guide/faq.md"]]
    message = hits_outside_kb("r", mostly, KB_FILES, Path("/srv/kb"))
    assert message is not None and "only 1 of its 3 hits" in message
    assert "to start with x/" in message
    few = [["guide/setup.md", "stale/removed.md"], ["ops/deploy.md"]]
    assert hits_outside_kb("r", few, KB_FILES, Path("kb")) is None
    assert hits_outside_kb("r", [[], []], KB_FILES, Path("kb")) is None  # no hits: not this


@pytest.mark.parametrize(
    ("path", "fix"),
    [
        ("Guide/Setup.md", "the KB has 'guide/setup.md': paths are compared byte for byte"),
        ("docs/setup.md", "the KB has 'guide/setup.md': return paths relative to the KB"),
        ("elsewhere.md", "no KB file has that name: is the retriever built over another folder"),
    ],
)
def test_the_likely_fix_follows_the_sample_path(path: str, fix: str) -> None:
    message = hits_outside_kb("r", [[path]], KB_FILES, Path("kb"))
    assert message is not None and fix in message


@pytest.mark.parametrize(
    ("kind", "advice"),
    [
        ("langchain", "as_retriever(search_kwargs={'k': 10}), or set BM25Retriever's k = 10"),
        ("llamaindex", "index.as_retriever(similarity_top_k=10)"),
        ("callable", "it is asked for limit=10 hits: return up to that many"),
        ("http", "it is asked for limit=10 hits"),
    ],
)
def test_a_shallow_retriever_is_one_warning_with_the_knob(kind: str, advice: str) -> None:
    message = shallow_retriever("r", kind, [4, 4, 4, 10], 10)  # type: ignore[arg-type]
    assert message is not None and "\n" not in message
    assert message.startswith(
        "retriever r returned fewer than 10 hits for 3 of 4 queries (at most 4), and "
        "recall@10 counts the missing ones as misses"
    )
    assert advice in message


def test_deep_enough_or_a_small_kb_is_not_shallow() -> None:
    assert shallow_retriever("r", "langchain", [10, 10, 3], 10) is None  # a minority
    assert shallow_retriever("r", "langchain", [3, 3, 3], 10, kb_files=3) is None  # all files
    assert shallow_retriever("r", "langchain", [2, 2, 2], 10, kb_files=3) is not None
    assert shallow_retriever("r", "langchain", [], 10) is None


def test_check_retriever_hits_runs_every_check_over_a_run(tmp_path: Path) -> None:
    def check(paths: list[list[str]]) -> HitCheckReport:
        return check_retriever_hits("r", "callable", tmp_path, paths, KB_FILES, 5)

    report = check([["a/guide/faq.md"], []])
    assert report.error is not None and "'a/guide/faq.md'" in report.error
    assert len(report.warnings) == 1 and "it is asked for limit=5" in report.warnings[0]
    empty = check([[], []])
    assert empty.error is not None and "returned no hit for any of the 2 golden queries" in (
        empty.error
    )
    # under the error: a share of the queries with a hit outside the KB is a warning
    some = check([["guide/faq.md"] * 4 + ["elsewhere.md"], ["guide/faq.md"] * 5])
    assert some.error is None and len(some.warnings) == 1
    assert "1 of its 10 hits, in 1 of 2 queries" in some.warnings[0]
    fine = check([["guide/faq.md"] * 5] * 2)
    assert fine.error is None and fine.warnings == ()


def test_kb_file_set_lists_what_the_index_would(tmp_path: Path) -> None:
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "a.md").write_text("## A\n\ntext\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not markdown", encoding="utf-8")
    (tmp_path / ".groove").mkdir()
    assert kb_file_set(tmp_path, IndexSettings()) == {"guide/a.md"}


# ------------------------------------------------------------- through groove eval and pytest


PARENT = """\
from langchain_classic.retrievers import ParentDocumentRetriever
from langchain_community.document_loaders import DirectoryLoader, TextLoader
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.stores import InMemoryStore
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_text_splitters import RecursiveCharacterTextSplitter

docs = DirectoryLoader(
    {kb!r}, glob="**/*.md", loader_cls=TextLoader, loader_kwargs={{"encoding": "utf-8"}}
).load()
parent = ParentDocumentRetriever(
    vectorstore=InMemoryVectorStore(DeterministicFakeEmbedding(size=32)),
    docstore=InMemoryStore(),
    child_splitter=RecursiveCharacterTextSplitter(chunk_size=120, chunk_overlap=20),
    search_kwargs={{"k": 10}},
)
parent.add_documents(docs)
"""


def test_a_parent_document_retriever_is_told_why_it_returns_fewer_than_k(
    example_kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("langchain_classic.retrievers")
    kb = example_kb_copy
    name = retriever_module(tmp_path, PARENT.format(kb=str(kb)), monkeypatch)
    done = eval_retriever(kb, tmp_path, f"{name}:parent")
    assert done.returncode == 0, done.stderr
    (shallow,) = [w for w in warnings_of(done) if "returned fewer than 10 hits" in w]
    assert (
        "one that merges chunks into their parent documents (ParentDocumentRetriever, "
        "MultiVectorRetriever) returns fewer documents than its k by design"
    ) in shallow
    assert "raise its search_kwargs k well above 10" in shallow
    # whole files carry no heading: the heading-pinned entries are lost, and said so
    assert [w for w in warnings_of(done) if "pinned to a heading" in w]


def test_a_query_answered_only_from_outside_the_kb_does_not_stop_the_run(
    example_kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store holding another source's notes too: its first two queries' answers are
    all legacy notes, the rest are the KB's."""
    kb = example_kb_copy
    odd = [q["query"] for q in golden_of(kb)[:2]]
    name = retriever_module(tmp_path, answers_module(kb, odd), monkeypatch)
    done = eval_retriever(kb, tmp_path, f"{name}:search", "--format", "json")
    report = report_of(done)
    assert not errors_of(done) and "legacy/" not in done.stderr, done.stderr
    missed = [q["id"] for q in report["per_query"] if q["metrics"]["recall_at_k"]["10"] == 0.0]
    assert missed == [query_id(q) for q in golden_of(kb)[:2]]


def test_kb_paths_spelt_another_way_stop_after_the_first_three_queries(
    example_kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = example_kb_copy
    every = [q["query"] for q in golden_of(kb)]
    name = retriever_module(tmp_path, answers_module(kb, every, "docs/{path}"), monkeypatch)
    hits = sum(len(q["expected"]) for q in golden_of(kb)[:3])
    done = eval_retriever(kb, tmp_path, f"{name}:search")
    assert done.returncode == 1
    (error,) = errors_of(done)
    first = golden_of(kb)[0]["expected"][0]["path"]
    assert error.startswith(
        f"Error: retriever {name}:search: none of its {hits} hits in the first 3 queries "
        f"it answered name a file of the knowledge base {kb} (e.g. 'docs/{first}'), so no "
        "golden entry can match; the paths look to start with docs/"
    ), error
    assert len(sys.modules[name].CALLS) == 3  # not one query more than the evidence


def test_hits_all_of_other_documents_stop_at_the_end_of_the_run(
    example_kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first queries answered only with other documents are no evidence of a path
    mistake (a shared store may answer them from its other sources): the run goes on,
    and stops at its end only because no hit of the whole run named a KB file."""
    kb = example_kb_copy
    every = [q["query"] for q in golden_of(kb)]
    name = retriever_module(tmp_path, answers_module(kb, every), monkeypatch)
    hits = sum(len(q["expected"]) for q in golden_of(kb))
    done = eval_retriever(kb, tmp_path, f"{name}:search")
    assert done.returncode == 1
    (error,) = errors_of(done)
    assert error.startswith(
        f"Error: retriever {name}:search: none of its {hits} hits name a file of the "
        f"knowledge base {kb} (e.g. 'legacy/note-0.md'), so no golden entry can match"
    ), error
    assert len(sys.modules[name].CALLS) == len(every)


@pytest.mark.parametrize(
    "workers",
    # three pytest processes take far longer to start than the run takes: -m slow
    [[], pytest.param(["-n", "2"], marks=pytest.mark.slow)],
    ids=["one-process", "xdist"],
)
def test_under_pytest_one_odd_query_fails_alone(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    kb = write_notes(
        pytester.path / "kb",
        {f"notes/n{n}.md": f"# Note {n}\n\nAbout topic {n}.\n" for n in range(6)},
    )
    (kb / ".groove-eval.yml").write_text(
        "queries:\n"
        + "".join(
            f"  - id: q{n}\n    query: topic {n}\n    expected: [{{path: notes/n{n}.md}}]\n"
            for n in range(6)
        ),
        encoding="utf-8",
    )
    # each worker process has its own searcher: the odd query may be its first
    pytester.makepyfile(
        odd_store="def search(query, limit):\n"
        "    if query == 'topic 0':\n"
        "        return [{'path': 'legacy/0.md'}]\n"
        "    return [{'path': 'notes/n' + query.split()[-1] + '.md'}]\n"
    )
    monkeypatch.delitem(sys.modules, "odd_store", raising=False)
    args = ["--groove-kb", "kb", "--groove-retriever", "odd_store:search"]
    args += ["--groove-retriever-name", "odd-store", "-p", "no:cacheprovider"]
    if workers:
        result = pytester.runpytest_subprocess(*args, *workers)
    else:
        pytester.syspathinsert()
        result = pytester.runpytest(*args)
    result.assert_outcomes(passed=5, failed=1)
    assert "name a file of the knowledge base" not in result.stdout.str() + result.stderr.str()
