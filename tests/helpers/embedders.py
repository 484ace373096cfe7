"""Embedders for tests that look at what the indexer asks to embed."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_groove.embed.base import Matrix
from pytest_groove.embed.hashing import HashEmbedder


class RecordingEmbedder(HashEmbedder):
    """The hash embedder, keeping every passage text it was asked to embed, in order."""

    def __init__(self) -> None:
        self.passages: list[str] = []

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        self.passages.extend(texts)
        return super().embed_passages(texts)
