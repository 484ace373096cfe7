"""A search service behind HTTP, measured as a retriever.

Contract: ``POST {"query": ..., "limit": ...}`` (JSON) answered by a JSON list of
``{"path", "heading", "score"}``, best first.  The timeout per query is
``--retriever-timeout`` (else ``GROOVE_RETRIEVER_TIMEOUT``, else 30 s); with
``--retriever-token-env NAME`` the request carries ``Authorization: Bearer <$NAME>``
-- the token itself is never written anywhere (not in messages, not in the
fingerprint).

A service that cannot be reached, times out or answers 502/503/504 raises
:class:`RetrieverUnavailable`, so an evaluation can stop once instead of failing every
query with the same line.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import json
import os
import re
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from pytest_groove.errors import GrooveError, StopsTheRun, flag
from pytest_groove.search.retriever_hits import echo

#: seconds an HTTP retriever may take to answer one query, unless configured
HTTP_TIMEOUT_SECONDS = 30.0
#: the environment variable that sets the timeout when no option does
TIMEOUT_ENV = "GROOVE_RETRIEVER_TIMEOUT"
#: the largest HTTP answer read (a ranked list of paths is far smaller)
HTTP_MAX_BYTES = 16 * 1024 * 1024
#: statuses a proxy answers for a service that is down or too slow
_UNAVAILABLE_STATUSES = frozenset({502, 503, 504})
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class RetrieverUnavailable(StopsTheRun):
    """The retriever's service is down or does not answer in time.

    Every later query would fail the same way, so the evaluation stops at the first.
    """


def one_line(exc: object) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:199] + "…"


def resolve_timeout(given: float | None) -> float:
    """The HTTP timeout: ``given`` (the option), else ``$GROOVE_RETRIEVER_TIMEOUT``, else 30 s."""
    if given is not None:
        return given
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return HTTP_TIMEOUT_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise GrooveError(
            f"{TIMEOUT_ENV}={raw!r} is not a positive number of seconds; fix or unset it"
        )
    return value


def bearer_token(env_name: str, retriever: str) -> str:
    """The token in ``$env_name`` (checked now, so a missing one stops the run first)."""
    if not _ENV_NAME.fullmatch(env_name):
        raise GrooveError(
            f"retriever {retriever}: {flag('retriever-token-env')} takes the name of an "
            "environment "
            f"variable (got {echo(env_name)})"
        )
    token = os.environ.get(env_name, "").strip()
    if not token:
        raise GrooveError(
            f"retriever {retriever}: {flag('retriever-token-env')} names {env_name}, which is not "
            "set or empty; export the token in it"
        )
    if any(c in token for c in "\r\n"):
        raise GrooveError(f"retriever {retriever}: the token in {env_name} spans several lines")
    return token


def public_url(url: str) -> str:
    """The URL without user:password@ and without a query string (for the fingerprint)."""
    parsed = urllib.parse.urlsplit(url)
    host = parsed.hostname or ""
    if parsed.port is not None:
        host += f":{parsed.port}"
    return urllib.parse.urlunsplit((parsed.scheme, host, parsed.path, "", ""))


def check_url(url: str) -> None:
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise GrooveError(f"retriever {echo(url)}: not an http:// or https:// URL with a host")


def http_fetch(
    url: str, name: str, *, timeout: float, token_env: str | None = None
) -> Callable[[str, int], Any]:
    """``(query, limit) -> the service's JSON list`` (see the module docstring)."""
    check_url(url)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token_env is not None:
        headers["Authorization"] = f"Bearer {bearer_token(token_env, name)}"
    slow = (
        f"did not answer within {timeout:g} s; raise {flag('retriever-timeout')} "
        "or check the service"
    )

    def fetch(query: str, limit: int) -> Any:
        body = json.dumps({"query": query, "limit": limit}, ensure_ascii=False).encode("utf-8")
        request = urllib.request.Request(url, data=body, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                data = response.read(HTTP_MAX_BYTES + 1)
        except urllib.error.HTTPError as exc:
            text = f"retriever {name} answered HTTP {exc.code} {exc.reason}"
            if exc.code in _UNAVAILABLE_STATUSES:
                raise RetrieverUnavailable(f"{text}; is the service up?") from None
            if exc.code in (401, 403) and token_env is not None:
                raise GrooveError(f"{text}; check the token in {token_env}") from None
            if exc.code in (401, 403):
                raise GrooveError(
                    f"{text}; pass its token with {flag('retriever-token-env')} VARIABLE"
                ) from None
            raise GrooveError(f"{text} for query {echo(query)}") from None
        except TimeoutError:
            raise RetrieverUnavailable(f"retriever {name} {slow}") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError | socket.timeout):
                raise RetrieverUnavailable(f"retriever {name} {slow}") from None
            raise RetrieverUnavailable(
                f"retriever {name} cannot be reached: {one_line(reason)}"
            ) from None
        except ConnectionError as exc:  # reset or refused after the request went out
            raise RetrieverUnavailable(
                f"retriever {name} cannot be reached: {one_line(exc)}"
            ) from None
        except (OSError, ValueError) as exc:
            raise GrooveError(f"retriever {name} failed: {one_line(exc)}") from None
        return _decoded(data, name)

    return fetch


def _decoded(data: bytes, name: str) -> Any:
    if len(data) > HTTP_MAX_BYTES:
        raise GrooveError(
            f"retriever {name} answered more than {HTTP_MAX_BYTES} bytes for one query"
        )
    try:
        answer = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise GrooveError(
            f"retriever {name} did not answer with JSON (expected a list of "
            '{"path", "heading", "score"} objects)'
        ) from None
    if not isinstance(answer, list):
        raise GrooveError(
            f"retriever {name} answered a JSON {type(answer).__name__}; expected a list "
            'of {"path", "heading", "score"} objects'
        )
    return answer


__all__ = [
    "HTTP_TIMEOUT_SECONDS",
    "TIMEOUT_ENV",
    "RetrieverUnavailable",
    "http_fetch",
    "public_url",
    "resolve_timeout",
]
