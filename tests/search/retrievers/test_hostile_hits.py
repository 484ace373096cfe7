"""Nothing a retriever returns can hang or flood a run: an endless or huge answer is
read only as far as the run uses it, one hit costs a bounded time however long its
path, and every value of a hit quoted back is cut to 80 characters and escaped.

Hit shapes and values are generated (hypothesis); each answer must end quickly, with
no message line over a few hundred characters, no raw control character and no
exception but the one-line :class:`GrooveError`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groove.errors import GrooveError
from pytest_groove.search.retrievers.external import HitKeys, from_object
from pytest_groove.search.retrievers.hit_reader import DEFAULT_KEYS
from tests.helpers.kb_files import write_notes
from tests.helpers.local_http import serving, url_of
from tests.helpers.retriever_runs import errors_of, eval_retriever, retriever_module

#: the longest message line accepted (80-character echoes inside a sentence)
LONGEST_LINE = 600


def _check_line(line: str) -> None:
    assert len(line) <= LONGEST_LINE, line[:300]
    assert line.isprintable(), repr(line[:300])


def _search(hits: Any, kb: Path, keys: HitKeys = DEFAULT_KEYS, limit: int = 10) -> list[str]:
    """Search once; the lines said (warnings, then the error if any)."""
    said: list[str] = []
    retriever = from_object(lambda query, n: hits, kb, name="r", keys=keys, on_warning=said.append)
    try:
        retriever.search("q", limit)
    except GrooveError as exc:
        said.append(exc.message)
    return said


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_notes(tmp_path_factory.mktemp("kb"), {"ops/a.md": "# A\n\n## B\n\ntext\n"})


# --------------------------------------------------------------------------- generated

_HOSTILE = st.sampled_from(["\x1b[31m", "\x07", "\r", "\n", "\u202e", "\ud800", "\x00", "/"])
_TEXT = st.one_of(
    st.text(max_size=40),
    st.builds(lambda piece, n: piece * n, st.one_of(_HOSTILE, st.text(max_size=3)),
              st.integers(1, 200_000)),
    st.builds(lambda n: "/" + "a/" * n, st.integers(1, 400_000)),
)  # fmt: skip
_VALUE = st.one_of(
    st.none(), _TEXT, st.integers(), st.floats(), st.booleans(),
    st.builds(lambda n: 7 ** n, st.integers(0, 30_000)),
    st.lists(_TEXT, max_size=3), st.dictionaries(_TEXT, _TEXT, max_size=3),
)  # fmt: skip
_KEYS = st.sampled_from(["path", "heading", "score", "file_path", "source", "meta", "x"])
_MAPPING = st.dictionaries(st.one_of(_KEYS, _TEXT), _VALUE, max_size=5)


def _hit(shape: str, fields: dict[Any, Any]) -> Any:
    named = {k: v for k, v in fields.items() if isinstance(k, str) and k.isidentifier()}
    if shape == "dict":
        return fields
    if shape == "object":
        return SimpleNamespace(**named)
    if shape == "meta":
        return SimpleNamespace(meta=fields)
    if shape == "haystack":
        return SimpleNamespace(content="x", meta=fields, score=named.get("score"))
    if shape == "langchain":
        return SimpleNamespace(page_content="x", metadata=fields)
    return SimpleNamespace(node=SimpleNamespace(metadata=fields, text="x"), score=1.0)


_SHAPES = st.sampled_from(["dict", "object", "meta", "haystack", "langchain", "llamaindex"])
_HITS = st.lists(st.builds(_hit, _SHAPES, _MAPPING), max_size=6)
_OPTION = st.one_of(st.none(), _KEYS, st.just("meta.path"), st.just("a.b.c"))


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(hits=_HITS, path_key=_OPTION, heading_key=_OPTION)
def test_generated_hits_end_quickly_in_capped_escaped_lines(
    kb: Path, hits: list[Any], path_key: str | None, heading_key: str | None
) -> None:
    started = time.perf_counter()
    said = _search(hits, kb, HitKeys(path=path_key, heading=heading_key))
    assert time.perf_counter() - started < 2.0
    for line in said:
        _check_line(line)


# --------------------------------------------------------------------------- known cases


def test_an_endless_generator_returns_and_says_it_returned_more(kb: Path) -> None:
    endless: Iterator[dict[str, Any]] = ({"path": "ops/a.md"} for _ in itertools.count())
    started = time.perf_counter()
    said = _search(endless, kb, limit=5)
    assert time.perf_counter() - started < 1.0
    assert said == [
        "retriever r returned more than the 5 hits it was asked for; only the first 5 were "
        "read (ask it for 5, and it does less work)"
    ]


def test_a_hundred_thousand_hits_cost_what_the_limit_does(kb: Path) -> None:
    many = [{"path": "ops/a.md", "score": 1.0}] * 100_000
    retriever = from_object(lambda query, n: many, kb, name="r")
    started = time.perf_counter()
    for _ in range(10):
        assert len(retriever.search("q", 10)) == 10
    assert time.perf_counter() - started < 0.5
    assert len(retriever.warnings) == 1  # told once a run, not once a query


def test_a_ten_megabyte_absolute_path_is_refused_in_one_capped_line(kb: Path) -> None:
    path = str(kb) + "/a" * 5_000_000
    started = time.perf_counter()
    (line,) = _search([{"path": path}], kb)
    assert time.perf_counter() - started < 1.0
    _check_line(line)
    assert line.startswith("retriever r: hit 1 has a path of 10,000,0")
    assert "longer than any file path (4,096 characters, 256 folders)" in line


def test_control_characters_in_a_value_are_escaped(kb: Path) -> None:
    (line,) = _search([{"path": "ops/a.md", "heading": {"\x1b[2J": "\x07"}}], kb)
    _check_line(line)
    assert "\\x1b[2J" in line and "\\x07" in line


def test_a_key_option_is_honoured_for_objects_and_not_advised_again(kb: Path) -> None:
    hit = SimpleNamespace(meta={"file": "ops/a.md", "section": "B"}, score=2.0)
    retriever = from_object(
        lambda query, n: [hit], kb, keys=HitKeys(path="file", heading="section")
    )
    assert [(h.path, h.heading, h.score) for h in retriever.search("q", 5)] == [
        ("ops/a.md", "B", 2.0)
    ]
    (line,) = _search([SimpleNamespace(meta={"doc": "ops/a.md"})], kb, HitKeys(path="file"))
    assert "--retriever-path-key names (the hit holds 'doc'" in line, line
    assert "or name the key with" not in line


def test_a_dict_hit_reads_file_path_and_source(kb: Path) -> None:
    for key in ("file_path", "source"):
        retriever = from_object(lambda query, n, key=key: [{key: "ops/a.md"}], kb)
        assert retriever.search("q", 5)[0].path == "ops/a.md"


HOSTILE_MODULE = """\
def search(query, limit):
    return [{{"path": {path!r}, "heading": {heading!r}}}]
