"""A search service behind HTTP, measured as a retriever.

Contract: ``POST {"query": ..., "limit": ...}`` (JSON) answered by a JSON list of
``{"path", "heading", "score"}``, best first, in UTF-8 or the charset its
``Content-Type`` declares.  The timeout per query is ``--retriever-timeout`` (else
``GROOVE_RETRIEVER_TIMEOUT``, else 30 s): a deadline for the whole answer, however the
service sends it: connecting, the status line and headers, the body, an error answer's
body (a trickle of bytes at any of them does not keep the run waiting: at the deadline
the connection is shut).  Redirects are not
followed (a POST would become a GET): the error line names where to point instead.  With
``--retriever-token-env NAME`` the request carries ``Authorization: Bearer <$NAME>``
-- the token itself is never written anywhere (not in messages, not in the
fingerprint).

A service that cannot be reached, times out or answers 502/503/504 raises
:class:`RetrieverUnavailable`; any other failed exchange (an error status, a redirect,
an answer that is no JSON list) is a :class:`StopsTheRun` too: every later query would
meet the same, so an evaluation stops once instead of failing every query with the same
line.  What the service sent that a message quotes (a redirect's target, an error
body, an exception's text) is escaped and cut to 80 characters.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import hashlib
import http.client
import json
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from pytest_groove.errors import ECHO_LIMIT, GrooveError, StopsTheRun, clip, flag
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


#: characters of an outside text read before it is made one line (the rest is cut anyway)
_ONE_LINE_READ = 4 * ECHO_LIMIT


def one_line(exc: object) -> str:
    """``exc``'s text (an exception's, a service's) on one line, escaped, at most
    80 characters."""
    try:
        text = str(exc)
    except Exception:  # a user's exception whose __str__ raises
        return f"<{type(exc).__name__} that cannot be shown>"
    cut = len(text) > _ONE_LINE_READ
    text = " ".join(text[:_ONE_LINE_READ].split())
    return clip(text + (" …" if cut else ""))


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


class _Deadline:
    """One deadline for a whole exchange: at it, every socket the exchange opened is
    shut, which ends whatever read waits on it (the status line, a header, the body, an
    error body) -- a per-read timeout never ends a service sending a byte at a time."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # closed already: nothing waits on it
        sock.shutdown(socket.SHUT_RDWR)


class _WatchedHTTP(http.client.HTTPConnection):
    """A connection whose socket the exchange's deadline shuts (HTTPS: below)."""

    def __init__(self, *args: Any, deadline: _Deadline, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline = deadline

    def connect(self) -> None:
        # connecting (and HTTPS's handshake) is bounded by the socket's own timeout;
        # from then on the exchange's deadline shuts the socket
        super().connect()
        self._deadline.watch(self.sock)


class _WatchedHTTPS(_WatchedHTTP, http.client.HTTPSConnection):
    pass


class _WatchedHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: Any) -> Any:
        return self.do_open(functools.partial(_WatchedHTTP, deadline=self._deadline), req)


class _WatchedHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req: Any) -> Any:
        watched = functools.partial(_WatchedHTTPS, deadline=self._deadline)
        return self.do_open(watched, req, context=self._context)  # type: ignore[attr-defined]


def _opener(deadline: _Deadline) -> urllib.request.OpenerDirector:
    """An opener whose connections the ``deadline`` shuts (and that follows no redirect)."""
    return urllib.request.build_opener(
        _NoRedirect, _WatchedHTTPHandler(deadline), _WatchedHTTPSHandler(deadline)
    )


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


def _said(exc: urllib.error.HTTPError) -> str:
    """``; it said: …`` -- the start of an error answer's body on one line, or ""
    (read until the exchange's deadline at most: a body that does not come is cut)."""
    sock = _socket_of(exc)
    if sock is not None:
        sock.settimeout(1.0)  # a body that does not come is not worth waiting for
    try:
        data = exc.read(_ONE_LINE_READ)
    except (OSError, ValueError, http.client.HTTPException):
        return ""
    text = " ".join(data.decode("utf-8", "replace").split())
    return f"; it said: {echo(text)}" if text else ""


