"""Reranker registry, the rerank stage and the sentence-transformers loader."""

from __future__ import annotations

import importlib.util
import math
import sys
import types
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.errors import GrooveError
from pytest_groove.search.pipeline import rerank as rerank_module
from pytest_groove.search.pipeline.rerank import (
    CrossEncoderReranker,
    Reranker,
    get_reranker,
    known_reranker_names,
    register_reranker,
    rerank,
    rerank_scores,
    rerank_text,
    resolve_model_id,
    unregister_reranker,
)

HAVE_ST = importlib.util.find_spec("sentence_transformers") is not None


class KeywordReranker:
    """Scores a document by how often the query's words occur in it."""

    name = "test/keyword-reranker"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        self.calls.append((query, list(documents)))
        words = query.lower().split()
        return [float(sum(doc.lower().count(w) for w in words)) for doc in documents]


class FixedReranker:
    def __init__(self, scores: list[float]) -> None:
        self.name = "fixed"
        self._scores = scores

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        return list(self._scores)


@pytest.fixture
def keyword() -> Iterator[KeywordReranker]:
    instance = KeywordReranker()
    register_reranker("keyword", lambda: instance)
    yield instance
    unregister_reranker("keyword")


@pytest.fixture
def clean_loader_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(rerank_module, "_loaded", {})
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    yield


# --------------------------------------------------------------------------- registry


def test_none_means_no_reranking_stage() -> None:
    assert get_reranker("none") is None


def test_registered_reranker_is_returned(keyword: KeywordReranker) -> None:
    got = get_reranker("keyword")
    assert got is keyword
    assert isinstance(got, Reranker)
    assert "keyword" in known_reranker_names()


def test_registered_name_wins_over_a_built_in_short_name() -> None:
    stub = FixedReranker([1.0])
    register_reranker("bge-v2-m3", lambda: stub)
    try:
        assert get_reranker("bge-v2-m3") is stub
    finally:
        unregister_reranker("bge-v2-m3")


def test_unknown_name_is_one_line_error_listing_choices() -> None:
    with pytest.raises(GrooveError) as info:
        get_reranker("colbert-xl")
    message = info.value.message
    assert "\n" not in message
    assert "'colbert-xl'" in message
    for name in ("none", "bge-v2-m3", "jina-v2-ml", "bge-base", "cross-encoder:"):
        assert name in message


@pytest.mark.parametrize("bad", ["", " padded", "none"])
def test_register_rejects_bad_names(bad: str) -> None:
    with pytest.raises(ValueError):
        register_reranker(bad, lambda: FixedReranker([]))


def test_model_id_resolution() -> None:
    assert resolve_model_id("bge-v2-m3") == "BAAI/bge-reranker-v2-m3"
    assert resolve_model_id("jina-v2-ml") == "jinaai/jina-reranker-v2-base-multilingual"
    assert resolve_model_id("bge-base") == "BAAI/bge-reranker-base"
    assert resolve_model_id("cross-encoder:org/model") == "org/model"
    assert resolve_model_id("sentence-transformers:/models/ce") == "/models/ce"
    assert resolve_model_id("keyword-thing") is None
    with pytest.raises(GrooveError, match="names no model"):
        resolve_model_id("cross-encoder:  ")


# --------------------------------------------------------------------------- stage


def test_rerank_orders_by_score_descending(keyword: KeywordReranker) -> None:
    reranker = get_reranker("keyword")
    assert reranker is not None
    docs = ["nothing here", "tokio tokio spawn", "spawn a task"]
    assert rerank(reranker, "tokio spawn", docs, keep=None) == [1, 2, 0]
    assert rerank_scores(reranker, "tokio spawn", docs, keep=2) == [(1, 3.0), (2, 1.0)]
    assert keyword.calls[0] == ("tokio spawn", docs)


def test_rerank_is_stable_on_equal_scores() -> None:
    assert rerank(FixedReranker([0.5, 0.9, 0.5, 0.9]), "q", ["a", "b", "c", "d"]) == [1, 3, 0, 2]


