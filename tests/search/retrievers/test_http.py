"""The HTTP retriever's timeout, its bearer token, and a service that is down."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pytest_groove.errors import GrooveError
from pytest_groove.search.retrievers.external import (
    RetrieverUnavailable,
    load_retriever,
    retriever_for_run,
)
from pytest_groove.search.retrievers.http import TIMEOUT_ENV, resolve_timeout
from pytest_groove.settings.options import RunOptions
from tests.helpers.local_http import send_json, serving, url_of

TOKEN = "s3cret-token-value"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        return

    def _answer(self, status: int, body: bytes = b"[]") -> None:
        send_json(self, status, body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.headers_seen.append(dict(self.headers))  # type: ignore[attr-defined]
        if self.path == "/slow":
            time.sleep(1.5)
        if self.path == "/down":
            return self._answer(503)
        if self.path == "/fails":
            return self._answer(500, b"Traceback (most recent call last):\n  KeyError: 'index'")
        if self.path == "/prose":
            return self._answer(200, b"<html>Search</html>")
        if self.path == "/empty":
            return self._answer(200, b"[]")
        if self.path == "/moved":
            self.send_response(308)
            self.send_header("Location", "/v2/search\x1b[31m")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if self.path == "/auth" and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._answer(401)
        self._answer(200, json.dumps([{"path": "a.md", "heading": None}]).encode())


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    with serving(_Handler, headers_seen=[]) as httpd:
        yield httpd


_url = url_of


@pytest.fixture(autouse=True)
def _no_timeout_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)


def test_the_timeout_is_the_option_else_the_environment_else_30_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert resolve_timeout(None) == 30.0
    monkeypatch.setenv(TIMEOUT_ENV, "2.5")
    assert resolve_timeout(None) == 2.5
    assert resolve_timeout(7.0) == 7.0
    for bad in ("soon", "0", "-1", "inf", "nan"):
        monkeypatch.setenv(TIMEOUT_ENV, bad)
        with pytest.raises(GrooveError, match=f"{TIMEOUT_ENV}='{bad}' is not a positive"):
            resolve_timeout(None)


def test_a_slow_service_is_unavailable_after_the_configured_timeout(
    tmp_path: Path, server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    retriever = load_retriever(_url(server, "/slow"), tmp_path, timeout=0.3)
    started = time.monotonic()
    with pytest.raises(RetrieverUnavailable, match=r"did not answer within 0.3 s; raise "):
        retriever.search("q", 5)
    assert time.monotonic() - started < 1.4  # the option, not the 30 s default
    monkeypatch.setenv(TIMEOUT_ENV, "0.2")
    from_env = load_retriever(_url(server, "/slow"), tmp_path)
    with pytest.raises(RetrieverUnavailable, match=r"within 0.2 s"):
        from_env.search("q", 5)


def test_a_refused_connection_and_a_503_are_unavailable(
    tmp_path: Path, server: ThreadingHTTPServer
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    refused = load_retriever(f"http://127.0.0.1:{port}/search", tmp_path, timeout=2)
    with pytest.raises(RetrieverUnavailable, match=r"cannot be reached: .*refused"):
        refused.search("q", 5)
    down = load_retriever(_url(server, "/down"), tmp_path)
    with pytest.raises(RetrieverUnavailable, match=r"answered HTTP 503 .*; is the service up\?"):
        down.search("q", 5)
    assert issubclass(RetrieverUnavailable, GrooveError)


def test_once_down_every_later_search_fails_at_once_with_the_same_line(
    tmp_path: Path, server: ThreadingHTTPServer
) -> None:
    retriever = load_retriever(_url(server, "/slow"), tmp_path, timeout=0.3)
    with pytest.raises(RetrieverUnavailable) as first:
        retriever.search("q1", 5)
    started = time.monotonic()
    for query in ("q2", "q3", "q4"):
        with pytest.raises(RetrieverUnavailable) as later:
            retriever.search(query, 5)
        assert later.value.message == first.value.message
    assert time.monotonic() - started < 0.2  # not one timeout per query
    assert len(server.headers_seen) == 1  # type: ignore[attr-defined]


def test_a_bearer_token_is_sent_from_the_named_variable_and_never_shown(
    tmp_path: Path, server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCH_TOKEN", TOKEN)
    url = _url(server, "/auth")
    retriever = load_retriever(url, tmp_path, token_env="SEARCH_TOKEN")
    assert [h.path for h in retriever.search("q", 5)] == ["a.md"]
    assert server.headers_seen[-1]["Authorization"] == f"Bearer {TOKEN}"  # type: ignore[attr-defined]
    assert TOKEN not in retriever.name and TOKEN not in repr(retriever.keys)
    monkeypatch.setenv("SEARCH_TOKEN", "wrong")
    wrong = load_retriever(url, tmp_path, token_env="SEARCH_TOKEN")
    with pytest.raises(GrooveError, match=r"401 .*; check the token in SEARCH_TOKEN") as raised:
        wrong.search("q", 5)
    assert "wrong" not in str(raised.value)
    without = load_retriever(url, tmp_path)
    with pytest.raises(GrooveError, match="pass its token with --retriever-token-env VARIABLE"):
        without.search("q", 5)


def test_a_missing_token_variable_stops_before_any_search(
    tmp_path: Path, server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SEARCH_TOKEN", raising=False)
    with pytest.raises(GrooveError, match="names SEARCH_TOKEN, which is not set or empty"):
        load_retriever(_url(server, "/auth"), tmp_path, token_env="SEARCH_TOKEN")
    with pytest.raises(GrooveError, match="takes the name of an environment variable"):
        load_retriever(_url(server, "/auth"), tmp_path, token_env="$SEARCH_TOKEN")
    assert server.headers_seen == []  # type: ignore[attr-defined]


def test_the_name_option_names_an_http_retriever(
    tmp_path: Path, server: ThreadingHTTPServer
) -> None:
    assert load_retriever(_url(server, "/x"), tmp_path, name="search-v2").name == "search-v2"
    named = load_retriever(_url(server, "/x?key=1"), tmp_path).name
    assert named.startswith(_url(server, "/x") + "?(query ") and "key" not in named


def test_retriever_for_run_applies_every_retriever_option(
    tmp_path: Path, server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert retriever_for_run(RunOptions(), tmp_path) is None
    monkeypatch.setenv("SEARCH_TOKEN", TOKEN)
    run = RunOptions(
        retriever=_url(server, "/auth"),
        retriever_name="team-http",
        retriever_token_env="SEARCH_TOKEN",
        retriever_path_key="path",
        retriever_heading_key="section",
    )
    retriever = retriever_for_run(run, tmp_path)
    assert retriever is not None and retriever.name == "team-http"
    assert retriever.keys.heading == "section"
    assert [h.path for h in retriever.search("q", 5)] == ["a.md"]
    slow = retriever_for_run(
        RunOptions(retriever=_url(server, "/slow"), retriever_timeout=0.2), tmp_path
    )
    assert slow is not None
    with pytest.raises(RetrieverUnavailable, match=r"within 0\.2 s"):
        slow.search("q", 5)


# --------------------------------------------------------------------------- a whole session

HUNG_GOLDEN = "queries:\n" + "".join(
    f'  - id: q{n}\n    query: "question number {n}"\n    expected:\n      - path: "a.md"\n'
    for n in range(30)
)


#: each failing service and what its one line says
FAILURES = {
    "/slow": "did not answer within 0.5 s; raise --groove-retriever-timeout",
    "/down": "answered HTTP 503 Service Unavailable; is the service up?",
    "/fails": "answered HTTP 500 Internal Server Error for query 'question number *'; it "
    "said: \"Traceback (most recent call last): KeyError: 'index'\"",
    "/prose": "did not answer with JSON",
    "/moved": "answered HTTP 308 Permanent Redirect: the service redirected to "
    "http://127.0.0.1:*/v2/search\\x1b[31m; use that address",
    "/empty": "returned no hit for any of the first 3 golden queries it was asked",
    "refused": "cannot be reached: [[]Errno 111[]] Connection refused",
}


def _refused_url() -> str:
    """A local port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/search"


