"""The custom-retriever door, second review: losses that were silent or stopped a run.

- hits of the right file without a heading, scored 0 on entries pinned to a heading;
- one query whose hits all lie outside the KB, which stopped the whole run;
- a KB path reached through a symlink, refused as outside the KB;
- a heading line with closing hashes, read two ways;
- percent-encoded and Unicode-normalised paths, mapped when they name one KB file;
- a store built at another location, and chunk ids after the file name, named as such.

Real libraries where the defect involves one (LangChain's loaders, splitter and
BM25Retriever, LlamaIndex's reader and MarkdownNodeParser); nothing is downloaded.
"""

from __future__ import annotations

import json
import sys
import unicodedata
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from pytest_groove.engine.searcher import RetrieverSearcher
from pytest_groove.search.retrievers.external import from_object, kb_relative
from pytest_groove.search.retrievers.hit_checks import hits_outside_kb
from pytest_groove.search.retrievers.hit_paths import kb_path_for
from pytest_groove.settings.config import Settings
from tests.helpers.cli_invoke import CliRun, invoke
from tests.helpers.kb_files import write_notes


def _module(tmp_path: Path, source: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A retriever module in ``tmp_path`` under a name no other test imported."""
    name = f"team_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def _eval(kb: Path, cwd: Path, spec: str, *args: str) -> CliRun:
    return invoke("eval", "--kb-path", kb, "--retriever", spec, "--no-history", *args, cwd=cwd)


def _warnings(done: CliRun) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("groove eval: warning:")]


def _errors(done: CliRun) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("Error:")]


def _report(done: CliRun) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


#: a callable over the golden file: each query answered with its expected entries
#: (path and heading), except the queries ODD names, answered with other notes
ANSWERS = """\
import yaml

CALLS = []
GOLDEN = yaml.safe_load(open({golden!r}, encoding="utf-8"))["queries"]
ANSWER = {{q["query"]: q["expected"] for q in GOLDEN}}
ODD = {odd!r}
OUTSIDE = {outside!r}


def search(query, limit):
    CALLS.append(query)
    if query in ODD:
        # as many hits as the KB's answer would have
        expected = enumerate(ANSWER[query])
        return [{{"path": OUTSIDE.format(n=n, path=e["path"])}} for n, e in expected]
    return [{{"path": e["path"], "heading": e.get("heading"), "score": 1.0}} for e in ANSWER[query]]
"""


def _golden(kb: Path) -> list[dict[str, Any]]:
    import yaml

    queries: list[dict[str, Any]] = yaml.safe_load(
        (kb / ".groove-eval.yml").read_text(encoding="utf-8")
    )["queries"]
    return queries


def _qid(query: dict[str, Any]) -> str:
    """A golden query's id: its own, else the first 32 code points of its text."""
    return str(query.get("id", query["query"][:32]))


def _answers(kb: Path, odd: list[str], outside: str = "legacy/note-{n}.md") -> str:
    """The module: ``odd`` queries answered with ``outside`` paths (``{n}`` the hit's
    place, ``{path}`` the expected entry's path), the others with their entries."""
    return ANSWERS.format(golden=str(kb / ".groove-eval.yml"), odd=odd, outside=outside)


# --------------------------------------------------------------------------- F1


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
    name = _module(tmp_path, TUTORIAL.format(kb=str(kb)), monkeypatch)
    done = _eval(kb, tmp_path, f"{name}:retriever")
    assert done.returncode == 0, done.stderr
    (lost,) = [w for w in _warnings(done) if "pinned to a heading" in w]
    assert (
        f"retriever {name}:retriever: " in lost
        and " golden entries pinned to a heading, in " in lost
        and " of 14 queries, had their file among the hits but no hit of that file carried "
        "a heading, so they were scored as misses (e.g. query "
        in lost
    ), lost
    pinned = {_qid(q) for q in _golden(kb) if any(e.get("heading") for e in q["expected"])}
    assert any(f"(e.g. query {qid!r} expects " in lost for qid in pinned), lost
    assert "MarkdownHeaderTextSplitter" in lost and "--retriever-heading-key" in lost
    # split at the headings, the same KB gives no such warning
    sections = _eval(kb, tmp_path, f"{name}:sections_retriever")
    assert sections.returncode == 0, sections.stderr
    assert not [w for w in _warnings(sections) if "pinned to a heading" in w]


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
    name = _module(tmp_path, PARENT.format(kb=str(kb)), monkeypatch)
    done = _eval(kb, tmp_path, f"{name}:parent")
    assert done.returncode == 0, done.stderr
    (shallow,) = [w for w in _warnings(done) if "returned fewer than 10 hits" in w]
    assert (
        "one that merges chunks into their parent documents (ParentDocumentRetriever, "
        "MultiVectorRetriever) returns fewer documents than its k by design"
    ) in shallow
    assert "raise its search_kwargs k well above 10" in shallow
    # whole files carry no heading: the heading-pinned entries are lost, and said so
    assert [w for w in _warnings(done) if "pinned to a heading" in w]


# --------------------------------------------------------------------------- F2


def test_a_query_answered_only_from_outside_the_kb_does_not_stop_the_run(
    example_kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store holding another source's notes too: its first two queries' answers are
    all legacy notes, the rest are the KB's."""
    kb = example_kb_copy
    odd = [q["query"] for q in _golden(kb)[:2]]
    name = _module(tmp_path, _answers(kb, odd), monkeypatch)
    done = _eval(kb, tmp_path, f"{name}:search", "--format", "json")
    report = _report(done)
    assert not _errors(done) and "legacy/" not in done.stderr, done.stderr
    missed = [q["id"] for q in report["per_query"] if q["metrics"]["recall_at_k"]["10"] == 0.0]
    assert missed == [_qid(q) for q in _golden(kb)[:2]]


def test_kb_paths_spelt_another_way_stop_after_the_first_three_queries(
    example_kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = example_kb_copy
    every = [q["query"] for q in _golden(kb)]
    name = _module(tmp_path, _answers(kb, every, "docs/{path}"), monkeypatch)
    hits = sum(len(q["expected"]) for q in _golden(kb)[:3])
    done = _eval(kb, tmp_path, f"{name}:search")
    assert done.returncode == 1
    (error,) = _errors(done)
    first = _golden(kb)[0]["expected"][0]["path"]
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
    every = [q["query"] for q in _golden(kb)]
    name = _module(tmp_path, _answers(kb, every), monkeypatch)
    hits = sum(len(q["expected"]) for q in _golden(kb))
    done = _eval(kb, tmp_path, f"{name}:search")
    assert done.returncode == 1
    (error,) = _errors(done)
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


# --------------------------------------------------------------------------- F3


KEYWORD_NODES = """\
from llama_index.core import Settings, SimpleDirectoryReader
from llama_index.core.node_parser import MarkdownNodeParser
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore

Settings.llm = None
documents = SimpleDirectoryReader({kb!r}, recursive=True, required_exts=[".md"]).load_data()
NODES = MarkdownNodeParser().get_nodes_from_documents(documents)


class Keywords(BaseRetriever):
    def _retrieve(self, bundle):
        words = set(bundle.query_str.lower().split())
        scored = [
            NodeWithScore(node=n, score=float(len(words & set(n.text.lower().split()))))
            for n in NODES
        ]
        return sorted(scored, key=lambda hit: -(hit.score or 0.0))[:10]


retriever = Keywords()
"""


def test_a_store_built_through_a_link_to_the_kb_is_judged_against_the_kb(
    example_kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SimpleDirectoryReader over a symlink to the KB: file_path goes through the link."""
    pytest.importorskip("llama_index.core")
    link = tmp_path / "kb_link"
    link.symlink_to(example_kb_copy, target_is_directory=True)
    name = _module(tmp_path, KEYWORD_NODES.format(kb=str(link)), monkeypatch)
    done = _eval(example_kb_copy, tmp_path, f"{name}:retriever", "--format", "json")
    report = _report(done)
    assert not _errors(done) and "outside the knowledge base" not in done.stderr
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


# --------------------------------------------------------------------------- F4


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
    name = _module(tmp_path, KEYWORD_NODES.format(kb=str(kb)), monkeypatch)
    done = _eval(kb, tmp_path, f"{name}:retriever", "--format", "json")
    report = _report(done)
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


# --------------------------------------------------------------------------- F5


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
    name = _module(tmp_path, source, monkeypatch)
    done = _eval(kb, tmp_path, f"{name}:search", "--format", "json")
    report = _report(done)
    assert report["aggregate"]["recall_at_k"]["1"] == 1.0, report["per_query"]
    assert not [w for w in _warnings(done) if "knowledge base" in w], done.stderr


def test_a_spelling_that_names_two_kb_files_is_not_mapped() -> None:
    nfc, nfd = (unicodedata.normalize(f, CAFE) for f in ("NFC", "NFD"))
    both = {nfc, nfd, SPACED}
    encoded = urllib.parse.quote(nfc)
    assert kb_path_for(encoded, both, Path("kb")) is None
    assert kb_path_for(encoded, {nfc, SPACED}, Path("kb")) == nfc
    message = hits_outside_kb("r", [[encoded]], both, Path("kb"))
    assert message is not None
    assert "the paths look percent-encoded" in message and "so it is not mapped" in message


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


# --------------------------------------------------------------------------- F6


def test_a_store_built_at_another_location_is_named_as_such(
    example_kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Absolute paths from the image the store was built in (/app/kb/...)."""
    kb = example_kb_copy
    name = _module(
        tmp_path,
        "import pathlib\n"
        f"FILES = sorted(p.relative_to({str(kb)!r}).as_posix() for p in "
        f"pathlib.Path({str(kb)!r}).rglob('*.md'))\n"
        "def search(query, limit):\n"
        "    return [{'path': '/app/kb/' + f} for f in FILES[:limit]]\n",
        monkeypatch,
    )
    done = _eval(kb, tmp_path, f"{name}:search")
    (error,) = _errors(done)
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
