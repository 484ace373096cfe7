"""Appending a query to a golden file: every byte already there is kept, and the new
entry reads back through the golden loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import EXAMPLE_KB
from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.golden.append import NewQuery, append_query, appended_text
from pytest_groove.evaluation.golden.file import load_golden
from pytest_groove.scoring.records import ExpectedEntry

NEW = NewQuery(
    query="how do I go back: the 'old' build?",
    expected=(ExpectedEntry("ops/rollback.md", "How"), ExpectedEntry("README.md")),
    id="go-back",
    tags=("smoke",),
)


def _golden(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ".groove-eval.yml"
    path.write_bytes(text.encode("utf-8"))
    return path


def test_the_example_golden_file_keeps_every_byte_before_the_new_entry(tmp_path: Path) -> None:
    original = (EXAMPLE_KB / ".groove-eval.yml").read_bytes()
    assert b"\n# " in original or original.startswith(b"#")  # it has comments
    path = _golden(tmp_path, original.decode("utf-8"))
    before = load_golden(path, tmp_path)
    golden = append_query(path, tmp_path, NEW)
    written = path.read_bytes()
    assert written[: len(original)] == original
    assert golden.queries[:-1] == before.queries
    added = golden.queries[-1]
    assert (added.id, added.query, added.expected, added.tags) == (
        "go-back",
        NEW.query,
        NEW.expected,
        ("smoke",),
    )
    assert load_golden(path, tmp_path).queries == golden.queries
    # the items there are separated by blank lines: so is the new one
    assert written[len(original) :].startswith(b"\n  - id: go-back\n")


def test_what_follows_the_list_stays_after_it_unchanged(tmp_path: Path) -> None:
    text = (
        "queries:\n"
        "- query: first   # a comment\n"
        "  expected: [{path: a.md}]\n"
        "# trailing comment\n"
        "defaults: {limit: 5}\n"
    )
    out = appended_text(text, NEW, "golden")
    head = "queries:\n- query: first   # a comment\n  expected: [{path: a.md}]\n"
    assert out.startswith(head)
    assert out.endswith("# trailing comment\ndefaults: {limit: 5}\n")
    assert "- id: go-back\n  query:" in out[len(head) :]
    path = _golden(tmp_path, text)
    assert len(append_query(path, tmp_path, NEW).queries) == 2


def test_a_last_block_scalar_and_a_missing_final_newline(tmp_path: Path) -> None:
    scalar = "queries:\n  - expected:\n      - path: a.md\n    query: |\n      two\n      lines\n"
    assert appended_text(scalar, NEW, "g").startswith(scalar + "  - id: go-back\n")
    bare = "queries:\n  - query: q\n    expected:\n      - path: a.md"
    assert appended_text(bare, NEW, "g").startswith(bare + "\n  - id: go-back\n")
    path = _golden(tmp_path, scalar)
    assert append_query(path, tmp_path, NEW).queries[0].query == "two\nlines\n"


def test_an_id_in_use_and_a_flow_list_are_refused_and_the_file_is_unchanged(
    tmp_path: Path,
) -> None:
    text = "queries:\n  - id: go-back\n    query: q\n    expected:\n      - path: a.md\n"
    path = _golden(tmp_path, text)
    with pytest.raises(GrooveError, match=r"id `go-back` is already used by the query at line 2"):
        append_query(path, tmp_path, NEW)
    flow = "queries: [{query: q, expected: [{path: a.md}]}]\n"
    path = _golden(tmp_path, flow)
    with pytest.raises(GrooveError, match="flow style"):
        append_query(path, tmp_path, NEW)
    assert path.read_text(encoding="utf-8") == flow


def test_an_entry_the_loader_refuses_is_not_written(tmp_path: Path) -> None:
    text = "queries:\n  - query: q\n    expected:\n      - path: a.md\n"
    path = _golden(tmp_path, text)
    with pytest.raises(GrooveError, match="would become pytest's `skip` marker"):
        append_query(path, tmp_path, NewQuery("q2", (ExpectedEntry("a.md"),), tags=("skip",)))
    assert path.read_text(encoding="utf-8") == text