def test_rerank_keeps_raw_negative_logits() -> None:
    pairs = rerank_scores(FixedReranker([-7.5, -1.25, -3.0]), "q", ["a", "b", "c"])
    assert pairs == [(1, -1.25), (2, -3.0), (0, -7.5)]


def test_rerank_keep_limits_and_empty_pool() -> None:
    reranker = FixedReranker([0.1, 0.2, 0.3])
    assert rerank(reranker, "q", ["a", "b", "c"], keep=1) == [2]
    assert rerank(reranker, "q", ["a", "b", "c"], keep=0) == []
    calls = KeywordReranker()
    assert rerank(calls, "q", [], keep=5) == []
    assert calls.calls == []  # the model is not invoked for nothing
    with pytest.raises(ValueError):
        rerank(reranker, "q", ["a"], keep=-1)


def test_nan_scores_sort_last() -> None:
    assert rerank(FixedReranker([math.nan, 0.1, -5.0]), "q", ["a", "b", "c"]) == [1, 2, 0]


def test_wrong_number_of_scores_is_a_clear_error() -> None:
    with pytest.raises(GrooveError, match="returned 2 scores for 3 documents"):
        rerank(FixedReranker([0.1, 0.2]), "q", ["a", "b", "c"])


def test_rerank_text_joins_context_and_content() -> None:
    assert rerank_text("Guide > Setup", "pip install x") == "Guide > Setup\n\npip install x"
    assert rerank_text(None, "pip install x") == "pip install x"
    assert rerank_text("", "pip install x") == "pip install x"


@settings(deadline=None)  # no per-example deadline: CI machines are busy
@given(scores=st.lists(st.floats(-10, 10, allow_nan=False), max_size=20), keep=st.integers(0, 25))
def test_property_rerank_is_a_stable_sort(scores: list[float], keep: int) -> None:
    docs = [f"d{i}" for i in range(len(scores))]
    order = rerank(FixedReranker(scores), "q", docs, keep=keep)
    assert order == sorted(range(len(scores)), key=lambda i: -scores[i])[:keep]


# --------------------------------------------------------------------------- sentence-transformers


@pytest.mark.parametrize(
    "name", ["cross-encoder:org/model", "sentence-transformers:org/model", "bge-base"]
)
def test_missing_extra_names_the_install_command(
    name: str, clean_loader_state: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a None entry in sys.modules makes the import fail as if the extra were absent
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(GrooveError) as info:
        get_reranker(name)
    assert "pytest-groove[sentence-transformers]" in info.value.message
    assert "\n" not in info.value.message


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_ST, reason="sentence-transformers is not installed")
def test_model_missing_locally_is_a_one_line_error(clean_loader_state: None) -> None:
    with pytest.raises(GrooveError) as info:
        get_reranker("cross-encoder:groove-test/no-such-model-anywhere")
    assert "not available locally" in info.value.message
    assert "\n" not in info.value.message


class FakeCrossEncoder:
    """Records how it was built; scores a pair by the length of the document."""

    built: ClassVar[list[tuple[str, dict[str, Any]]]] = []
    fail_with: ClassVar[Exception | None] = None

    def __init__(self, model: str, **kwargs: Any) -> None:
        if FakeCrossEncoder.fail_with is not None:
            raise FakeCrossEncoder.fail_with
        FakeCrossEncoder.built.append((model, kwargs))

    def predict(self, pairs: list[tuple[str, str]], **kwargs: Any) -> list[float]:
        assert kwargs.get("show_progress_bar") is False
        return [float(len(doc)) - 10.0 for _, doc in pairs]


class LegacyCrossEncoder(FakeCrossEncoder):
    """sentence-transformers 2.x keyword names."""

    def __init__(
        self,
        model: str,
        automodel_args: dict[str, Any] | None = None,
        tokenizer_args: dict[str, Any] | None = None,
        default_activation_function: Any = None,
    ) -> None:
        super().__init__(
            model,
            automodel_args=automodel_args,
            tokenizer_args=tokenizer_args,
            default_activation_function=default_activation_function,
        )


