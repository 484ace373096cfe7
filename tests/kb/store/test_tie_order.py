"""Equal scores are ordered by each chunk's place in the corpus, never by its row id.

Row ids tell the index's history (an edited note's chunks are numbered after all
others, a renamed note keeps its numbers), so ordered by id, the same notes ranked
differently after ``index --force`` or a cache miss, and the gate blamed retrieval.
Through ``groove eval`` (hash model): after each change an updated index must answer
exactly as a fresh build of the same notes -- every hit, score and metric.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE_KB, copy_example_kb
from pytest_groove.kb.store.database import Store
from pytest_groove.kb.store.tie_order import (
    IN_ID_ORDER,
    TIE_ORDER_META,
    TieOrder,
    decode_tie_order,
    encode_tie_order,
    path_key,
    tie_order,
)
from tests.helpers.cli_invoke import invoke

# --------------------------------------------------------------------------- the order


def chunks(*rows: tuple[int, int]) -> np.ndarray:
    """(document id, chunk id) rows, each document's in chunk order."""
    return np.asarray(rows, dtype=np.int64).reshape(-1, 2)


def test_ids_in_corpus_order_need_no_lookup() -> None:
    order = tie_order(chunks((1, 3), (1, 4), (2, 1), (2, 2)), [(1, "b.md"), (2, "a/z.md")])
    assert order is IN_ID_ORDER


def test_a_document_written_after_the_others_is_ranked_in_path_order() -> None:
    # a.md was edited: its chunks came after b.md's, a fresh build puts them first
    order = tie_order(chunks((2, 3), (2, 4), (7, 5), (7, 6)), [(2, "b.md"), (7, "a.md")])
    assert order.keys([5, 6, 3, 4]).tolist() == [0, 1, 2, 3]
    assert order.key(4) == 3 and order.key(99) == np.iinfo(np.int64).max


def test_component_order_is_the_walks_order() -> None:
    # "a/b" before "a-b" as the indexer walks (component by component), not as text
    order = tie_order(chunks((1, 1), (2, 2)), [(1, "a-b.md"), (2, "a/b.md")])
    assert order.keys([2, 1]).tolist() == [0, 1]
    assert path_key("a/b") < path_key("a-b") < path_key("a0")


def test_a_documents_chunks_keep_their_chunk_order_whatever_their_ids() -> None:
    # a chunk order the ids do not follow (9 before 2) is kept as the store lists it
    order = tie_order(chunks((1, 9), (1, 2), (2, 4)), [(1, "a.md"), (2, "b.md")])
    assert order.keys([9, 2, 4]).tolist() == [0, 1, 2]


# --------------------------------------------------------------------------- end to end


def evaluated(kb: Path) -> dict[str, Any]:
    done = invoke("eval", "--kb-path", kb, "--model", "hash", "--no-history", "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    return {
        "aggregate": report["aggregate"],
        "hits": {
            q["id"]: [(h["path"], h["heading"], h["score"]) for h in q["top_k"]]
            for q in report["per_query"]
        },
    }


def assert_ranks_as_a_fresh_build(kb: Path, tmp_path: Path) -> None:
    updated = evaluated(kb)
    fresh_kb = Path(tempfile.mkdtemp(dir=tmp_path)) / "kb"
    shutil.copytree(kb, fresh_kb)
    assert invoke("index", "--kb-path", fresh_kb, "--model", "hash", "--force").returncode == 0
    assert evaluated(fresh_kb) == updated
    shutil.rmtree(fresh_kb)


DUPLICATE = "# Backup policy\n\nNightly snapshots of the orders database are kept a month.\n"
TIE_GOLDEN = """\
queries:
  - id: q1
    query: how long are database snapshots kept
    expected:
      - path: a/dup.md
"""


