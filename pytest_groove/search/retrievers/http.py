"""A search service behind HTTP, measured as a retriever.

Contract: ``POST {"query": ..., "limit": ...}`` (JSON) answered by a JSON list of
``{"path", "heading", "score"}``, best first, in UTF-8 or the charset its
``Content-Type`` declares.  The timeout per query is ``--retriever-timeout`` (else
``GROOVE_RETRIEVER_TIMEOUT``, else 30 s): a deadline for the whole answer, however the
service sends it (a trickle of bytes does not keep the run waiting).  Redirects are not
followed (a POST would become a GET): the error line names where to point instead.  With
``--retriever-token-env NAME`` the request carries ``Authorization: Bearer <$NAME>``
-- the token itself is never written anywhere (not in messages, not in the
fingerprint).

A service that cannot be reached, times out or answers 502/503/504 raises
:class:`RetrieverUnavailable`, so an evaluation can stop once instead of failing every
query with the same line.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import codecs
import hashlib
import http.client
import json
import os
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from pytest_groove.errors import ECHO_LIMIT, GrooveError, StopsTheRun, clip, clip_path, flag
from pytest_groove.errors import one_line as escape_line
from pytest_groove.search.retrievers.hit_reader import echo
from pytest_groove.settings.retriever_spec import url_problem

#: seconds an HTTP retriever may take to answer one query, unless configured
HTTP_TIMEOUT_SECONDS = 30.0
#: the environment variable that sets the timeout when no option does
TIMEOUT_ENV = "GROOVE_RETRIEVER_TIMEOUT"
#: the largest HTTP answer read (a ranked list of paths is far smaller)
HTTP_MAX_BYTES = 16 * 1024 * 1024
#: statuses a proxy answers for a service that is down or too slow
_UNAVAILABLE_STATUSES = frozenset({502, 503, 504})
#: bytes asked for per read of an answer (each read is bounded by what is left of the deadline)
_READ_SIZE = 64 * 1024
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class RetrieverUnavailable(StopsTheRun):
    """The retriever's service is down or does not answer in time.

    Every later query would fail the same way, so the evaluation stops at the first.
    """


def one_line(exc: object) -> str:
    """What ``exc`` says on one line: control characters escaped, cut to 200 characters."""
    text = escape_line(" ".join(str(exc)[:10_000].split()))
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
    """The URL as it may be shown and recorded (the fingerprint's retriever name).

    Without ``user:password@``; a query string is kept as a short digest --
    ``/search?(query 1a2b3c4d)`` -- so ``?index=v1`` and ``?index=v2`` stay two
    retrievers in the history while a token in the query is never written in clear.
    """
    parsed = urllib.parse.urlsplit(url)
    host = parsed.hostname or ""
    if parsed.port is not None:
        host += f":{parsed.port}"
    shown = urllib.parse.urlunsplit((parsed.scheme, host, parsed.path, "", ""))
    if parsed.query:
        digest = hashlib.sha256(parsed.query.encode("utf-8", "surrogatepass")).hexdigest()
        shown += f"?(query {digest[:8]})"
    return shown


def check_url(url: str) -> None:
    problem = url_problem(url)
    if problem is not None:
        raise GrooveError(f"retriever {echo(url)}: {problem}")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are not followed: urllib would re-send a POST as a bodiless GET."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _socket_of(response: Any) -> socket.socket | None:
    """The socket under an ``http.client`` response (its per-read timeout is set per read)."""
    raw = getattr(getattr(response, "fp", None), "raw", None)
    sock = getattr(raw, "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


def _read_by(response: Any, deadline: float) -> bytes | None:
    """The response's body, read in pieces until ``deadline`` (monotonic); None once it
    passes -- a service that trickles its answer is as slow as one that says nothing."""
    sock = _socket_of(response)
    pieces: list[bytes] = []
    size = 0
    while size <= HTTP_MAX_BYTES:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        if sock is not None:
            sock.settimeout(remaining)
        piece = response.read1(_READ_SIZE)
        if not piece:
            break
        pieces.append(piece)
        size += len(piece)
    return b"".join(pieces)


#: characters of an error answer's body quoted in the message (services say why there)
_BODY_SHOWN = 200


def _said(exc: urllib.error.HTTPError) -> str:
    """``; it said: …`` -- the start of an error answer's body on one line, or ""."""
    sock = _socket_of(exc)
    if sock is not None:
        sock.settimeout(1.0)  # a body that does not come is not worth waiting for
    try:
        data = exc.read(_BODY_SHOWN * 4)
    except (OSError, ValueError, http.client.HTTPException):
        return ""
    text = " ".join(data.decode("utf-8", "replace").split())
    if not text:
        return ""
    shown = text if len(text) <= _BODY_SHOWN else text[: _BODY_SHOWN - 1] + "…"
    return f"; it said: {echo(shown)}"


def _redirect_line(exc: urllib.error.HTTPError, url: str, name: str) -> str:
    location = exc.headers.get("Location") if exc.headers is not None else None
    text = f"retriever {name} answered HTTP {exc.code} {clip(str(exc.reason))}"
    if not location:
        return f"{text} (a redirect without a Location); use the service's own address"
    target = urllib.parse.urljoin(url, location.strip())
    shown = clip_path(public_url(target), ECHO_LIMIT)  # the service's value: capped, escaped
    return (
        f"{text}: the service redirected to {shown}; use that address "
        "(a POST is not sent on to where a service redirects)"
    )


def http_fetch(
    url: str, name: str, *, timeout: float, token_env: str | None = None
) -> Callable[[str, int], Any]:
    """``(query, limit) -> the service's JSON list`` (see the module docstring)."""
    check_url(url)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token_env is not None:
        headers["Authorization"] = f"Bearer {bearer_token(token_env, name)}"
    address = public_url(url)
    whose = name if name == address else f"{name} ({address})"
    slow = (
        f"retriever {whose} did not answer within {timeout:g} s; raise "
        f"{flag('retriever-timeout')} or check the service"
    )

    def fetch(query: str, limit: int) -> Any:
        body = json.dumps({"query": query, "limit": limit}, ensure_ascii=False).encode("utf-8")
        request = urllib.request.Request(url, data=body, method="POST", headers=headers)
        # one deadline for the whole answer: urlopen's timeout bounds each socket read
        # only, and a service sending a few bytes at a time would never reach it
        deadline = time.monotonic() + timeout
        try:
            with _OPENER.open(request, timeout=timeout) as response:
                data = _read_by(response, deadline)
                charset = response.headers.get_content_charset()
        except urllib.error.HTTPError as exc:
            text = f"retriever {name} answered HTTP {exc.code} {exc.reason}"
            if 300 <= exc.code < 400:
                raise GrooveError(_redirect_line(exc, url, name)) from None
            if exc.code in _UNAVAILABLE_STATUSES:
                raise RetrieverUnavailable(f"{text}; is the service up?") from None
            if exc.code in (401, 403) and token_env is not None:
                raise GrooveError(f"{text}; check the token in {token_env}") from None
            if exc.code in (401, 403):
                raise GrooveError(
                    f"{text}; pass its token with {flag('retriever-token-env')} VARIABLE"
                ) from None
            raise GrooveError(f"{text} for query {echo(query)}{_said(exc)}") from None
        except TimeoutError:
            raise RetrieverUnavailable(slow) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError | socket.timeout):
                raise RetrieverUnavailable(slow) from None
            raise RetrieverUnavailable(
                f"retriever {name} cannot be reached: {one_line(reason)}"
            ) from None
        except ConnectionError as exc:  # reset or refused after the request went out
            raise RetrieverUnavailable(
                f"retriever {name} cannot be reached: {one_line(exc)}"
            ) from None
        except (OSError, ValueError, http.client.HTTPException) as exc:
            raise GrooveError(f"retriever {name} failed: {one_line(exc)}") from None
        if data is None:
            raise RetrieverUnavailable(slow)
        return _decoded(data, name, charset)

    return fetch


def _decoded(data: bytes, name: str, charset: str | None = None) -> Any:
    if len(data) > HTTP_MAX_BYTES:
        raise GrooveError(
            f"retriever {name} answered more than {HTTP_MAX_BYTES} bytes for one query"
        )
    encoding = charset or "utf-8"
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise GrooveError(
            f"retriever {name} answered in charset {echo(encoding)}, which Python does not "
            "know; answer in UTF-8"
        ) from None
    try:
        # the charset the Content-Type declares (RFC 8259 JSON is UTF-8 when it says none)
        answer = json.loads(data.decode(encoding))
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
