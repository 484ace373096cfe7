"""The guarded output stream: ASCII degradation and one error for a failed write."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from pytest_groove.errors import OutputFailed
from pytest_groove.text.console import ERROR_HANDLER, guarded_text_stream, json_for


def to_ascii(text: str) -> str:
    """``text`` as the degraded output would show it on an ASCII-only terminal."""
    return text.encode("ascii", errors=ERROR_HANDLER).decode("ascii")


def test_report_characters_degrade_to_ascii() -> None:
    assert to_ascii("recall@5  0.9 (— ) ↑ ✗ ✓ → …") == "recall@5  0.9 (- ) ^ x ok -> ..."
    # anything else becomes an escape, never an error
    assert to_ascii("日本") == "\\u65e5\\u672c"
    assert to_ascii("\udfff") == "\\udfff"


def test_an_ascii_stream_writes_degraded_text(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT)
    stream = guarded_text_stream(fd, "out.txt", "ascii")
    stream.write("a — b ↑\n")
    stream.flush()
    os.close(fd)
    assert target.read_bytes() == b"a - b ^\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_device_is_one_error_then_silence() -> None:
    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        stream = guarded_text_stream(fd, "standard output", "utf-8")
        stream.write("report\n")
        with pytest.raises(OutputFailed) as caught:
            stream.flush()
        assert "/dev/full" in caught.value.message and "no space left" in caught.value.message
        stream.write("more\n")
        stream.flush()  # dropped: the failure was reported once
    finally:
        os.close(fd)


def test_a_closed_pipe_is_one_error() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        stream = guarded_text_stream(write_end, "standard output", "utf-8")
        stream.write("x" * 10)
        with pytest.raises(OutputFailed) as caught:
            stream.flush()
        assert "pipe was closed" in caught.value.message
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    ("encoding", "value"),
    [
        ("euc_jp", "必要なもの"),
        ("iso8859-1", "café"),
        ("cp1252", "café – 5 €"),
        ("utf-16", "必要 𝄞"),
    ],
)
def test_json_on_a_stream_that_is_not_utf8_is_ascii(encoding: str, value: str) -> None:
    # JSON between systems is UTF-8 (RFC 8259): a stream in any other encoding gets the
    # JSON's own \u escapes, also for the characters its encoding could write (before:
    # EUC-JP bytes for `必要`, Latin-1 bytes for `é`)
    document = json.dumps({"query": value}, ensure_ascii=False)
    value.encode(encoding)  # each value is one its stream could carry as it is
    stream = io.TextIOWrapper(io.BytesIO(), encoding=encoding)
    assert json_for(stream, document) == json.dumps({"query": value})  # ensure_ascii's
    utf8 = io.TextIOWrapper(io.BytesIO(), encoding="UTF-8")
    assert json_for(utf8, document) == document
