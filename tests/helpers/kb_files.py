"""Writing a knowledge base of notes for a test: one helper, every test's shape."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def write_notes(kb: Path, notes: Mapping[str, str]) -> Path:
    """Write each KB-relative path's text (UTF-8), making its folders; ``kb`` back."""
    for rel, text in notes.items():
        (kb / rel).parent.mkdir(parents=True, exist_ok=True)
        (kb / rel).write_text(text, encoding="utf-8")
    return kb
