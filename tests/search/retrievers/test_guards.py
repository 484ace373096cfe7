"""A custom retriever's misbehaviours each end in one line naming the right cause:
a trickling service, SystemExit, shared default names, an empty store, silent losses
(hits outside the KB, headings spelt as Markdown), misleading error lines, and engine
options that do not apply."""

from __future__ import annotations

import functools
import gc
import json
import sys
import time
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pytest_groove.engine.searcher import RetrieverSearcher
from pytest_groove.errors import GrooveError, StopsTheRun
from pytest_groove.evaluation.history.file import HISTORY_FILE_NAME
from pytest_groove.search.retrievers.external import (
    RetrieverUnavailable,
    from_object,
    kb_relative,
    load_retriever,
    retriever_name,
)
from pytest_groove.search.retrievers.http import public_url
from pytest_groove.settings.config import Settings
from tests.helpers.cli_invoke import CliRun, invoke
from tests.helpers.local_http import serving, url_of

ANSWER = [{"path": "ops/release-train.md", "heading": "Schedule", "score": 1.0}]


@pytest.fixture
def kb(example_kb_copy: Path) -> Path:
    return example_kb_copy


def _module(tmp_path: Path, source: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A retriever module in ``tmp_path`` under a name no other test imported."""
    name = f"team_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def _eval(kb: Path, cwd: Path, *args: str) -> CliRun:
    return invoke("eval", "--kb-path", kb, *args, cwd=cwd)


def _errors(done: CliRun) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("Error:")]


# --------------------------------------------------------------------------- HTTP


class _Service(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            if self.path == "/trickle":
                body = json.dumps(ANSWER * 20).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                for start in range(0, len(body), 40):
                    self.wfile.write(body[start : start + 40])
                    self.wfile.flush()
                    time.sleep(0.2)
            elif self.path.startswith("/moved"):
                self.send_response(301)
                self.send_header("Location", "/search")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path == "/latin1":
                text = json.dumps([{"path": "ops/café.md"}], ensure_ascii=False)
                self.send_response(200)
                self.send_header("Content-Type", "application/json; charset=iso-8859-1")
                self.send_header("Content-Length", str(len(text.encode("latin-1"))))
                self.end_headers()
                self.wfile.write(text.encode("latin-1"))
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up at its deadline


@pytest.fixture
def service() -> Iterator[ThreadingHTTPServer]:
    with serving(_Service) as httpd:
        yield httpd


def test_the_timeout_is_a_deadline_for_the_whole_answer(
    service: ThreadingHTTPServer, kb: Path
) -> None:
    url = url_of(service, "/trickle")
    retriever = load_retriever(url, kb, timeout=0.6)
    started = time.monotonic()
    with pytest.raises(RetrieverUnavailable) as raised:
        retriever.search("q", 5)
    assert time.monotonic() - started < 1.5  # each 40 bytes came within 0.6 s
    assert raised.value.message_for("cli") == (
        f"retriever {url} did not answer within 0.6 s; raise --retriever-timeout "
        "or check the service"
    )


def test_a_redirect_names_where_to_point_the_retriever(
    service: ThreadingHTTPServer, kb: Path
) -> None:
    retriever = load_retriever(url_of(service, "/moved"), kb)
    with pytest.raises(GrooveError) as raised:
        retriever.search("q", 5)
    assert "HTTP 301" in raised.value.message and "HTTP 405" not in raised.value.message
    assert f"redirected to {url_of(service, '/search')}; use that address" in raised.value.message


def test_an_answer_in_a_declared_charset_is_read_in_it(
    service: ThreadingHTTPServer, kb: Path
) -> None:
    hits = load_retriever(url_of(service, "/latin1"), kb).search("q", 5)
    assert [hit.path for hit in hits] == ["ops/café.md"]


def test_a_url_query_is_kept_in_the_name_as_a_digest_never_in_clear() -> None:
    v1 = public_url("http://u:pw@search.local:8080/ok?index=v1&token=s3cret")
    v2 = public_url("http://search.local:8080/ok?index=v2&token=s3cret")
    assert v1 != v2 and v1.startswith("http://search.local:8080/ok?")
    assert "s3cret" not in v1 + v2 and "index" not in v1 and "pw" not in v1
    assert v1 == public_url("http://search.local:8080/ok?index=v1&token=s3cret")
    assert public_url("http://search.local/ok") == "http://search.local/ok"


# --------------------------------------------------------------------------- SystemExit


def test_a_retriever_exiting_at_import_is_one_line(
    kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _module(
        tmp_path,
        "import argparse\n"
        "p = argparse.ArgumentParser()\np.add_argument('--index', required=True)\n"
        "p.parse_args()\ndef search(q, limit): return []\n",
        monkeypatch,
    )
    done = _eval(kb, tmp_path, "--retriever", f"{name}:search", "--no-history")
    assert done.returncode == 1
    assert _errors(done) == [
        f"Error: retriever {name}:search exited (SystemExit: 2) while importing {name}; a "
        "retriever must return hits, not exit (sys.exit, or argparse reading groove's "
        "command line?)"
    ]


def test_a_retriever_exiting_while_searching_stops_the_run(kb: Path) -> None:
    def search(query: str, limit: int) -> list[Any]:
        raise SystemExit(3)

    with pytest.raises(StopsTheRun, match=r"^retriever r exited \(SystemExit: 3\) while searching"):
        from_object(search, kb, name="r").search("q", 5)


# --------------------------------------------------------------------------- names


def _team_search(query: Any, limit: Any = 5, index: str = "v1") -> list[Any]:
    return []


def test_partials_are_named_by_their_function_and_bound_arguments() -> None:
    v1 = retriever_name(functools.partial(_team_search, index="v1"))
    v2 = retriever_name(functools.partial(_team_search, index="v2"))
    assert v1 != v2
    assert v1.startswith(f"{__name__}._team_search[partial ")
    assert v1 == retriever_name(functools.partial(_team_search, index="v1"))
    # an object's address differs per process; the name does not
    assert retriever_name(functools.partial(_team_search, object())) == retriever_name(
        functools.partial(_team_search, object())
    )


# --------------------------------------------------------------------------- empty store


def test_an_empty_store_stops_the_run_and_records_nothing(
    kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("chromadb")
    name = _module(
        tmp_path,
        "import chromadb\n"
        "client = chromadb.EphemeralClient()  # default settings: chromadb keeps one per process\n"
        "col = client.get_or_create_collection('kb-sectons', embedding_function=None)\n"
        "def search(query, limit):\n"
        "    return col.query(query_embeddings=[[0.1] * 8], n_results=limit)\n",
        monkeypatch,
    )
    done = _eval(kb, tmp_path, "--retriever", f"{name}:search")
    assert done.returncode == 1
    (error,) = _errors(done)
    assert "returned no hit for any of the" in error
    assert "is its store empty or pointed at the wrong collection?" in error
    assert not (kb / HISTORY_FILE_NAME).exists()


# --------------------------------------------------------------------------- silent losses


def test_half_the_hits_outside_the_kb_is_a_warning() -> None:
    from pytest_groove.search.retrievers.hit_checks import some_hits_outside_kb

    kb_files = frozenset({"a.md", "b.md"})
    half = [["a.md", "x/a.md"], ["b.md", "x/b.md"]]
    warning = some_hits_outside_kb("r", half, kb_files, Path("kb"))
    assert warning is not None and "2 of its 4 hits, in 2 of 2 queries" in warning
    one_in_five = [["a.md", "stale.md"]] + [["a.md"]] * 4
    assert some_hits_outside_kb("r", one_in_five, kb_files, Path("kb")) is None


def test_heading_spellings_are_read_as_the_documents_heading(kb: Path) -> None:
    answers = iter(
        [
            [{"path": "ops/release-train.md", "heading": h}]
            for h in ("## Schedule", "**Schedule**", "Release train > Schedule", "Shedule")
        ]
    )
    told: list[str] = []
    retriever = from_object(lambda q, n: next(answers), kb, name="r", on_warning=told.append)
    searcher = RetrieverSearcher(retriever, kb, Settings())
    headings = [searcher.search("q", 5)[0].heading for _ in range(3)]
    assert headings == ["Schedule", "Schedule", "Schedule"]
    assert told == []
    assert searcher.search("q", 5)[0].heading == "Shedule"
    assert len(told) == 1 and "'Shedule' for 'ops/release-train.md'" in told[0]


def test_a_searcher_that_never_searched_warns_as_the_ones_that_did(kb: Path) -> None:
    """An xdist controller never builds a named retriever: the workers' search notes
    give it their retriever's kind (the depth advice is the LangChain one) and their
    warnings, each once, and one unknown-heading warning, as one process tells it."""
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class Notes(BaseRetriever):
        heading: str

        def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> Any:
            meta = {"source": "ops/rollback.md", "heading": self.heading, "score": float("nan")}
            return [Document(page_content="Roll back.", metadata=meta)]

    def worker(heading: str) -> RetrieverSearcher:
        searcher = RetrieverSearcher(from_object(Notes(heading=heading), kb), kb, Settings())
        searcher.search("how do I roll back", 10)
        return searcher

    def controller() -> RetrieverSearcher:
        return RetrieverSearcher(lambda: pytest.fail("built"), kb, Settings(), name="notes")

    one = controller()
    for searcher in (worker("Doc title / Rolling back"), worker("Doc title / Undo")):
        notes = json.loads(json.dumps(searcher.search_notes()))  # as xdist ships them
        one.add_search_notes(notes)
        one.add_search_notes(notes)  # a report that repeats them adds nothing
    results = [_result("how do I roll back", ["ops/rollback.md"])]
    told = one.answer_warnings(results, 10)
    assert len(told) == 3, told
    assert sum("is not a heading of that document" in line for line in told) == 1
    assert sum("NaN" in line for line in told) == 1
    assert "as_retriever(search_kwargs={'k': 10})" in told[-1]
    assert not one.built
    # one process that searched itself tells the same
    assert len(worker("Doc title / Undo").answer_warnings(results, 10)) == 3


def _result(query: str, paths: list[str]) -> Any:
    from pytest_groove.evaluation.runs.record import evaluate_query
    from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery
    from pytest_groove.search.hits import SearchHit

    golden = GoldenQuery(id="q", query=query, expected=(ExpectedEntry(path=paths[0]),))
    hits = [SearchHit(rank=n, path=p, heading=None, score=1.0) for n, p in enumerate(paths, 1)]
    return evaluate_query(golden, hits, (1, 10))


# --------------------------------------------------------------------------- causes


def test_error_lines_name_the_right_cause(kb: Path, tmp_path: Path) -> None:
    spaced = tmp_path / "my kb"
    spaced.mkdir()
    assert kb_relative(f"file://{spaced.as_posix().replace(' ', '%20')}/a.md", spaced) == "a.md"
    retriever = from_object(lambda q, n: [{"path": kb / "ops" / "rollback.md"}], kb)
    assert [hit.path for hit in retriever.search("q", 5)] == ["ops/rollback.md"]


@pytest.mark.parametrize(
    ("path", "advice"),
    [
        (
            "https://wiki.example.com/ops/rollback.md",
            "the hits carry URLs ('https://wiki.example.com/ops/rollback.md'), not files",
        ),
        (
            "ops/rollback.md#how",
            "the paths carry a #fragment ('ops/rollback.md#how'): return the file's path "
            "alone ('ops/rollback.md') and the section as the hit's heading",
        ),
    ],
)
def test_a_url_or_a_fragment_is_quoted_whole_and_named(
    kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, advice: str
) -> None:
    name = _module(
        tmp_path, f"def search(query, limit):\n    return [{{'path': {path!r}}}]\n", monkeypatch
    )
    (error,) = _errors(_eval(kb, tmp_path, "--retriever", f"{name}:search", "--no-history"))
    assert f"(e.g. {path!r})" in error
    assert advice in error


def test_an_async_retriever_is_refused_with_the_fix_and_no_warning(kb: Path) -> None:
    async def asearch(query: str, limit: int) -> list[Any]:
        return []

    with pytest.raises(GrooveError, match="async retrievers are not supported"):
        from_object(asearch, kb)

    class OnlyAsync:
        async def aretrieve(self, query: str) -> list[Any]:
            return []

    with pytest.raises(GrooveError, match="only aretrieve"):
        from_object(OnlyAsync(), kb)
    with warnings.catch_warnings(record=True) as seen:
        # recorded, not raised: Python reports a coroutine never awaited while it is
        # finalised, where an exception would only be printed; other tests' leftovers
        # (an unclosed socket found by the same collection) are not this test's
        warnings.simplefilter("always")
        wrapped = from_object(lambda q, n: asearch(q, n), kb, name="r")
        with pytest.raises(GrooveError, match=r"it is async.*asyncio\.run"):
            wrapped.search("q", 5)
        gc.collect()
    assert not [w for w in seen if "was never awaited" in str(w.message)]


# --------------------------------------------------------------------------- options


def test_engine_options_beside_a_retriever_are_a_warning(
    kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _module(tmp_path, f"def search(q, limit): return {ANSWER!r}\n", monkeypatch)
    done = _eval(
        kb, tmp_path, "--retriever", f"{name}:search", "--model", "hash", "--index-dir",
        str(tmp_path / "idx"), "--no-history",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        "groove eval: warning: --model, --index-dir do not apply to a custom retriever"
        in done.stderr
    )
