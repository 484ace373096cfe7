"""Embedder names: the default model, the index directory of a name, HTTP endpoints.

Standard library only, and importing no other embedder module, so both the registry
and the HTTP backend (and ``settings/config.py``, for the default) can use it without
importing each other.

:func:`model_slug` turns an embedder's name into the directory name of its index
(``<kb>/.groove/<slug>/``).  Call it with :attr:`Embedder.name` (the canonical
identity the backend reports), not with the raw flag value.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import urlsplit

from pytest_groove.errors import UsageError

#: the model used when neither ``--model`` nor the config names one
DEFAULT_MODEL = "e5-small"

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
