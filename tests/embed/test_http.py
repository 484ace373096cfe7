"""``http:<url>`` against a tiny OpenAI-compatible server on 127.0.0.1 (loopback only).

The server answers ``/v1/embeddings``-style requests with HashEmbedder vectors
scaled by 3 (so the client's normalisation is visible) and lists ``data`` in
reverse order (so the client must sort by ``index``).  Paths and a ``mode`` switch
produce the failure cases.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groove.embed.base import Embedder
from pytest_groove.embed.hashing import HashEmbedder
from pytest_groove.embed.http import BATCH_SIZE, HttpEmbedder, canonical_url
from pytest_groove.embed.registry import get_embedder, model_slug
from pytest_groove.errors import GrooveError
from tests.helpers.local_http import serving


@dataclass
class _Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class _State:
    mode: str = "ok"
    requests: list[_Seen] = field(default_factory=list)
    #: answer this many requests 503 (Retry-After: 0) before the mode applies
    overloaded: int = 0


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the client hung up on the "slow" mode: expected, keep output clean


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, payload: bytes, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        state = self.server.state
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        state.requests.append(_Seen(self.path, dict(self.headers.items()), body))
        mode = "fail" if self.path.startswith("/fail") else state.mode
        texts: list[str] = body["input"]
        vectors = HashEmbedder().embed_passages(texts) * 3.0
        data = [
            {"object": "embedding", "index": i, "embedding": v.tolist()}
            for i, v in enumerate(vectors)
        ]
        if state.overloaded > 0:
            state.overloaded -= 1
            self._send(503, b'{"error": "busy"}', {"Retry-After": "0"})
        elif mode == "fail":
            error = {"error": {"message": "model exploded", "type": "server_error"}}
            self._send(500, json.dumps(error).encode())
        elif mode == "unauthorised":
            self._send(401, b'{"error": "bad token"}')
        elif mode == "redirect":
            self._send(307, b"", {"Location": "http://127.0.0.1:9/elsewhere"})
        elif mode == "garbage":
            self._send(200, b"<html>not json</html>")
        elif mode == "short":
            self._send(200, json.dumps({"data": data[:-1]}).encode())
        elif mode == "bad-index":
            for item in data:
                item["index"] = 7
            self._send(200, json.dumps({"data": data}).encode())
        elif mode == "nan":
            data[0]["embedding"][0] = math.nan
            self._send(200, json.dumps({"data": data}).encode())
        elif mode == "wider":
            for item in data:
                item["embedding"].append(1.0)
            self._send(200, json.dumps({"data": data}).encode())
        elif mode == "slow":
            time.sleep(1.0)
            self._send(200, json.dumps({"data": data}).encode())
        else:
            self._send(200, json.dumps({"object": "list", "data": data[::-1]}).encode())


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    with serving(_Handler, _Server, state=_State()) as httpd:
        yield httpd


@pytest.fixture
def base(server: _Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """Base URL of a fresh-state server, with no HTTP env configuration leaking in."""
    server.state = _State()
    for key in (
        "GROOVE_HTTP_MODEL",
        "GROOVE_HTTP_API_KEY",
        "GROOVE_HTTP_TIMEOUT",
        "GROOVE_HTTP_BATCH",
        "GROOVE_HTTP_RETRIES",
    ):
        monkeypatch.delenv(key, raising=False)
    host, port = server.server_address[:2]
    return f"http://{host!s}:{port}"


def probed_embedder(server: _Server, base: str) -> HttpEmbedder:
    """An embedder of ``base`` whose construction probe the server has forgotten, so the
    requests recorded are the test's own."""
    embedder = HttpEmbedder(base)
    server.state.requests.clear()
    return embedder


def _expected(texts: list[str]) -> np.ndarray:
    return HashEmbedder().embed_passages(texts)


def test_round_trip_through_the_registry(server: _Server, base: str) -> None:
    embedder = get_embedder(base)
    assert isinstance(embedder, HttpEmbedder)
    assert isinstance(embedder, Embedder)
    assert embedder.name == base
    assert embedder.dimension == 256  # discovered by the construction probe
    texts = ["alpha", "beta gamma", "データベース", ""]
    for vectors in (embedder.embed_passages(texts), embedder.embed_queries(texts)):
        assert vectors.dtype == np.float32 and vectors.shape == (4, 256)
        np.testing.assert_allclose(vectors, _expected(texts), atol=1e-6)  # reordered, rescaled
    paths = {seen.path for seen in server.state.requests}
    assert paths == {"/v1/embeddings"}
    assert all("model" not in seen.body for seen in server.state.requests)
    assert all("input_type" not in seen.body for seen in server.state.requests)


