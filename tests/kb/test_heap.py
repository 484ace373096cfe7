"""Giving freed heap memory back: through the symbols the process already has."""

from __future__ import annotations

import ctypes.util
import sys

import pytest

from pytest_groove.kb import heap


def test_the_c_library_is_not_searched_for(monkeypatch: pytest.MonkeyPatch) -> None:
    def searched(name: str) -> str | None:
        raise AssertionError(f"find_library({name!r}) runs ldconfig")

    monkeypatch.setattr(ctypes.util, "find_library", searched)
    heap._malloc_trim.cache_clear()
    try:
        heap.return_freed_memory()
        if sys.platform.startswith("linux"):
            assert heap._malloc_trim() is not None
    finally:
        heap._malloc_trim.cache_clear()
