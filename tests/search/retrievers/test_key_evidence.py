"""A ``--retriever-heading-key`` that no hit holds stops the run, naming the keys.

The docs' Chroma example keeps the heading under ``section``; given ``sections``, every
hit read as headingless, the heading-pinned entries were lost, and the only word was
the generic advice to name the key -- which the user had done.  One hit without the
key is a note's opening section and reads as "no heading"; a key that no hit of the
run holds is a wrong key.  The stores are the real libraries' (Chroma's
EphemeralClient with an embedding function of our own, Qdrant in memory).
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest

from pytest_groove.errors import StopsTheRun
from pytest_groove.evaluation.history.file import HISTORY_FILE_NAME
from pytest_groove.search.retrievers.external import HitKeys, from_object
from tests.helpers.cli_invoke import CliRun, invoke
from tests.helpers.retriever_runs import qdrant_in_memory

#: the docs' Chroma example, with an embedding function of its own instead of vectors
#: passed in: each section's metadata holds its path under "file", its heading under
#: "section" ("" for a note's opening section)
CHROMA_STORE = """\
import hashlib
import re
from pathlib import Path

import chromadb
from chromadb import Documents, EmbeddingFunction, Embeddings


class Words(EmbeddingFunction[Documents]):
    def __init__(self) -> None:
        pass

    def __call__(self, input: Documents) -> Embeddings:
        vectors = []
        for text in input:
            vector = [0.0] * 512
            for word in re.findall(r"\\w+", text.lower()):
                vector[int(hashlib.sha1(word.encode()).hexdigest(), 16) % 512] += 1.0
            vector[0] += 0.01
            vectors.append(vector)
        return vectors

    @staticmethod
    def name() -> str:
        return "words"

    def get_config(self) -> dict:
        return {{}}

    @staticmethod
    def build_from_config(config: dict) -> "Words":
        return Words()


KB = Path({kb!r})
found = []
for path in sorted(KB.rglob("*.md")):
    parts = re.split(r"^#{{2,3}} (.+)$", path.read_text(encoding="utf-8"), flags=re.M)
    relative = path.relative_to(KB).as_posix()
    found.append((relative, "", parts[0]))
    found += [(relative, h.strip(), body) for h, body in zip(parts[1::2], parts[2::2])]
# default settings: chromadb keeps one client per process, and other tests use it too
client = chromadb.EphemeralClient()
collection = client.create_collection({collection!r}, embedding_function=Words())
collection.add(
    ids=[str(n) for n in range(len(found))],
    documents=[text for _, _, text in found],
    metadatas=[{{"file": path, "section": heading}} for path, heading, _ in found],
)


def search(query, limit):
    return collection.query(query_texts=[query], n_results=limit)
