"""``groove import beir``: a BEIR-format dataset becomes a KB whose golden file is its qrels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_groove.cli import main
from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.golden.file import load_golden
from pytest_groove.interop.beir import (
    BeirDocument,
    note_names,
    note_text,
    query_text,
    read_corpus,
    read_queries,
)
from tests.helpers.cli_invoke import Groove

DOCUMENTS = [
    {"_id": "d1", "title": "Rollback", "text": "Revert a release to the previous build quickly."},
    {"_id": "d2", "title": "Canary", "text": "Ship a build to a small share of users first."},
    {"_id": "d3", "title": "Pager", "text": "Escalate an incident to the on-call engineer."},
    {"_id": "D/4", "title": "", "text": "Rate limits return status 429 with a retry header."},
    {
        "_id": "d5",
        "title": "Tokens",
        "text": "OAuth tokens expire after one hour.\n# not a heading",
    },
]
QUERIES = [
    {"_id": "q1", "text": "revert release previous build"},
    {"_id": "q2", "text": "ship build small share users"},
    {"_id": "q3", "text": "status 429 retry header"},
    {"_id": "q9", "text": "a query the test split does not judge"},
]
QRELS = [("q1", "d1", 1), ("q2", "d2", 1), ("q2", "d3", 0), ("q3", "D/4", 1)]


def write_dataset(
    root: Path,
    documents: list[dict[str, Any]] | None = None,
    qrels: list[tuple[str, str, int]] | None = None,
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    docs = DOCUMENTS if documents is None else documents
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8"
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in QUERIES), encoding="utf-8"
    )
    (root / "qrels").mkdir(exist_ok=True)
    rows = QRELS if qrels is None else qrels
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in rows),
        encoding="utf-8",
    )
    return root


def test_round_trip_notes_golden_and_evaluation(tmp_path: Path, groove: Groove) -> None:
    source = write_dataset(tmp_path / "mini")
    kb = tmp_path / "kb"
    code, out, err = groove("import", "beir", source, "--kb-path", kb)
    assert (code, err) == (0, "")
    assert "wrote 5 note(s) and 3 golden query(ies) (1 without a judged document" in out
    assert f"groove eval --kb-path {kb}" in out
    assert sorted(p.name for p in kb.glob("*.md")) == ["D_4.md", "d1.md", "d2.md", "d3.md", "d5.md"]
    assert (kb / "d1.md").read_text(encoding="utf-8") == (
        "# Rollback\n\nRevert a release to the previous build quickly.\n"
    )
    assert (kb / "D_4.md").read_text(encoding="utf-8").startswith("Rate limits")  # no title
    golden = load_golden(kb / ".groove-eval.yml", kb)
    assert [(q.id, q.query, [e.path for e in q.expected]) for q in golden.queries] == [
        ("q1", "revert release previous build", ["d1.md"]),
        ("q2", "ship build small share users", ["d2.md"]),  # the grade-0 d3 is left out
        ("q3", "status 429 retry header", ["D_4.md"]),
    ]
    code, out, err = groove(
        "eval", "--kb-path", kb, "--model", "hash", "--no-history", "--format", "json"
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["aggregate"]["query_count"] == 3
    assert report["aggregate"]["recall_at_k"]["10"] == 1.0  # every judged note is findable


def test_queries_eval_would_refuse_are_left_out_and_named(tmp_path: Path, groove: Groove) -> None:
    # they were written, and eval then refused the whole golden file for any of them
    source = write_dataset(
        tmp_path / "odd",
        documents=[*DOCUMENTS, {"_id": "blank", "title": "Only a title", "text": "  "}],
        qrels=[*QRELS, ("q9", "blank", 1)],
    )
    queries = [
        *QUERIES,
        {"_id": "long", "text": "ab " * 1000},
        {"_id": "nul", "text": "\u0000\u0000"},
        {"_id": "minus", "text": "-omega"},
    ]
    (source / "queries.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8"
    )
    rows = [*QRELS, ("q9", "blank", 1), ("long", "d1", 1), ("nul", "d2", 1), ("minus", "d3", 1)]
    (source / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in rows),
        encoding="utf-8",
    )
    kb = tmp_path / "kb"
    code, out, err = groove("import", "beir", source, "--kb-path", kb)
    assert (code, err) == (0, "")
    # `-omega` is quoted on import (never an exclusion), so it stays
    assert "wrote 5 note(s) and 4 golden query(ies) into" in out
    assert "  1 document(s) with no text not written\n" in out
    assert (
        f"  3 judged query(ies) left out, which groove eval would refuse: "
        f"{source / 'queries.jsonl'}:4: query 'q9': every document judged for it has no text"
        " (and 2 more)\n"
    ) in out
    assert [q.id for q in load_golden(kb / ".groove-eval.yml", kb).queries] == [
        "q1",
        "q2",
        "q3",
        "minus",
    ]
    assert not (kb / "blank.md").exists()
    code, out, err = groove("eval", "--kb-path", kb, "--model", "hash", "--no-history")
    assert code == 0, err


def test_grades_above_one_are_written_and_one_is_the_plain_entry(tmp_path: Path) -> None:
    source = write_dataset(tmp_path / "graded", qrels=[("q1", "d1", 2), ("q1", "d2", 1)])
    assert main(["import", "beir", str(source), "--kb-path", str(tmp_path / "kb")]) == 0
    raw = yaml.safe_load((tmp_path / "kb" / ".groove-eval.yml").read_text(encoding="utf-8"))
    assert raw["queries"] == [
        {
            "id": "q1",
            "query": "revert release previous build",
            "expected": [{"path": "d1.md", "grade": 2}, {"path": "d2.md"}],
        }
    ]


def test_numeric_ids_stay_strings(tmp_path: Path) -> None:
    """SciFact's ids are digits: the golden file must still hold them as strings."""
    documents = [{"_id": 31715818, "title": "T", "text": "x"}, {"_id": "007", "text": "y"}]
    source = write_dataset(
        tmp_path / "digits", documents, [("q1", "31715818", 1), ("q2", "007", 1)]
    )
    (source / "queries.jsonl").write_text(
        '{"_id": "1", "text": "one"}\n{"_id": 2, "text": "two"}\n', encoding="utf-8"
    )
    (source / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n1\t31715818\t1\n2\t007\t1\n"
    )
    assert main(["import", "beir", str(source), "--kb-path", str(tmp_path / "kb")]) == 0
    golden = load_golden(tmp_path / "kb" / ".groove-eval.yml", tmp_path / "kb")
    assert [(q.id, q.expected[0].path) for q in golden.queries] == [
        ("1", "31715818.md"),
        ("2", "007.md"),
    ]


