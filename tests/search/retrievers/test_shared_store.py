"""A retriever over a store that holds the knowledge base and other sources too.

A production index often holds the KB's notes beside tickets, another wiki, an archive:
the hits of those sources name no file of the KB, yet the run measures the KB's
answers all the same.  Such a run is measured -- the other documents scored as misses
and counted in one warning -- while paths that are KB files spelt another way
(``kb/ops/a.md``) still stop it.  The stores here are the real libraries' (Qdrant in
memory, LangChain's loaders and BM25Retriever); nothing is downloaded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_groove.search.retrievers.hit_checks import hits_outside_kb, some_hits_outside_kb
from tests.helpers.cli_invoke import CliRun, invoke
from tests.helpers.kb_files import write_notes

NOTES = {
    "ops/rollback.md": "# Rollback\n\nTo roll back a bad deploy, redeploy the previous build.\n",
    "ops/release.md": "# Release\n\nWe ship releases on Tuesdays after the freeze.\n",
    "api/tokens.md": "# Tokens\n\nAPI tokens are rotated every ninety days.\n",
    "api/limits.md": "# Limits\n\nThe rate limit is one hundred requests per minute.\n",
    "team/oncall.md": "# On call\n\nThe pager rotates weekly between the engineers.\n",
    "team/holidays.md": "# Holidays\n\nBook holidays in the shared calendar a month ahead.\n",
}

GOLDEN = """\
queries:
  - id: rollback
    query: "roll back a bad deploy"
    expected: [{path: ops/rollback.md}]
  - id: release
    query: "which day do we ship releases"
    expected: [{path: ops/release.md}]
  - id: tokens
    query: "how often are api tokens rotated"
    expected: [{path: api/tokens.md}]
  - id: limits
    query: "rate limit requests per minute"
    expected: [{path: api/limits.md}]
  - id: oncall
    query: "who carries the pager this week"
    expected: [{path: team/oncall.md}]
  - id: holidays
    query: "book holidays in the calendar"
    expected: [{path: team/holidays.md}]
"""

#: a Qdrant collection in memory holding the KB's notes and, for each, tickets and an
#: archived page that quote it: most hits of every query are those other documents
QDRANT_STORE = """\
import hashlib
import re
from pathlib import Path

from qdrant_client import QdrantClient, models

KB = Path({kb!r})
EXTRA = {extra!r}
COPIES = {copies!r}
CHUNKS = {chunks!r}
SIZE = 1024


def embed(text):
    vector = [0.0] * SIZE
    for word in re.findall(r"\\w+", text.lower()):
        vector[int(hashlib.sha1(word.encode()).hexdigest(), 16) % SIZE] += 1.0
    vector[0] += 0.01
    return vector


notes = [
    (path.relative_to(KB).as_posix(), path.read_text(encoding="utf-8"))
    for path in sorted(KB.rglob("*.md"))
]
# each note as CHUNKS chunks of its own
documents = [(path, text) for path, text in notes for _ in range(CHUNKS)]
for n, (_, text) in enumerate(notes):
    # other sources of the same store: tickets quoting the note, an archived copy
    documents += [(other.format(n=n), f"{{other}}: {{text}}") for other in COPIES]
documents += EXTRA
client = QdrantClient(":memory:")
client.create_collection(
    "shared", vectors_config=models.VectorParams(size=SIZE, distance=models.Distance.COSINE)
)
client.upsert(
    "shared",
    points=[
        models.PointStruct(id=n, vector=embed(text), payload={{"path": path}})
        for n, (path, text) in enumerate(documents)
    ],
)


def search(query, limit):
    return client.query_points(
        "shared", query=embed(query), limit=limit, score_threshold={threshold}
    )