"""


def _chroma(tmp_path: Path, kb: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    pytest.importorskip("chromadb")
    name = f"chroma_{tmp_path.name.replace('-', '_')}"
    collection = f"kb-{uuid.uuid4().hex[:8]}"
    source = CHROMA_STORE.format(kb=str(kb), collection=collection)
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def _eval(kb: Path, cwd: Path, spec: str, heading_key: str, *args: str) -> CliRun:
    return invoke(
        "eval", "--kb-path", kb, "--retriever", spec, "--retriever-path-key", "file",
        "--retriever-heading-key", heading_key, *args, cwd=cwd,
    )  # fmt: skip


def _errors(done: CliRun) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("Error:")]


def test_a_misspelt_heading_key_stops_the_run_naming_the_keys_the_hits_hold(
    example_kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = example_kb_copy
    name = _chroma(tmp_path, kb, monkeypatch)
    done = _eval(kb, tmp_path, f"{name}:search", "sections")
    assert done.returncode == 1, done.stderr
    (error,) = _errors(done)
    assert error.startswith(
        f"Error: retriever {name}:search: none of its 30 hits in the first 3 queries it "
        "answered has the heading key 'sections' that --retriever-heading-key names "
        "(their metadata hold 'file', 'section')"
    ), error
    assert "(--retriever-heading-key section?)" in error
    assert error.endswith("nothing was recorded")
    assert not (kb / HISTORY_FILE_NAME).exists()
    # the key the hits hold: measured, and its headings match the pinned entries
    right = _eval(kb, tmp_path, f"{name}:search", "section", "--format", "json")
    assert right.returncode == 0, right.stderr
    pinned = [
        query["id"]
        for query in json.loads(right.stdout)["per_query"]
        if any(e["heading"] for e in query["expected"])
        and any(h["heading"] for h in query["top_k"])
    ]
    assert pinned


def test_a_run_shorter_than_the_evidence_is_judged_at_its_end(
    example_kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = example_kb_copy
    golden = tmp_path / "two.yml"
    golden.write_text(
        "queries:\n"
        "  - {id: ship, query: which days do we ship, expected: [{path: ops/release-train.md}]}\n"
        "  - {id: back, query: roll back a release, expected: [{path: ops/rollback.md}]}\n",
        encoding="utf-8",
    )
    name = _chroma(tmp_path, kb, monkeypatch)
    done = _eval(kb, tmp_path, f"{name}:search", "Section", "--golden", str(golden))
    assert done.returncode == 1, done.stderr
    (error,) = _errors(done)
    assert error.startswith(
        f"Error: retriever {name}:search: none of its 20 hits has the heading key 'Section'"
    ), error
    assert "(--retriever-heading-key section?)" in error
    assert not (kb / HISTORY_FILE_NAME).exists()


def test_under_pytest_the_first_golden_item_fails_with_the_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, example_kb_copy: Path
) -> None:
    import shutil

    shutil.copytree(example_kb_copy, pytester.path / "kb")
    name = _chroma(pytester.path, pytester.path / "kb", monkeypatch)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--groove-kb", "kb", "--groove-retriever", f"{name}:search",
        "--groove-retriever-path-key", "file", "--groove-retriever-heading-key", "sections",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    output = result.stdout.str() + result.stderr.str()
    # the third query searched stops the golden queries: the later ones are skipped
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped") == 11 and outcomes.get("failed", 0) >= 1, outcomes
    assert "has the heading key 'sections' that --groove-retriever-heading-key names" in output
    assert "(--groove-retriever-heading-key section?)" in output
    assert not (pytester.path / "kb" / HISTORY_FILE_NAME).exists()


# --------------------------------------------------------------------------- Qdrant


def _qdrant(payloads: list[dict[str, object]]) -> object:
    """A search over a Qdrant collection in memory holding ``payloads``, every point
    as near to every query (the order is Qdrant's)."""
    client = qdrant_in_memory([([1.0, 0.1 * n], payload) for n, payload in enumerate(payloads)])

    def search(query: str, limit: int) -> object:
        return client.query_points("kb", query=[1.0, 0.0], limit=limit)

    return search


def test_hits_without_the_key_beside_hits_with_it_read_as_no_heading(tmp_path: Path) -> None:
    """Opening sections carry no "section" key in this payload: no heading, no stop."""
    payloads: list[dict[str, object]] = [{"path": "a.md"}, {"path": "a.md", "section": "Usage"}]
    payloads += [{"path": "b.md"}] * 3
    retriever = from_object(_qdrant(payloads), tmp_path, keys=HitKeys(heading="section"))
    for _ in range(5):
        hits = retriever.search("q", 5)
    assert [hit.heading for hit in hits] == [None, "Usage", None, None, None]
    assert retriever.heading_key_problem() is None


def test_a_payload_langchain_wrote_suggests_the_dotted_key(tmp_path: Path) -> None:
    payloads: list[dict[str, object]] = [
        {"page_content": "text", "metadata": {"source": "a.md", "section": "Usage"}}
    ] * 2
    retriever = from_object(
        _qdrant(payloads), tmp_path, keys=HitKeys(path="metadata.source", heading="section")
    )
    retriever.search("q", 5)
    retriever.search("q", 5)
    with pytest.raises(StopsTheRun) as stopped:
        retriever.search("q", 5)
    message = stopped.value.message
    assert "(their metadata hold 'metadata.section', 'metadata.source', 'page_content')" in (
        message
    )
    assert "(--retriever-heading-key metadata.section?)" in message