def test_a_golden_file_over_the_cap_is_refused_before_writing(
    tmp_path: Path, groove: Groove, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pytest_groove.interop.beir.GOLDEN_CAP", 100)
    source = write_dataset(tmp_path / "ds")
    err = _error(groove, source, "--kb-path", tmp_path / "kb")
    assert "over the 100 a golden file may hold" in err
    assert not (tmp_path / "kb").exists()


def test_file_names_are_safe_and_unique() -> None:
    names = note_names(["A/b", "A_b", "a_b", ".hidden", "", "ü", "x" * 300])
    assert names["A/b"] == "A_b.md"
    assert names["A_b"] == "A_b-2.md"
    assert names["a_b"] == "a_b-3.md"  # case-insensitive file systems see A_b.md
    assert names[".hidden"] == "_.hidden.md"
    assert names[""] == "_.md"
    assert names["ü"] == "ü.md"  # a letter, in any script, is kept
    assert len(names["x" * 300]) == 123
    assert len(set(names.values())) == 7


def test_each_unsafe_character_becomes_one_underscore_and_letters_stay() -> None:
    ids = ["a//b", "a/b", "a b\tc", "日本語", "日本", "東京/大阪", "é", "e\u0301", "x\u200by"]
    names = note_names([*ids, "😀", "Straße", "STRASSE", "con", "Nul.txt", "中" * 150])
    assert [names[i] for i in ids] == [
        "a__b.md",  # one `_` per character: not the same name as `a/b`
        "a_b.md",
        "a_b_c.md",
        "日本語.md",
        "日本.md",
        "東京_大阪.md",
        "é.md",
        "é-2.md",  # the same letter once composed (NFC): a file system may equate them
        "x_y.md",  # a zero-width space is no letter
    ]
    assert names["😀"] == "_.md"  # a symbol is replaced
    assert (names["Straße"], names["STRASSE"]) == ("Straße.md", "STRASSE-2.md")  # casefold
    assert (names["con"], names["Nul.txt"]) == ("_con.md", "_Nul.txt.md")  # Windows devices
    assert len(names["中" * 150].encode("utf-8")) <= 255 - len("-99")


def test_a_text_line_never_opens_a_section() -> None:
    text = note_text(BeirDocument("d", "T", "one\n# two\n  ## three"))
    assert text == "# T\n\none\n\\# two\n  \\## three\n"


def test_a_leading_dash_word_is_quoted_not_an_exclusion() -> None:
    assert query_text("effects of -omega on sleep") == 'effects of "-omega" on sleep'
    assert query_text("covid-19 and k=-1") == "covid-19 and k=-1"


def _error(groove: Groove, *args: str | Path) -> str:
    code, _out, err = groove("import", "beir", *args)
    assert code == 1
    assert err.startswith("Error: ") and err.count("\n") == 1, err
    return err


def test_bad_json_names_the_file_and_line(tmp_path: Path, groove: Groove) -> None:
    source = write_dataset(tmp_path / "bad")
    with (source / "corpus.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("\n{not json\n")
    err = _error(groove, source, "--kb-path", tmp_path / "kb")
    assert f"{source / 'corpus.jsonl'}:7: not a JSON object" in err
    assert not (tmp_path / "kb").exists()  # nothing written


def test_unicode_ids_round_trip_through_index_and_evaluation(
    tmp_path: Path, groove: Groove
) -> None:
    documents = [
        {"_id": "文書/一", "title": "Rollback", "text": "Revert a release to the previous build."},
        {"_id": "a//b", "title": "Canary", "text": "Ship a build to a small share of users."},
        {"_id": "a/b", "title": "Pager", "text": "Escalate an incident to the on-call engineer."},
    ]
    qrels = [("q1", "文書/一", 1), ("q2", "a//b", 1), ("q2", "a/b", 0)]
    source = write_dataset(tmp_path / "unicode", documents, qrels)
    kb = tmp_path / "kb"
    code, _out, err = groove("import", "beir", source, "--kb-path", kb)
    assert (code, err) == (0, "")
    assert sorted(p.name for p in kb.glob("*.md")) == ["a__b.md", "a_b.md", "文書_一.md"]
    code, out, err = groove(
        "eval", "--kb-path", kb, "--model", "hash", "--no-history", "--format", "json"
    )
    assert code == 0, err
    assert json.loads(out)["aggregate"]["recall_at_k"]["10"] == 1.0


def test_a_conflicting_repeated_judgement_is_refused_with_both_lines(
    tmp_path: Path, groove: Groove
) -> None:
    qrels = [("q1", "d1", 2), ("q1", "d1", 1), ("q2", "d2", 1)]
    source = write_dataset(tmp_path / "twice", qrels=qrels)
    err = _error(groove, source, "--kb-path", tmp_path / "kb")
    assert err == (
        f"Error: {source / 'qrels' / 'test.tsv'}:3: query 'q1' and corpus id 'd1' were judged "
        "on line 2 already, with another score (2 there, 1 here); keep one of the two lines\n"
    )
    assert not (tmp_path / "kb").exists()
    # a judgement that drops to 0 on a later line would have dropped the query
    source = write_dataset(tmp_path / "dropped", qrels=[("q2", "d2", 1), ("q2", "d2", 0)])
    assert "(1 there, 0 here)" in _error(groove, source, "--kb-path", tmp_path / "kb")


def test_an_identical_repeated_judgement_is_accepted(tmp_path: Path) -> None:
    source = write_dataset(tmp_path / "same", qrels=[("q1", "d1", 2), ("q1", "d1", 2)])
    assert main(["import", "beir", str(source), "--kb-path", str(tmp_path / "kb")]) == 0
    raw = yaml.safe_load((tmp_path / "kb" / ".groove-eval.yml").read_text(encoding="utf-8"))
    assert raw["queries"][0]["expected"] == [{"path": "d1.md", "grade": 2}]


def test_bytes_that_are_not_utf8_are_named_by_line_and_offset(
    tmp_path: Path, groove: Groove
) -> None:
    source = write_dataset(tmp_path / "latin")
    corpus = source / "corpus.jsonl"
    lines = corpus.read_bytes().splitlines(keepends=True)
    # a BOM and CRLF line ends before it: the line and the offset still count right
    lines[0] = b"\xef\xbb\xbf" + lines[0].replace(b"\n", b"\r\n")
    lines[2] = lines[2].replace(b"Escalate", b"Escal\xe9te")
    corpus.write_bytes(b"".join(lines))
    offset = len(lines[0]) + len(lines[1]) + lines[2].index(b"\xe9")
    err = _error(groove, source, "--kb-path", tmp_path / "kb")
    assert err == (
        f"Error: {corpus}:3: not UTF-8 text (first bad byte 0xe9 at byte offset {offset} of "
        "the file); re-download or re-encode the file\n"
    )


@pytest.mark.parametrize(
    ("name", "repeat", "said"),
    [
        ("corpus.jsonl", {"_id": "d2", "title": "", "text": "again"}, ":6: document id 'd2'"),
        ("queries.jsonl", {"_id": "q2", "text": "again"}, ":5: query id 'q2'"),
    ],
)
def test_a_repeated_id_names_both_lines(
    tmp_path: Path, name: str, repeat: dict[str, str], said: str
) -> None:
    source = write_dataset(tmp_path / "bad")
    with (source / name).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(repeat) + "\n")
    read = read_corpus if name == "corpus.jsonl" else read_queries
    with pytest.raises(GrooveError) as info:
        read(source / name)
    assert info.value.message == f"{source / name}{said} repeats {source / name}:2; remove one"


def test_an_unknown_corpus_id_in_the_qrels(tmp_path: Path, groove: Groove) -> None:
    source = write_dataset(tmp_path / "bad", qrels=[("q1", "d1", 1), ("q1", "nope", 1)])
    err = _error(groove, source, "--kb-path", tmp_path / "kb")
    assert f"{source / 'qrels' / 'test.tsv'}:3: corpus id 'nope' is not in corpus.jsonl" in err


def test_missing_files_and_splits(tmp_path: Path, groove: Groove) -> None:
    source = write_dataset(tmp_path / "ds")
    err = _error(groove, source, "--kb-path", tmp_path / "kb", "--split", "dev")
    assert "dev.tsv: no such file; pass --split one of test" in err
    (source / "queries.jsonl").unlink()
    err = _error(groove, source, "--kb-path", tmp_path / "kb")
    assert "queries.jsonl: no such file" in err
    assert not (tmp_path / "kb").exists()


def test_a_non_empty_folder_needs_force(tmp_path: Path, groove: Groove) -> None:
    source = write_dataset(tmp_path / "ds")
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "mine.md").write_text("# Mine\n", encoding="utf-8")
    err = _error(groove, source, "--kb-path", kb)
    assert "not empty" in err and "--force" in err
    assert sorted(p.name for p in kb.iterdir()) == ["mine.md"]
    code, _out, _err = groove("import", "beir", source, "--kb-path", kb, "--force")
    assert code == 0
    assert (kb / "mine.md").exists() and (kb / "d1.md").exists()


def test_the_command_runs_as_a_program(tmp_path: Path) -> None:
    source = write_dataset(tmp_path / "ds")
    done = subprocess.run(
        [sys.executable, "-m", "pytest_groove.cli", "import", "beir", str(source),
         "--kb-path", str(tmp_path / "kb"), "--split", "test"],
        capture_output=True, text=True, encoding="utf-8", timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "kb" / ".groove-eval.yml").is_file()


@pytest.mark.parametrize(
    ("file", "line"),
    [
        ("corpus.jsonl", '{"_id": "d9", "text": "lone \\ud800 surrogate"}'),
        ("corpus.jsonl", '{"_id": "d9", "title": "half \\udfff pair", "text": "words"}'),
        ("queries.jsonl", '{"_id": "q8", "text": "query \\udfff here"}'),
    ],
    ids=["text", "title", "query"],
)
def test_a_lone_surrogate_is_one_line_before_anything_is_written(
    tmp_path: Path, groove: Groove, file: str, line: str
) -> None:
    # JSON may escape half of a UTF-16 pair alone: no character a note or a golden
    # file can hold (before: a traceback after an empty note was written, or a golden
    # file eval could not read)
    source = write_dataset(tmp_path / "bad")
    with (source / file).open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    err = _error(groove, source, "--kb-path", tmp_path / "kb")
    assert "lone surrogate" in err and f"{file}:" in err and "Traceback" not in err
    assert not (tmp_path / "kb").exists()


def test_a_text_opening_with_a_frontmatter_fence_stays_text(tmp_path: Path, groove: Groove) -> None:
    documents = [
        *DOCUMENTS,
        {"_id": "fm", "title": "", "text": "---\ntitle: fake\n---\nOctopus have three hearts."},
        {"_id": "fm-only", "title": "", "text": "---\nauthor: someone\n---"},
    ]
    qrels = [*QRELS, ("q1", "fm", 1), ("q2", "fm-only", 1)]
    source = write_dataset(tmp_path / "fm", documents, qrels)
    kb = tmp_path / "kb"
    code, _out, err = groove("import", "beir", source, "--kb-path", kb)
    assert (code, err) == (0, "")
    code, out, err = groove(
        "eval", "--kb-path", kb, "--model", "hash", "--no-history", "--format", "json"
    )
    assert code in (0, 1) and "warning" not in err and "Error" not in err, err
    code, out, err = groove("search", "--kb-path", kb, "--model", "hash", "octopus")
    assert code == 0 and "title: fake" in out  # the dataset's line is text, not metadata


def test_a_document_over_the_note_size_cap_is_left_out_and_counted(
    tmp_path: Path, groove: Groove, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_groove.interop import beir

    # a smaller cap stands in for the indexer's 50 MiB (the same constant both read)
    monkeypatch.setattr(beir, "FILE_SIZE_CAP", 200)
    documents = [*DOCUMENTS, {"_id": "big", "title": "Big", "text": "word " * 100}]
    qrels = [*QRELS, ("q1", "big", 1), ("q9", "big", 1)]
    source = write_dataset(tmp_path / "big", documents, qrels)
    kb = tmp_path / "kb"
    code, out, err = groove("import", "beir", source, "--kb-path", kb)
    assert (code, err) == (0, "")
    assert not (kb / "big.md").exists()
    assert "1 document(s) over the 200 bytes a note may hold not written" in out
    # q9 was judged on the big document alone: left out, saying why
    assert "query 'q9': every document judged for it is over the" in out
    golden = yaml.safe_load((kb / ".groove-eval.yml").read_text(encoding="utf-8"))
    assert all(e["path"] != "big.md" for q in golden["queries"] for e in q["expected"])


def test_qrels_scores_and_headers_the_golden_file_can_hold(tmp_path: Path, groove: Groove) -> None:
    source = write_dataset(tmp_path / "g", qrels=[("q1", "d1", 2**32)])
    err = _error(groove, source, "--kb-path", tmp_path / "kb")
    assert "score 4294967296 is over 4294967295" in err
    # another spelling of the header line is a header, a typo in a score is not
    source = write_dataset(tmp_path / "h")
    tsv = source / "qrels" / "test.tsv"
    tsv.write_text(
        tsv.read_text(encoding="utf-8").replace(
            "query-id\tcorpus-id\tscore", "query_id\tdoc_id\tscore"
        )
    )
    code, _out, err = groove("import", "beir", source, "--kb-path", tmp_path / "kb2")
    assert (code, err) == (0, "")
    tsv.write_text("q1\td1\t1O\n", encoding="utf-8")
    err = _error(groove, source, "--kb-path", tmp_path / "kb3")
    assert "score '1O' is not a whole number" in err


def test_a_title_that_is_not_text_is_named_as_optional(tmp_path: Path, groove: Groove) -> None:
    source = write_dataset(tmp_path / "t", [*DOCUMENTS, {"_id": "d9", "title": 7, "text": "x"}])
    err = _error(groove, source, "--kb-path", tmp_path / "kb")
    assert "`title` is not a string; write it as a string, or leave it out" in err


def test_force_replaces_links_in_the_folder_and_never_writes_through_them(
    tmp_path: Path, groove: Groove
) -> None:
    # a note's name taken by a symbolic link and by a second name of an outside file:
    # --force writes over files of the same name, never into what a link points at
    source = write_dataset(tmp_path / "mini")
    kb = tmp_path / "kb"
    kb.mkdir()
    outside, shared = tmp_path / "victim.txt", tmp_path / "victim2.txt"
    outside.write_text("precious", encoding="utf-8")
    shared.write_text("precious too", encoding="utf-8")
    (kb / "d1.md").symlink_to(outside)
    (kb / ".groove-eval.yml").symlink_to(outside)
    os.link(shared, kb / "d2.md")
    code, _out, err = groove("import", "beir", source, "--kb-path", kb, "--force")
    assert (code, err) == (0, "")
    assert outside.read_text(encoding="utf-8") == "precious"
    assert shared.read_text(encoding="utf-8") == "precious too"
    for name in ("d1.md", "d2.md", ".groove-eval.yml"):
        note = kb / name
        assert note.is_file() and not note.is_symlink() and note.stat().st_nlink == 1
    assert (kb / "d1.md").read_text(encoding="utf-8").startswith("# Rollback")