def test_empty_input_sends_nothing(server: _Server, base: str) -> None:
    embedder = HttpEmbedder(base)
    before = len(server.state.requests)
    assert embedder.embed_passages([]).shape == (0, 256)
    assert len(server.state.requests) == before


def test_batches_of_256_in_order(server: _Server, base: str) -> None:
    embedder = probed_embedder(server, base)
    texts = [f"text number {i}" for i in range(600)]
    vectors = embedder.embed_passages(texts)
    sent = [seen.body["input"] for seen in server.state.requests]
    assert [len(batch) for batch in sent] == [256, 256, 88]
    assert [t for batch in sent for t in batch] == texts
    np.testing.assert_allclose(vectors, _expected(texts), atol=1e-6)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.text(max_size=30), max_size=140))
def test_any_batch_round_trips(server: _Server, base: str, texts: list[str]) -> None:
    embedder = probed_embedder(server, base)
    vectors = embedder.embed_queries(texts)
    assert vectors.shape == (len(texts), 256)
    assert len(server.state.requests) == math.ceil(len(texts) / BATCH_SIZE)
    np.testing.assert_allclose(vectors, _expected(texts), atol=1e-6)


@pytest.mark.parametrize(
    ("suffix", "path"),
    [
        ("", "/v1/embeddings"),
        ("/", "/v1/embeddings"),
        ("/v1", "/v1/embeddings"),
        ("/api/v1/", "/api/v1/embeddings"),
        ("/custom/embeddings", "/custom/embeddings"),
        ("/proxy?tenant=a", "/proxy/v1/embeddings?tenant=a"),
    ],
)
def test_endpoint_path(server: _Server, base: str, suffix: str, path: str) -> None:
    embedder = HttpEmbedder(base + suffix)
    assert embedder.endpoint == base + path
    assert server.state.requests[-1].path == path


def test_url_spellings_share_one_canonical_name(server: _Server, base: str) -> None:
    hostport = base.removeprefix("http://")
    assert canonical_url(f"http:{hostport}") == base
    assert canonical_url(f"http:{base}") == base
    for spelling in (f"http:{hostport}", f"http:{base}", base):
        assert get_embedder(spelling).name == base
    assert model_slug(get_embedder(f"http:{hostport}").name) == model_slug(base)
    assert model_slug(f"http:{hostport}") == model_slug(f"http:{base}") == model_slug(base)


def test_texts_that_are_not_valid_utf8_are_sent_cleaned(server: _Server, base: str) -> None:
    embedder = HttpEmbedder(base)
    vectors = embedder.embed_passages(["caf\udce9", "ok"])
    assert server.state.requests[-1].body["input"] == ["caf?", "ok"]
    np.testing.assert_allclose(vectors, _expected(["caf?", "ok"]), atol=1e-6)