@pytest.mark.parametrize("path", list(FAILURES))
@pytest.mark.parametrize(
    "dist",
    [[], pytest.param(["-n", "2"], marks=pytest.mark.slow)],  # xdist: ~20 s, in the slow run
    ids=["one-process", "xdist"],
)
def test_a_failing_service_fails_a_30_query_session_once(
    pytester: pytest.Pytester, server: ThreadingHTTPServer, dist: list[str], path: str
) -> None:
    """Each process calls the service once (or, for an empty answer, three times), then
    skips its other golden items with a short reference: not one identical failure (and
    one wait) per query, and the session goes on with any other tests."""
    kb = pytester.path / "kb"
    kb.mkdir()
    (kb / ".groove-eval.yml").write_text(HUNG_GOLDEN, encoding="utf-8")
    (kb / "a.md").write_text("# A\n\nThe one answer of every question.\n", encoding="utf-8")
    url = _refused_url() if path == "refused" else _url(server, path)
    started = time.monotonic()
    result = pytester.runpytest_subprocess(
        "--groove-kb", "kb", "--groove-retriever", url, "-rs",
        "--groove-retriever-timeout", "0.5", "-p", "no:cacheprovider", *dist,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback (most recent call last):\n" not in output and "INTERNALERROR" not in output
    assert "\x1b" not in output and max(len(line) for line in output.splitlines()) < 400
    # one failure per process that searched, said in its section and the summary line
    # (an empty answer: the first three queries of each process miss, then it stops)
    calls = 3 if path == "/empty" else 1
    said = [line for line in result.stdout.lines if FAILURES[path].split("*")[0] in line]
    outcomes = result.parseoutcomes()
    failed = outcomes.get("failed", 0)
    processes = failed // calls
    assert failed % calls == 0 and 1 <= processes <= max(1, len(dist) and 2)
    assert len(said) <= 2 * processes + 1, "\n".join(said)
    result.stdout.fnmatch_lines([f"*{FAILURES[path]}*"])
    searched = len(server.headers_seen)  # type: ignore[attr-defined]
    assert searched <= failed
    # the rest of the golden items are skipped with a short reference, none searched
    assert outcomes.get("skipped", 0) == 30 - failed
    result.stdout.fnmatch_lines(["SKIPPED * not searched: the golden queries stopped at 'q*'"])
    assert "groove: the run stopped: retriever http://" in output
    assert "othing was recorded and the retrieval gate did not run" in output
    assert not (kb / ".groove-eval-history.json").exists()
    print(f"{path} session: {elapsed:.1f} s")  # reported, never asserted