"""


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = write_notes(tmp_path / "kb", NOTES)
    (root / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    return root


def _store(
    tmp_path: Path,
    kb: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    copies: tuple[str, ...] = ("tickets/{n}-a.md", "tickets/{n}-b.md", "legacy/{n}.md"),
    chunks: int = 1,
    extra: tuple[tuple[str, str], ...] = (),
    threshold: float = 0.0,
) -> str:
    """The Qdrant store module in ``tmp_path``, under a name no other test imported:
    each note in ``chunks`` points, quoted by a document at each of ``copies``, and
    the ``extra`` (path, text) documents."""
    pytest.importorskip("qdrant_client")
    name = f"shared_{tmp_path.name.replace('-', '_')}"
    source = QDRANT_STORE.format(
        kb=str(kb), extra=list(extra), copies=list(copies), chunks=chunks, threshold=threshold
    )
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def _eval(kb: Path, cwd: Path, spec: str, *args: str) -> CliRun:
    return invoke("eval", "--kb-path", kb, "--retriever", spec, *args, cwd=cwd)


def _lines(done: CliRun, start: str) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith(start)]


def _recall(report: dict[str, Any]) -> dict[str, float]:
    return {q["id"]: q["metrics"]["recall_at_k"]["10"] for q in report["per_query"]}


def test_a_qdrant_store_holding_other_sources_is_measured_with_one_warning(
    kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _store(tmp_path, kb, monkeypatch)
    done = _eval(kb, tmp_path, f"{name}:search", "--format", "json", "--k", "10")
    assert done.returncode == 0, done.stderr
    assert not _lines(done, "Error:"), done.stderr
    report = json.loads(done.stdout)
    top = [hit["path"] for query in report["per_query"] for hit in query["top_k"]]
    outside = [path for path in top if path not in NOTES]
    assert len(outside) * 2 > len(top)  # most hits are the other sources'
    # every query's note is among its hits, and counts
    assert set(_recall(report).values()) == {1.0}
    (warning,) = [w for w in _lines(done, "groove eval: warning:") if "knowledge base" in w]
    assert (
        f"{len(outside)} of its {len(top)} hits, in 6 of 6 queries, name no file of the "
        f"knowledge base {kb} (e.g. {outside[0]!r}) and were scored as misses"
    ) in warning
    assert "mapped" not in warning and "built over another folder" not in warning


def test_first_queries_answered_only_by_other_sources_do_not_stop_the_run(
    kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first three golden queries' words are only in tickets: their hits name no KB
    file, which is no evidence of a path mistake (the run's hits are mostly the KB's,
    so only the early stop could refuse it)."""
    golden = GOLDEN.replace("roll back a bad deploy", "printer toner jam on floor three")
    golden = golden.replace("which day do we ship releases", "printer toner order")
    golden = golden.replace("how often are api tokens rotated", "toner jam again")
    (kb / ".groove-eval.yml").write_text(golden, encoding="utf-8")
    tickets = (
        ("tickets/printer-1.md", "printer toner jam on floor three"),
        ("tickets/printer-2.md", "toner order for the printer"),
        ("tickets/printer-3.md", "jam again in the printer"),
    )
    name = _store(tmp_path, kb, monkeypatch, copies=(), chunks=4, extra=tickets, threshold=0.3)
    done = _eval(kb, tmp_path, f"{name}:search", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    top = [hit["path"] for query in report["per_query"] for hit in query["top_k"]]
    assert len([path for path in top if path in NOTES]) * 2 > len(top)
    recall = _recall(report)
    assert recall == {
        "rollback": 0.0, "release": 0.0, "tokens": 0.0,
        "limits": 1.0, "oncall": 1.0, "holidays": 1.0,
    }  # fmt: skip
    (warning,) = [w for w in _lines(done, "groove eval: warning:") if "knowledge base" in w]
    assert "(e.g. 'tickets/printer-1.md') and were scored as misses" in warning


LANGCHAIN_PROJECT_ROOT = """\
from langchain_community.document_loaders import DirectoryLoader, TextLoader
from langchain_community.retrievers import BM25Retriever

# loaded from the project folder: the KB's notes as kb/..., the tickets as tickets/...
docs = DirectoryLoader(".", glob="**/*.md", loader_cls=TextLoader).load()
retriever = BM25Retriever.from_documents(docs, k=6)
"""


def test_kb_notes_named_from_another_root_in_a_shared_store_still_stop_the_run(
    kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LangChain's DirectoryLoader run over the project: the KB's notes come back as
    ``kb/ops/rollback.md`` beside the tickets' own paths -- a path mistake, said so."""
    pytest.importorskip("langchain_community.retrievers")
    pytest.importorskip("rank_bm25")
    write_notes(
        tmp_path / "tickets",
        {f"{n}.md": f"Ticket {n}: the customer asked how to {q}.\n" for n, q in enumerate(
            ["roll back", "ship", "rotate tokens", "raise the rate limit"]
        )},
    )  # fmt: skip
    name = f"root_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(LANGCHAIN_PROJECT_ROOT, encoding="utf-8")
    monkeypatch.delitem(sys.modules, name, raising=False)
    done = _eval(kb, tmp_path, f"{name}:retriever", "--no-history")
    assert done.returncode == 1
    (error,) = _lines(done, "Error:")
    assert f"name a file of the knowledge base {kb} (e.g. 'kb/" in error
    assert "the paths look relative to the working directory" in error
    assert not (kb / ".groove-eval-history.json").exists()


# --------------------------------------------------------------------------- the rule


KB_FILES = frozenset(NOTES)


def test_other_documents_are_no_error_however_many() -> None:
    mixed = [["ops/rollback.md", "tickets/1.md", "legacy/1.md", "https://wiki/x"]] * 3
    assert hits_outside_kb("r", mixed, KB_FILES, Path("kb")) is None
    warning = some_hits_outside_kb("r", mixed, KB_FILES, Path("kb"))
    assert warning is not None and "9 of its 12 hits, in 3 of 3 queries" in warning
    assert "(e.g. 'tickets/1.md') and were scored as misses" in warning


def test_kb_paths_spelt_another_way_are_still_an_error_or_a_warning_with_the_fix() -> None:
    spelt = [["ops/rollback.md", "ops/release.md#2", "api/tokens.md#1", "tickets/1.md"]]
    error = hits_outside_kb("r", spelt, KB_FILES, Path("kb"))
    assert error is None  # two of four: not most
    spelt = [["ops/rollback.md", "ops/release.md#2", "api/tokens.md#1", "kb/api/limits.md"]]
    error = hits_outside_kb("r", spelt, KB_FILES, Path("kb"))
    assert error is not None and error.startswith(
        "retriever r: only 1 of its 4 hits name a file of the knowledge base kb, and 3 look "
        "like paths of its files spelt another way (e.g. 'ops/release.md#2')"
    )
    assert "#fragment" in error
    few = [["ops/rollback.md", "kb/api/limits.md", "tickets/1.md"]] * 2
    warning = some_hits_outside_kb("r", few, KB_FILES, Path("kb"))
    assert warning is not None and "2 of them look like a path of its files" in warning
    assert "relative to the working directory" in warning


def test_the_early_stop_needs_kb_paths_spelt_another_way() -> None:
    others = [["tickets/1.md", "legacy/2.md"]] * 3
    assert hits_outside_kb("r", others, KB_FILES, Path("kb"), misnamed_only=True) is None
    # at the run's end, no hit naming a KB file is an error all the same
    assert hits_outside_kb("r", others, KB_FILES, Path("kb")) is not None
    moved = [["kb/ops/rollback.md", "tickets/1.md", "kb/api/tokens.md"]] * 3
    error = hits_outside_kb("r", moved, KB_FILES, Path("kb"), misnamed_only=True)
    assert error is not None and "(e.g. 'kb/ops/rollback.md')" in error


def test_a_bare_file_name_left_after_other_folders_is_another_document() -> None:
    """A flat KB (``2.md`` at its root) beside a ticket system's ``tickets/2.md``: the
    ticket is no misnamed note, but ``kb/2.md`` and ``docs/api/tokens.md`` are."""
    flat = frozenset({"2.md", "api/tokens.md"})
    assert (
        hits_outside_kb("r", [["2.md", "tickets/2.md", "/srv/tickets/2.md"]], flat, Path("kb"))
        is None
    )
    moved = [["2.md", "kb/2.md", "/app/kb/2.md", "docs/api/tokens.md"]]
    error = hits_outside_kb("r", moved, flat, Path("kb"))
    assert error is not None and "3 look like paths of its files spelt another way" in error
