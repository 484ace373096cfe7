"""A hostile HTTP service cannot hang or flood a run: ``--retriever-timeout`` is one
deadline for the whole exchange (a service dripping its status line, its headers, its
body or an error body a byte at a time ends at it), every failed exchange stops the run
with one line, and what the service sent is quoted escaped and cut."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groove.errors import StopsTheRun
from pytest_groove.search.retrievers.external import RetrieverUnavailable, load_retriever
from pytest_groove.search.retrievers.http import one_line
from tests.helpers.local_http import dripping

#: the timeout these tests give, and what a deadline may overrun it by
TIMEOUT = 0.8
SLACK = 1.5

BODY = json.dumps([{"path": "a.md", "heading": None, "score": 1.0}] * 40).encode()


def _answer(status: str, body: bytes, *headers: str) -> bytes:
    head = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *headers, "", ""]
    return "\r\n".join(head).encode() + body


OK = _answer("200 OK", BODY, "Content-Type: application/json")
ERROR = _answer("500 Internal Server Error", b"x" * 400, "Content-Type: text/plain")

#: (what drips, the answer, how many bytes come at once before the drip)
DRIPS = {
    "status-line": (OK, 0),
    "headers": (OK, 20),
    "body": (OK, OK.index(b"\r\n\r\n") + 4),
    "error-body": (ERROR, ERROR.index(b"\r\n\r\n") + 4),
}


def _clean(line: str) -> None:
    assert len(line) < 400, line
    assert line.isprintable(), repr(line)


@pytest.mark.parametrize("part", list(DRIPS))
def test_a_service_dripping_any_part_of_its_answer_ends_at_the_timeout(
    part: str, tmp_path: Path
) -> None:
    answer, at_once = DRIPS[part]
    with dripping(answer, interval=0.1, at_once=at_once) as url:
        retriever = load_retriever(url, tmp_path, timeout=TIMEOUT)
        started = time.monotonic()
        with pytest.raises(StopsTheRun) as raised:
            retriever.search("q", 5)
        elapsed = time.monotonic() - started
    assert elapsed < TIMEOUT + SLACK, f"{part}: {elapsed:.1f} s"
    line = raised.value.message_for("cli")
    _clean(line)
    if part == "error-body":
        # the status came in time: the line names it, with what of the body came
        assert "answered HTTP 500 Internal Server Error for query 'q'" in line
    else:
        assert isinstance(raised.value, RetrieverUnavailable)
        assert f"did not answer within {TIMEOUT:g} s; raise --retriever-timeout" in line


#: text no terminal should receive raw: escapes, bells, line breaks, bidi overrides
HOSTILE = st.text(
    alphabet=st.sampled_from(list("\x1b\x07\r\n\u202e\x00[3maé")),
    min_size=1,
    max_size=400,
)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(text=HOSTILE)
def test_what_a_service_says_is_quoted_escaped_and_cut(text: str, tmp_path: Path) -> None:
    encoded = text.encode("utf-8")
    location = text.replace("\r", "").replace("\n", "").encode("utf-8") or b"x"
    reason = location.decode("utf-8")
    answers = [
        _answer("500 Oops", encoded),
        _answer(f"418 {reason}", b""),
        _answer(f"503 {reason}", b""),
        b"HTTP/1.1 302 Found\r\nLocation: /" + location + b"\r\nContent-Length: 0\r\n\r\n",
        _answer("200 OK", encoded),
    ]
    for answer in answers:
        with dripping(answer, at_once=len(answer)) as url:
            retriever = load_retriever(url, tmp_path, timeout=5)
            with pytest.raises(StopsTheRun) as raised:
                retriever.search("q", 5)
        _clean(raised.value.message_for("cli"))


@settings(max_examples=50, deadline=None)
@given(text=st.text(max_size=1000))
def test_one_line_is_one_escaped_line_of_at_most_80_characters(text: str) -> None:
    shown = one_line(ValueError(text))
    assert len(shown) <= 83 and shown.isprintable()  # 80 and "..."