def test_a_renamed_copy_of_a_note_ranks_as_after_a_fresh_build(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    for rel in ("a/dup.md", "b/dup.md"):
        (kb / rel).parent.mkdir(parents=True, exist_ok=True)
        (kb / rel).write_text(DUPLICATE, encoding="utf-8")
    (kb / "other.md").write_text("# Other\n\nLunch menus and parking.\n", encoding="utf-8")
    (kb / ".groove-eval.yml").write_text(TIE_GOLDEN, encoding="utf-8")
    assert invoke("index", "--kb-path", kb, "--model", "hash").returncode == 0
    (kb / "b").rename(kb / "0")  # keeps its row ids; a fresh build numbers it first
    assert_ranks_as_a_fresh_build(kb, tmp_path)


def change(kb: Path, rng: random.Random, step: int) -> None:
    """One edit a pull request makes: append, rename, add, delete or copy a note."""
    notes = sorted(p for p in kb.rglob("*.md") if ".groove" not in p.parts)
    golden = (kb / ".groove-eval.yml").read_text(encoding="utf-8")
    # a note the golden file names may be edited or copied, not moved away
    loose = [p for p in notes if p.relative_to(kb).as_posix() not in golden]
    kind = rng.choice(["append", "rename", "add", "delete", "copy"])
    note = rng.choice(loose if kind in ("rename", "delete") and loose else notes)
    if kind in ("rename", "delete") and note not in loose:
        kind = "append"
    if kind == "append":
        with note.open("a", encoding="utf-8") as handle:
            handle.write(f"\nOne more line about the pager and the release {step}.\n")
    elif kind == "rename":
        note.rename(note.with_name(f"0{step}-{note.name}"))
    elif kind == "add":
        (kb / f"m{step}.md").write_text(
            f"# Added {step}\n\nHow to roll back a release and who carries the pager.\n",
            encoding="utf-8",
        )
    elif kind == "delete":
        note.unlink()
    else:  # a copy: equal scores everywhere it matches
        shutil.copy(note, note.with_name(f"copy{step}-{note.name}"))


def indexed_example(tmp_path: Path) -> Path:
    """A fresh copy of the example KB (its golden file, no index), indexed."""
    kb = Path(tempfile.mkdtemp(dir=tmp_path)) / "kb"
    shutil.copytree(EXAMPLE_KB, kb, ignore=shutil.ignore_patterns(".groove*"))
    shutil.copy(EXAMPLE_KB / ".groove-eval.yml", kb / ".groove-eval.yml")
    assert invoke("index", "--kb-path", kb, "--model", "hash").returncode == 0
    return kb


@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(seed=st.integers(0, 2**16))
def test_after_any_pull_request_an_updated_index_ranks_as_a_fresh_build(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    kb = indexed_example(tmp_path)
    for step in range(3):
        change(kb, rng, step)
    assert_ranks_as_a_fresh_build(kb, tmp_path)
    shutil.rmtree(kb)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**16), steps=st.integers(1, 6))
def test_many_pull_requests_leave_the_ranking_a_fresh_build_gives(
    tmp_path: Path, seed: int, steps: int
) -> None:
    rng = random.Random(seed)
    kb = indexed_example(tmp_path)
    for step in range(steps):
        change(kb, rng, step)
        assert_ranks_as_a_fresh_build(kb, tmp_path)
    shutil.rmtree(kb)


def tied_notes(kb: Path, count: int = 120) -> None:
    """``count`` notes that tie, a word apart, for the query below (no hash model can
    tell them apart at the vector leg's cut of 50)."""
    rng = random.Random(2)
    kb.mkdir(parents=True)
    for i in range(count):
        word = "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(6))
        (kb / f"n{i:03d}.md").write_text(
            f"# Note {i:03d}\n\nThe escalation alpha runbook step {word} applies here for "
            "everyone on call today.\n",
            encoding="utf-8",
        )
    (kb / ".groove-eval.yml").write_text(
        'queries:\n  - query: "escalation alpha runbook"\n    expected:\n      - path: "n050.md"\n',
        encoding="utf-8",
    )


def rename_first(kb: Path, count: int) -> None:
    # renamed notes keep their ids but now sort last: ids leave corpus order
    for i in range(count):
        (kb / f"n{i:03d}.md").rename(kb / f"z{i:03d}.md")


def test_more_ties_at_the_vector_cut_than_faiss_keeps_are_chosen_in_corpus_order(
    tmp_path: Path,
) -> None:
    # faiss keeps an arbitrary few of the rows tying at its cut, in a fresh build too
    kb = tmp_path / "kb"
    tied_notes(kb)
    assert invoke("index", "--kb-path", kb, "--model", "hash").returncode == 0
    rename_first(kb, 50)
    assert_ranks_as_a_fresh_build(kb, tmp_path)