"""


@pytest.mark.parametrize(
    ("path", "heading"),
    [
        ("\\x1b]0;owned\\x07" + "x" * 1_000_000 + ".md", None),
        ("ops/a.md", "\\x1b[31m" + "h" * 5_000),
        ("elsewhere/\\x07" + "n" * 500 + ".md", None),
    ],
)
def test_groove_eval_says_a_hostile_value_in_one_capped_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, heading: str | None
) -> None:
    kb = write_notes(tmp_path / "kb", {"ops/a.md": "# A\\n\\n## B\\n\\ntext\\n"})
    (kb / ".groove-eval.yml").write_text(
        "queries:\\n  - query: a\\n    expected:\\n      - path: ops/a.md\\n", encoding="utf-8"
    )
    path = path.encode().decode("unicode_escape")
    heading = heading.encode().decode("unicode_escape") if heading else None
    name = retriever_module(
        tmp_path, HOSTILE_MODULE.format(path=path, heading=heading), monkeypatch
    )
    done = eval_retriever(kb, tmp_path, f"{name}:search")
    assert done.returncode != 0
    assert len(errors_of(done)) == 1, done.stderr[:2000]
    for line in (done.stdout + done.stderr).splitlines():
        _check_line(line)
    assert "Traceback" not in done.stderr


class _Redirecting(BaseHTTPRequestHandler):
    """Redirects with a hostile Location and reason phrase."""

    def do_POST(self) -> None:
        self.send_response(302, "Found\x1b[2J")
        self.send_header("Location", "/\x1b]0;owned\x07" + "a" * 10_000)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_redirect_target_is_echoed_capped_and_escaped(kb: Path) -> None:
    from pytest_groove.search.retrievers.external import http_retriever

    with serving(_Redirecting) as server:
        retriever = http_retriever(url_of(server, "/search"), kb, timeout=5)
        with pytest.raises(GrooveError) as caught:
            retriever.search("q", 5)
    line = caught.value.message
    _check_line(line)
    assert "redirected to http://127.0.0.1:" in line and "Found\\x1b[2J" in line


def test_judging_a_run_of_long_distinct_paths_is_quick(kb: Path) -> None:
    """300 distinct paths at the length cap, 256 folders each, percent-encoded (so each
    is judged once more decoded): the run's check was 29 s before, quadratic in folders."""
    from pytest_groove.search.retrievers.hit_checks import check_retriever_hits

    paths = [[("%41/" * 255 + f"x{q}-{i}.md")[:4096] for i in range(10)] for q in range(30)]
    started = time.perf_counter()
    report = check_retriever_hits("r", "callable", kb, paths, {"ops/a.md"}, 10)
    assert time.perf_counter() - started < 5.0
    assert report.error is not None
    _check_line(report.error)


class _Record:
    """A hit whose fields are properties (nothing in its __dict__)."""

    @property
    def file(self) -> str:
        return "ops/a.md"

    @property
    def section(self) -> str:
        return "B"


def test_a_key_option_reads_an_objects_property(kb: Path) -> None:
    keys = HitKeys(path="file", heading="section")
    retriever = from_object(lambda query, n: [_Record()], kb, keys=keys)
    assert [(h.path, h.heading) for h in retriever.search("q", 5)] == [("ops/a.md", "B")]
