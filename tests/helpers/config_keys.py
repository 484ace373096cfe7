"""The keys of ``groove.toml``, three ways: what the reader accepts, what a TOML text
names, and the two compared by the docs and ``groove init`` tests."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from pytest_groove.settings import config


def _flatten(table: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in table.items():
        if isinstance(value, dict) and value:
            yield from _flatten(value, f"{prefix}{key}.")
        elif not isinstance(value, dict):
            yield f"{prefix}{key}"


def keys_of(toml_text: str) -> set[str]:
    """The dotted keys (``search.fusion.rrf_k``) a TOML text sets."""
    return set(_flatten(tomllib.loads(toml_text)))


def accepted_keys(source: Path) -> set[str]:
    """Every dotted key the config reader asks for, found by reading configs whose
    tables are all present (empty) and recording each key read."""
    asked: set[str] = set()
    tables: set[str] = set()
    pop, pop_section = config._Section.pop, config._Section.pop_section

    def recording_pop(self: Any, key: str, reader: Any) -> Any:
        asked.add(self.where + key)
        return pop(self, key, reader)

    def recording_section(self: Any, key: str) -> Any:
        tables.add(self.where + key)
        return pop_section(self, key)

    seen: set[str] | None = None
    with (
        mock.patch.object(config._Section, "pop", recording_pop),
        mock.patch.object(config._Section, "pop_section", recording_section),
    ):
        while seen != tables:
            seen = set(tables)
            data: dict[str, Any] = {}
            for dotted in sorted(seen):
                node = data
                for part in dotted.split("."):
                    node = node.setdefault(part, {})
            config.parse_settings(data, source)
    return asked - tables