@pytest.fixture
def fake_st(monkeypatch: pytest.MonkeyPatch, clean_loader_state: None) -> types.ModuleType:
    module = types.ModuleType("sentence_transformers")
    module.CrossEncoder = FakeCrossEncoder  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    # a stand-in torch keeps this test fast and independent of the real one
    fake_torch = types.ModuleType("torch")
    fake_torch.nn = types.SimpleNamespace(Identity=lambda: "identity")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    FakeCrossEncoder.built = []
    FakeCrossEncoder.fail_with = None
    return module


def test_cross_encoder_is_loaded_offline_and_scores_pairs(fake_st: types.ModuleType) -> None:
    reranker = get_reranker("bge-v2-m3")
    assert isinstance(reranker, CrossEncoderReranker)
    assert reranker.name == "BAAI/bge-reranker-v2-m3"
    model, kwargs = FakeCrossEncoder.built[0]
    assert model == "BAAI/bge-reranker-v2-m3"
    assert kwargs["local_files_only"] is True
    assert kwargs["activation_fn"] == "identity"  # raw logits, no sigmoid
    assert reranker.score("q", ["abc", "abcdefghijkl"]) == [-7.0, 2.0]
    assert reranker.score("q", []) == []
    # loaded once per model id
    assert get_reranker("cross-encoder:BAAI/bge-reranker-v2-m3") is reranker
    assert len(FakeCrossEncoder.built) == 1


def test_cross_encoder_legacy_constructor(fake_st: types.ModuleType) -> None:
    fake_st.CrossEncoder = LegacyCrossEncoder  # type: ignore[attr-defined]
    reranker = get_reranker("cross-encoder:/opt/models/ce")
    assert reranker is not None and reranker.name == "/opt/models/ce"
    _, kwargs = FakeCrossEncoder.built[-1]
    assert kwargs["automodel_args"] == {"local_files_only": True}
    assert kwargs["tokenizer_args"] == {"local_files_only": True}


def test_cross_encoder_load_failure_is_one_line(fake_st: types.ModuleType) -> None:
    FakeCrossEncoder.fail_with = OSError(
        "We couldn't connect to 'https://huggingface.co' to load this file.\nCheck your network."
    )
    with pytest.raises(GrooveError) as info:
        get_reranker("cross-encoder:org/absent")
    message = info.value.message
    assert "\n" not in message
    assert "'org/absent'" in message and "not available locally" in message


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_ST, reason="sentence-transformers is not installed")
def test_real_cross_encoder_from_a_local_directory_returns_raw_logits(
    tmp_path: Any, clean_loader_state: None
) -> None:
    """Build a tiny random BERT cross-encoder on disk and load it through the real path."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    words = ["tokio", "spawn", "rust", "async", "task", "the", "a", "runtime"]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt"))
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=1,
    )
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.bias.fill_(-6.0)  # logits near -6; a sigmoid would give ~0.0025
    model.save_pretrained(tmp_path / "ce")
    tokenizer.save_pretrained(tmp_path / "ce")

    reranker = get_reranker(f"cross-encoder:{tmp_path / 'ce'}")
    assert reranker is not None and reranker.name == str(tmp_path / "ce")
    docs = ["tokio spawn task", "the rust runtime", "a"]
    scores = reranker.score("tokio spawn", docs)
    assert len(scores) == 3 and all(s < -1.0 for s in scores)

    model.eval()
    with torch.no_grad():
        batch = tokenizer(["tokio spawn"] * 3, docs, padding=True, return_tensors="pt")
        expected = model(**batch).logits[:, 0].tolist()
    assert scores == pytest.approx(expected, abs=1e-4)
    assert rerank(reranker, "tokio spawn", docs) == sorted(range(3), key=lambda i: -expected[i])