def test_more_ties_at_the_full_text_cut_than_the_slack_are_chosen_in_corpus_order(
    tmp_path: Path,
) -> None:
    # sparse ids (notes rewritten many times) send the full-text leg to SQLite's
    # ORDER BY ... LIMIT, which cuts the tying rows in id order
    kb = tmp_path / "kb"
    tied_notes(kb)
    churn = kb / "churn.md"
    for revision in range(3):
        churn.write_text(
            "# Churn\n\n"
            + "".join(
                f"## Part {i}\n\nChurn text {i} revision {revision}.\n\n" for i in range(800)
            ),
            encoding="utf-8",
        )
        assert invoke("index", "--kb-path", kb, "--model", "hash").returncode == 0
    churn.unlink()
    rename_first(kb, 50)
    assert invoke("index", "--kb-path", kb, "--model", "hash").returncode == 0
    assert_ranks_as_a_fresh_build(kb, tmp_path)


# --------------------------------------------------------------------------- kept order


def _opened(directory: Path) -> contextlib.closing[Store]:
    return contextlib.closing(Store.open(directory, create=False))


def _index(kb: Path) -> Path:
    done = invoke("index", "--kb-path", kb, "--model", "hash")
    assert done.returncode == 0, done.stderr
    (db,) = (kb / ".groove").glob("*/index.db")
    return db.parent


def test_the_indexer_keeps_the_order_a_search_would_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = tmp_path / "kb"
    copy_example_kb(kb)
    directory = _index(kb)
    with _opened(directory) as store:
        assert store.keeps_tie_order()
        assert store.tie_order() is IN_ID_ORDER  # a fresh build: ids in corpus order
    # an edit numbers the first note's chunks after every other: the kept order says so
    first = sorted(kb.rglob("*.md"))[0]
    first.write_text(first.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    _index(kb)
    with _opened(directory) as store:
        assert store.keeps_tie_order()
        read = store._read_tie_order()

    def unread(self: Store) -> TieOrder:
        raise AssertionError("the kept order is read, not every chunk's place")

    monkeypatch.setattr(Store, "_read_tie_order", unread)
    with _opened(directory) as store:  # a new connection: nothing remembered
        kept = store.tie_order()
    assert read.rank is not None and kept.rank is not None
    assert kept.rank.tolist() == read.rank.tolist()


@pytest.mark.parametrize(
    "value", [b"", b"\x01\x02\x03", "text", 12, b"\x00" * 8 + b"\x01", b"\x63" + b"\x00" * 15]
)
def test_a_kept_order_of_another_state_or_form_is_read_again(tmp_path: Path, value: object) -> None:
    kb = tmp_path / "kb"
    copy_example_kb(kb)
    directory = _index(kb)
    first = sorted(kb.rglob("*.md"))[0]
    first.write_text(first.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    _index(kb)
    with _opened(directory) as store:
        expected = store._read_tie_order()
        with store.transaction():
            store.conn.execute(
                "UPDATE index_meta SET value = ? WHERE key = ?", (value, TIE_ORDER_META)
            )
        assert not store.keeps_tie_order()
    with _opened(directory) as store:
        order = store.tie_order()
        assert expected.rank is not None and order.rank is not None
        assert order.rank.tolist() == expected.rank.tolist()
    # and the next index run keeps this state's order again
    _index(kb)
    with _opened(directory) as store:
        assert store.keeps_tie_order()


def test_encoded_orders_decode_only_for_their_generation() -> None:
    ranked = TieOrder(np.array([2, 0, np.iinfo(np.int64).max, 1], dtype=np.int64))
    for order in (IN_ID_ORDER, ranked):
        value = encode_tie_order(order, 41)
        back = decode_tie_order(value, 41)
        assert back is not None and back.by_id == order.by_id
        if order.rank is not None:
            assert back.rank is not None and back.rank.tolist() == order.rank.tolist()
        assert decode_tie_order(value, 42) is None
