"""The ``hash`` embedder: lexical, deterministic, dependency-free."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tracemalloc
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_groove.embed import hashing
from pytest_groove.embed.base import Embedder
from pytest_groove.embed.hashing import HASH_DIMENSION, HashEmbedder, normalise_text

#: sha256 of the float32 bytes for two fixed texts.  The index identity is just the
#: name "hash", so a silent change of the recipe would mix incompatible vectors in
#: existing indexes; if you change the recipe on purpose, rename the model.
_PINNED = "335437281ebe7a66627c471c27981d06c8fb0562095c7241fbc038882f4927ff"
_PINNED_TEXTS = ["Hello, world!", "データベースのバックアップ"]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_protocol_shape_dtype_and_norm() -> None:
    embedder = HashEmbedder()
    assert isinstance(embedder, Embedder)
    assert (embedder.name, embedder.dimension) == ("hash", HASH_DIMENSION) == ("hash", 256)
    vectors = embedder.embed_passages(["alpha beta", "gamma", "δέλτα 日本語"])
    assert vectors.shape == (3, 256)
    assert vectors.dtype == np.float32
    assert vectors.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_recipe_is_pinned() -> None:
    vectors = HashEmbedder().embed_passages(_PINNED_TEXTS)
    assert hashlib.sha256(vectors.tobytes()).hexdigest() == _PINNED


def test_queries_and_passages_are_identical() -> None:
    texts = ["how do I roll back a deploy?", "Rollback procedure"]
    embedder = HashEmbedder()
    assert embedder.embed_queries(texts).tobytes() == embedder.embed_passages(texts).tobytes()


def test_empty_input_and_empty_texts() -> None:
    embedder = HashEmbedder()
    assert embedder.embed_passages([]).shape == (0, 256)
    vectors = embedder.embed_passages(["", "  \n\t ", "x"])
    assert not vectors[0].any() and not vectors[1].any()
    assert np.linalg.norm(vectors[2]) == pytest.approx(1.0, abs=1e-6)


def test_case_whitespace_and_width_are_normalised() -> None:
    embedder = HashEmbedder()
    base = embedder.embed_queries(["hello world abc"])
    for variant in ["HELLO   World\tABC", "  hello\nworld abc  ", "ｈｅｌｌｏ　ｗｏｒｌｄ　ＡＢＣ"]:
        assert embedder.embed_queries([variant]).tobytes() == base.tobytes(), variant
    assert normalise_text(" Straße\u00a0X ") == " strasse x "


def test_it_is_lexical_not_semantic() -> None:
    """Shared character sequences make texts close; shared meaning does not."""
    embedder = HashEmbedder()
    backup, backup_again, canary = embedder.embed_queries(
        ["database backup schedule", "backup of the database", "canary deploy rollout"]
    )
    assert _cos(backup, backup_again) > 0.5
    assert _cos(backup, canary) < 0.2
    car, automobile = embedder.embed_queries(["car", "automobile"])
    assert _cos(car, automobile) < 0.2


def test_identical_across_processes_and_hash_seeds() -> None:
    """The buckets come from BLAKE2b, not Python's per-process salted hash()."""
    code = (
        "import hashlib\n"
        "from pytest_groove.embed.hashing import HashEmbedder\n"
        f"v = HashEmbedder().embed_passages({_PINNED_TEXTS!r})\n"
        "print(hashlib.sha256(v.tobytes()).hexdigest())\n"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert digests == {_PINNED}


@given(st.lists(st.text(max_size=200), max_size=12))
def test_rows_do_not_depend_on_batching(texts: list[str]) -> None:
    embedder = HashEmbedder()
    together = embedder.embed_passages(texts)
    one_by_one = [embedder.embed_passages([t]) for t in texts]
    assert together.shape == (len(texts), 256)
    for row, single in zip(together, one_by_one, strict=True):
        assert row.tobytes() == single[0].tobytes()


@given(st.text(max_size=500))
def test_any_text_gives_a_finite_unit_or_zero_vector(text: str) -> None:
    vector = HashEmbedder().embed_queries([text])[0]
    assert np.all(np.isfinite(vector))
    norm = float(np.linalg.norm(vector))
    if not normalise_text(text):
        assert norm == 0.0
    else:  # zero only if signed collisions cancel every gram, which is legal
        assert norm == 0.0 or norm == pytest.approx(1.0, abs=1e-5)


def _recipe(text: str) -> np.ndarray:
    """The module docstring's recipe, one gram at a time."""
    padded = normalise_text(text)
    counts = np.zeros(HASH_DIMENSION, dtype=np.float64)
    for at in range(len(padded) - 2):
        gram = padded[at : at + 3].encode("utf-8", "surrogatepass")
        value = int.from_bytes(hashlib.blake2b(gram, digest_size=8).digest(), "little")
        counts[value % HASH_DIMENSION] += -1.0 if (value >> 63) & 1 else 1.0
    vector = counts.astype(np.float32)
    norm = np.linalg.norm(vector)
    return vector / norm if norm else vector


#: ASCII (the table lookup) mixed with other characters (the hashed path)
_MIXED_TEXT = st.text(
    alphabet=st.sampled_from(list("abcXYZ 09-!\t\u00e9\u00df\uff21\u30c7\u65e5\U0001f600\ud800")),
    max_size=120,
)


@given(st.lists(_MIXED_TEXT, min_size=1, max_size=8))
def test_vectors_follow_the_recipe_gram_by_gram(texts: list[str]) -> None:
    vectors = HashEmbedder().embed_passages(texts)
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector, _recipe(text), rtol=0, atol=1e-6)


@given(st.lists(_MIXED_TEXT, min_size=1, max_size=8), st.integers(min_value=3, max_value=40))
def test_long_texts_read_in_windows_are_the_recipe(texts: list[str], window: int) -> None:
    """A pass of few characters cuts texts into overlapping windows: every gram once."""
    with patch.object(hashing, "_SLICE_CHARS", window):
        vectors = HashEmbedder().embed_passages(texts)
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector, _recipe(text), rtol=0, atol=1e-6)


def test_a_long_text_costs_one_pass_of_memory() -> None:
    """The gram arrays of a pass take ~100 bytes a character: a 2.5-million-character
    text took 250 MiB before it was read in windows of ``_SLICE_CHARS``."""
    text = ("index chunk query vector " * 100_000)[:2_500_000]
    tracemalloc.start()
    try:
        vector = HashEmbedder().embed_passages([text, "short"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    assert vector[0].tobytes() == HashEmbedder().embed_passages([text])[0].tobytes()
