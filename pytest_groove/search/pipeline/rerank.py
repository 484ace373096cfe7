"""Optional cross-encoder reranking of the fused candidates.

A reranker reads the query together with each candidate's text and returns one
relevance score per candidate (raw logits for the cross-encoders: higher is
better, often negative).  Candidates are then ordered by that score, and the
hit's score becomes the reranker score.

Where rerankers come from, by ``--reranker`` / ``reranker =`` name:

* ``none``: no reranking stage (:func:`get_reranker` returns ``None``).
* a name given to :func:`register_reranker`: whatever the factory returns
  (a ``conftest.py`` can plug in its own model or a stub this way).
* ``cross-encoder:<hub id or path>`` / ``sentence-transformers:<hub id or path>``:
  a ``CrossEncoder`` from the optional ``sentence-transformers`` extra.
* the reference's short names ``bge-v2-m3``, ``jina-v2-ml``, ``bge-base``:
  the matching Hugging Face model, loaded the same way.

Models are only ever loaded from local files (the Hugging Face cache or a
directory): this tool never downloads anything at search time.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import importlib
import math
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from pytest_groove.errors import GrooveError, clip_repr

NO_RERANKER = "none"
#: prefixes selecting a sentence-transformers CrossEncoder (same meaning)
CROSS_ENCODER_PREFIXES: tuple[str, ...] = ("cross-encoder:", "sentence-transformers:")
#: the reference implementation's reranker names and the models they stand for
SHORT_NAMES: dict[str, str] = {
    "bge-v2-m3": "BAAI/bge-reranker-v2-m3",
    "jina-v2-ml": "jinaai/jina-reranker-v2-base-multilingual",
    "bge-base": "BAAI/bge-reranker-base",
}
EXTRA_INSTALL_HINT = "pip install 'pytest-groove[sentence-transformers]'"


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, document) pairs.  ``name`` is the model id recorded in run fingerprints."""

    name: str

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """One score per document, same order; higher means more relevant."""
        ...


RerankerFactory = Callable[[], Reranker]

_registry: dict[str, RerankerFactory] = {}
_loaded: dict[str, Reranker] = {}
_lock = threading.Lock()


def register_reranker(name: str, factory: RerankerFactory) -> None:
    """Make ``name`` resolve to ``factory()``; a registered name wins over built-ins."""
    if not name or name.strip() != name:
        raise ValueError(f"reranker name must be non-empty without surrounding spaces: {name!r}")
    if name == NO_RERANKER:
        raise ValueError(f"{NO_RERANKER!r} is reserved for 'no reranker'")
    with _lock:
        _registry[name] = factory


def unregister_reranker(name: str) -> None:
    """Forget a registered name (no error if it was not registered)."""
    with _lock:
        _registry.pop(name, None)


def known_reranker_names() -> list[str]:
    """Names accepted without a prefix, for error messages and ``--help``."""
    with _lock:
        registered = sorted(_registry)
    return [NO_RERANKER, *SHORT_NAMES, *registered]


def resolve_model_id(name: str) -> str | None:
    """The model a built-in reranker name loads, or None if ``name`` is not one."""
    if name in SHORT_NAMES:
        return SHORT_NAMES[name]
    for prefix in CROSS_ENCODER_PREFIXES:
        if name.startswith(prefix):
            model = name[len(prefix) :].strip()
            if not model:
                raise GrooveError(
                    f"reranker {clip_repr(name)} names no model: use {prefix}<hub id or local path>"
                )
            return model
    return None


def get_reranker(name: str) -> Reranker | None:
    """The reranker ``name`` stands for; ``None`` for ``"none"``.

    Raises :class:`GrooveError` for an unknown name, a missing optional extra or
    a model that is not available locally.
    """
    if name == NO_RERANKER:
        return None
    with _lock:
        factory = _registry.get(name)
    if factory is not None:
        return factory()
    model_id = resolve_model_id(name)
    if model_id is None:
        choices = ", ".join(known_reranker_names())
        raise GrooveError(
            f"unknown reranker {clip_repr(name)}: use one of {choices}, "
            "or cross-encoder:<hub id or local path>"
        )
    with _lock:
        cached = _loaded.get(model_id)
    if cached is not None:
        return cached
    loaded = CrossEncoderReranker.load(model_id)
    with _lock:
        return _loaded.setdefault(model_id, loaded)