def test_model_from_fragment_and_environment(
    server: _Server, base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from_fragment = HttpEmbedder(base + "#model=text-embed-small")
    assert server.state.requests[-1].body["model"] == "text-embed-small"
    assert from_fragment.name == base + "#model=text-embed-small"

    monkeypatch.setenv("GROOVE_HTTP_MODEL", "other model")
    from_env = HttpEmbedder(base)
    assert server.state.requests[-1].body["model"] == "other model"
    # the model is part of the identity, so it is part of the name (and the slug)
    assert from_env.name == base + "#model=other%20model"
    assert model_slug(from_env.name) != model_slug(base)
    # an explicit fragment wins over the environment
    HttpEmbedder(base + "#model=explicit")
    assert server.state.requests[-1].body["model"] == "explicit"


def test_input_type_is_opt_in(server: _Server, base: str) -> None:
    embedder = HttpEmbedder(base + "#model=m&input_type=1")
    assert embedder.name == base + "#model=m&input_type=1"
    embedder.embed_passages(["doc"])
    assert server.state.requests[-1].body["input_type"] == "passage"
    embedder.embed_queries(["question"])
    assert server.state.requests[-1].body["input_type"] == "query"


def test_bearer_token_from_environment_never_in_name(
    server: _Server, base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROOVE_HTTP_API_KEY", "s3cret-token")
    embedder = HttpEmbedder(base)
    assert server.state.requests[-1].headers["Authorization"] == "Bearer s3cret-token"
    assert "s3cret" not in embedder.name


def test_server_error_names_url_status_and_message(server: _Server, base: str) -> None:
    with pytest.raises(GrooveError) as info:
        get_embedder(base + "/fail")
    message = info.value.message
    assert f"{base}/fail/v1/embeddings" in message
    assert "HTTP 500" in message and "model exploded" in message
    assert "\n" not in message


def test_error_after_construction(server: _Server, base: str) -> None:
    embedder = HttpEmbedder(base)
    server.state.mode = "fail"
    with pytest.raises(GrooveError, match=r"answered HTTP 500"):
        embedder.embed_passages(["a"])


@pytest.mark.parametrize(
    ("mode", "pattern"),
    [
        ("unauthorised", r"HTTP 401 .*bad token.*GROOVE_HTTP_API_KEY"),
        ("redirect", r"HTTP 307 .*redirects are not followed"),
        ("garbage", r"invalid JSON"),
        ("short", r"unexpected response: 1 embeddings for 2 inputs"),
        ("bad-index", r"unexpected response: 'index' values are not 0\.\.1"),
        ("nan", r"unexpected response: non-finite"),
        ("wider", r"unexpected response: dimension 257, but the first response had 256"),
    ],
)
def test_bad_answers_become_groove_errors(
    server: _Server, base: str, mode: str, pattern: str
) -> None:
    embedder = HttpEmbedder(base)
    server.state.mode = mode
    with pytest.raises(GrooveError, match=pattern) as info:
        embedder.embed_passages(["one", "two"])
    assert base in info.value.message


def test_overloaded_server_is_retried_then_answers(server: _Server, base: str) -> None:
    embedder = probed_embedder(server, base)
    server.state.overloaded = 2
    vectors = embedder.embed_passages(["one", "two"])
    np.testing.assert_allclose(vectors, _expected(["one", "two"]), atol=1e-6)
    assert len(server.state.requests) == 3


def test_retries_are_bounded_and_said(
    server: _Server, base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROOVE_HTTP_RETRIES", "1")
    embedder = probed_embedder(server, base)
    server.state.overloaded = 5
    with pytest.raises(GrooveError, match=r"HTTP 503.*still failing after 1 retries"):
        embedder.embed_passages(["one"])
    assert len(server.state.requests) == 2
    monkeypatch.setenv("GROOVE_HTTP_RETRIES", "-2")
    with pytest.raises(GrooveError, match="GROOVE_HTTP_RETRIES='-2'"):
        HttpEmbedder(base)


def test_batch_size_from_environment(
    server: _Server, base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROOVE_HTTP_BATCH", "2")
    embedder = probed_embedder(server, base)
    embedder.embed_passages(["a", "b", "c", "d", "e"])
    assert [len(r.body["input"]) for r in server.state.requests] == [2, 2, 1]


def test_timeout_is_reported(server: _Server, base: str) -> None:
    embedder = HttpEmbedder(base, timeout=0.2)
    server.state.mode = "slow"
    with pytest.raises(GrooveError, match=r"did not answer within 0\.2 s"):
        embedder.embed_queries(["x"])


def test_timeout_from_environment(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROOVE_HTTP_TIMEOUT", "7.5")
    assert HttpEmbedder(base).timeout == 7.5
    monkeypatch.setenv("GROOVE_HTTP_TIMEOUT", "soon")
    with pytest.raises(GrooveError, match="GROOVE_HTTP_TIMEOUT='soon'"):
        HttpEmbedder(base)


def test_unreachable_server() -> None:
    closed = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    port = closed.server_address[1]
    closed.server_close()  # nothing listens there any more
    with pytest.raises(
        GrooveError,
        match=rf"could not reach embedding server http://127\.0\.0\.1:{port}/v1/embeddings",
    ):
        HttpEmbedder(f"http://127.0.0.1:{port}")


@pytest.mark.parametrize(
    ("url", "pattern"),
    [
        ("http://user:hunter2@127.0.0.1:1", "contains credentials"),
        ("http://127.0.0.1:99999", "malformed: Port out of range"),
        ("http://[::1", "malformed"),
        ("http:///v1", "needs a host"),
        ("http://127.0.0.1:1#dims=3", "unknown fragment key 'dims'"),
        ("http://127.0.0.1:1#model=m&input_type=maybe", "input_type must be 1 or 0"),
    ],
)
def test_bad_urls_fail_before_any_request(url: str, pattern: str) -> None:
    with pytest.raises(GrooveError, match=pattern) as info:
        HttpEmbedder(url)
    assert "hunter2" not in info.value.message