def _redirect_line(exc: urllib.error.HTTPError, url: str, name: str) -> str:
    location = exc.headers.get("Location") if exc.headers is not None else None
    text = f"retriever {name} answered HTTP {exc.code} {one_line(exc.reason)}"
    if not location:
        return f"{text} (a redirect without a Location); use the service's own address"
    try:
        target = clip(public_url(urllib.parse.urljoin(url, location.strip())))
    except ValueError:  # no URL (a port out of range...): quoted as it came
        target = echo(location[:_ONE_LINE_READ])
    return (
        f"{text}: the service redirected to {target}; use that address "
        "(a POST is not sent on to where a service redirects)"
    )


def _status_error(
    exc: urllib.error.HTTPError, url: str, name: str, query: str, token_env: str | None
) -> StopsTheRun:
    """The line for an error answer: every later query would get it too, so it stops the run."""
    text = f"retriever {name} answered HTTP {exc.code} {one_line(exc.reason)}"
    if 300 <= exc.code < 400:
        return StopsTheRun(_redirect_line(exc, url, name))
    if exc.code in _UNAVAILABLE_STATUSES:
        return RetrieverUnavailable(f"{text}; is the service up?")
    if exc.code in (401, 403) and token_env is not None:
        return StopsTheRun(f"{text}; check the token in {token_env}")
    if exc.code in (401, 403):
        return StopsTheRun(f"{text}; pass its token with {flag('retriever-token-env')} VARIABLE")
    return StopsTheRun(f"{text} for query {echo(query)}{_said(exc)}")


def _exchange(
    request: urllib.request.Request, deadline: _Deadline, ends: float
) -> tuple[bytes | None, str | None]:
    """The answer's body (None: the deadline passed) and its declared charset."""
    with _opener(deadline).open(request, timeout=deadline.seconds) as response:
        data = _read_by(response, ends)
        return data, response.headers.get_content_charset()


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
        # one deadline for the whole exchange: urlopen's timeout bounds each socket
        # operation only, and a service sending a byte at a time would never reach it
        ends = time.monotonic() + timeout
        with _Deadline(timeout) as deadline:
            try:
                data, charset = _exchange(request, deadline, ends)
            except urllib.error.HTTPError as exc:
                raise _status_error(exc, url, name, query, token_env) from None
            except (OSError, ValueError, http.client.HTTPException) as exc:
                if deadline.expired or _timed_out(exc):
                    raise RetrieverUnavailable(slow) from None
                raise _failed(exc, name) from None
        if data is None or deadline.expired:
            raise RetrieverUnavailable(slow)
        return _decoded(data, name, charset)

    return fetch


def _timed_out(exc: BaseException) -> bool:
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    return isinstance(reason, TimeoutError | socket.timeout)


def _failed(exc: OSError | ValueError | http.client.HTTPException, name: str) -> StopsTheRun:
    """The line for an exchange that failed before an answer (deadline aside)."""
    if isinstance(exc, urllib.error.URLError):
        return RetrieverUnavailable(f"retriever {name} cannot be reached: {one_line(exc.reason)}")
    if isinstance(exc, ConnectionError):  # reset or refused after the request went out
        return RetrieverUnavailable(f"retriever {name} cannot be reached: {one_line(exc)}")
    return StopsTheRun(f"retriever {name} failed: {one_line(exc)}")


def _decoded(data: bytes, name: str, charset: str | None = None) -> Any:
    if len(data) > HTTP_MAX_BYTES:
        raise StopsTheRun(
            f"retriever {name} answered more than {HTTP_MAX_BYTES} bytes for one query"
        )
    encoding = charset or "utf-8"
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise StopsTheRun(
            f"retriever {name} answered in charset {echo(encoding)}, which Python does not "
            "know; answer in UTF-8"
        ) from None
    try:
        # the charset the Content-Type declares (RFC 8259 JSON is UTF-8 when it says none)
        answer = json.loads(data.decode(encoding))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise StopsTheRun(
            f"retriever {name} did not answer with JSON (expected a list of "
            '{"path", "heading", "score"} objects)'
        ) from None
    if not isinstance(answer, list):
        raise StopsTheRun(
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