# --------------------------------------------------------------------------- stage


def rerank_text(context: str | None, content: str) -> str:
    """Text shown to the cross-encoder: breadcrumb, blank line, content (when there is one)."""
    return f"{context}\n\n{content}" if context else content


def rerank_scores(
    reranker: Reranker, query: str, candidates_text: Sequence[str], keep: int | None = None
) -> list[tuple[int, float]]:
    """``(candidate index, reranker score)`` best first, cut to ``keep`` (None = all).

    Equal scores keep their incoming (fusion) order; a NaN score sorts last.
    """
    if keep is not None and keep < 0:
        raise ValueError(f"keep must be >= 0 or None (got {keep})")
    if not candidates_text:
        return []
    scores = [float(s) for s in reranker.score(query, candidates_text)]
    if len(scores) != len(candidates_text):
        raise GrooveError(
            f"reranker {reranker.name!r} returned {len(scores)} scores for "
            f"{len(candidates_text)} documents (it must return one score per document)"
        )
    order = sorted(
        range(len(scores)),
        key=lambda i: -scores[i] if not math.isnan(scores[i]) else math.inf,
    )
    if keep is not None:
        order = order[:keep]
    return [(i, scores[i]) for i in order]


def rerank(
    reranker: Reranker, query: str, candidates_text: Sequence[str], keep: int | None = None
) -> list[int]:
    """Candidate indices ordered by reranker score (descending, stable), cut to ``keep``."""
    return [index for index, _ in rerank_scores(reranker, query, candidates_text, keep)]


# --------------------------------------------------------------------------- sentence-transformers


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` returning raw logits."""

    def __init__(self, name: str, model: Any) -> None:
        self.name = name
        self._model = model

    @classmethod
    def load(cls, model_id: str) -> CrossEncoderReranker:
        """Load ``model_id`` from local files only; one-line GrooveError when impossible."""
        # Belt and braces with local_files_only: the hub library reads this at
        # import time, so a download cannot start from any code path.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise GrooveError(
                f"reranker {clip_repr(model_id)} needs the optional sentence-transformers extra: "
                f"{EXTRA_INSTALL_HINT}"
            ) from None
        try:
            model = _construct(CrossEncoder, model_id)
        except Exception as exc:  # any load failure is a user-facing setup problem
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise GrooveError(
                f"reranker model {model_id!r} is not available locally ({detail}); "
                "download it once into the Hugging Face cache or pass a local directory "
                "as cross-encoder:<path>"
            ) from None
        return cls(model_id, model)

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        pairs = [(query, document) for document in documents]
        raw = self._model.predict(pairs, show_progress_bar=False)
        return [float(value) for value in list(raw)]


def _identity_activation() -> Any:
    """``torch.nn.Identity()``: keep the raw logits instead of a sigmoid."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:  # torch comes with sentence-transformers; without it keep its default
        return None
    return torch.nn.Identity()


def _construct(cross_encoder: Any, model_id: str) -> Any:
    """Instantiate ``CrossEncoder`` offline across library versions.

    sentence-transformers >= 4 takes ``local_files_only`` and ``activation_fn``;
    older releases take ``automodel_args``/``tokenizer_args`` and
    ``default_activation_function``.
    """
    activation = _identity_activation()
    try:
        return cross_encoder(model_id, local_files_only=True, activation_fn=activation)
    except TypeError as exc:
        if "unexpected keyword" not in str(exc):
            raise
    offline = {"local_files_only": True}
    return cross_encoder(
        model_id,
        automodel_args=offline,
        tokenizer_args=offline,
        default_activation_function=activation,
    )
