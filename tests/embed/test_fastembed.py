"""``fastembed:<name>`` (optional extra).

Fast tests drive the wrapper through a stand-in ``fastembed`` module.  The tests
of the real package skip when fastembed is not installed, and the real-model test
also skips when the model is not in the local cache (groove never downloads).
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from pytest_groove.embed.base import Embedder
from pytest_groove.embed.fastembed import FastEmbedEmbedder
from pytest_groove.embed.registry import get_embedder, model_slug
from pytest_groove.errors import GrooveError


class _FakeTextEmbedding:
    built: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, model_name: str, **kwargs: Any) -> None:
        if model_name == "org/missing":
            raise ValueError(f"Could not load model {model_name} from any source.")
        _FakeTextEmbedding.built.append(
            {"model_name": model_name, "offline": os.environ.get("HF_HUB_OFFLINE"), **kwargs}
        )
        self.calls: list[tuple[str, list[str], int]] = []

    def _rows(self, kind: str, texts: Iterable[str], batch_size: int) -> Iterator[np.ndarray]:
        items = list(texts)
        self.calls.append((kind, items, batch_size))
        for text in items:  # fastembed yields one vector per text
            yield np.array([len(text) + 1.0, 2.0 if kind == "passage" else 1.0])

    def query_embed(self, texts: Iterable[str], batch_size: int = 256) -> Iterator[np.ndarray]:
        return self._rows("query", texts, batch_size)

    def passage_embed(self, texts: Iterable[str], batch_size: int = 256) -> Iterator[np.ndarray]:
        return self._rows("passage", texts, batch_size)


@pytest.fixture
def fake_fastembed(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_FakeTextEmbedding]]:
    module = types.ModuleType("fastembed")
    module.TextEmbedding = _FakeTextEmbedding  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fastembed", module)
    monkeypatch.delenv("GROOVE_FASTEMBED_CACHE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    _FakeTextEmbedding.built = []
    yield _FakeTextEmbedding


def test_loads_from_local_files_only(fake_fastembed: type[_FakeTextEmbedding]) -> None:
    embedder = get_embedder("fastembed:BAAI/bge-small-en-v1.5")
    assert isinstance(embedder, FastEmbedEmbedder)
    assert isinstance(embedder, Embedder)
    assert embedder.name == "fastembed:BAAI/bge-small-en-v1.5"
    assert embedder.dimension == 2  # from the probe
    assert fake_fastembed.built == [
        {
            "model_name": "BAAI/bge-small-en-v1.5",
            "offline": "1",
            "cache_dir": None,
            "local_files_only": True,
        }
    ]
    assert model_slug(embedder.name).startswith("fastembed_BAAI_bge-small-en-v1.5__")


def test_cache_dir_from_environment(
    fake_fastembed: type[_FakeTextEmbedding], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GROOVE_FASTEMBED_CACHE", str(tmp_path))
    FastEmbedEmbedder("fastembed:m")
    assert fake_fastembed.built[-1]["cache_dir"] == str(tmp_path)


def test_query_and_passage_methods_normalised(fake_fastembed: type[_FakeTextEmbedding]) -> None:
    embedder = FastEmbedEmbedder("fastembed:m")
    queries = embedder.embed_queries(["ab", "abcdef"])
    passages = embedder.embed_passages(["ab"])
    assert queries.dtype == np.float32 and queries.shape == (2, 2)
    np.testing.assert_allclose(queries[0], np.array([3, 1]) / np.sqrt(10), atol=1e-6)
    np.testing.assert_allclose(passages[0], np.array([3, 2]) / np.sqrt(13), atol=1e-6)
    model: Any = embedder._model
    assert [kind for kind, _, _ in model.calls] == ["query", "query", "passage"]
    assert embedder.embed_passages([]).shape == (0, 2)


def test_missing_model_names_it_and_says_local(fake_fastembed: type[_FakeTextEmbedding]) -> None:
    with pytest.raises(GrooveError) as info:
        get_embedder("fastembed:org/missing")
    message = info.value.message
    assert "'org/missing'" in message and "must be available locally" in message


def test_missing_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fastembed", None)
    with pytest.raises(GrooveError, match=r"install pytest-groove\[fastembed\]"):
        get_embedder("fastembed:BAAI/bge-small-en-v1.5")


def test_real_fastembed_refuses_an_uncached_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("fastembed")
    monkeypatch.setenv("GROOVE_FASTEMBED_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(GrooveError, match="must be available locally"):
        get_embedder("fastembed:BAAI/bge-small-en-v1.5")


@pytest.mark.slow
def test_real_fastembed_model_when_cached() -> None:
    pytest.importorskip("fastembed")
    name = os.environ.get("GROOVE_TEST_FASTEMBED_MODEL", "BAAI/bge-small-en-v1.5")
    try:
        embedder = get_embedder(f"fastembed:{name}")
    except GrooveError as exc:
        pytest.skip(f"fastembed model not available locally: {exc}")
    vectors = embedder.embed_passages(["alpha", "beta"])
    assert vectors.shape == (2, embedder.dimension) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
