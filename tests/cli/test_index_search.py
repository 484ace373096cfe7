"""`groove index` and `groove search` through the command line (in-process, `cli_invoke`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli_invoke import Groove
from tests.helpers.kb_files import INVOICES_NOTES, write_invoices_kb, write_notes
from tests.kb.test_index_group import make_kb


def test_index_then_search_json(kb_eval_copy: Path, groove: Groove) -> None:
    kb = str(kb_eval_copy)
    first = groove("index", "--kb-path", kb, "--model", "hash")
    assert first.returncode == 0, first.stderr
    assert "20 added" in first.stdout
    again = groove("index", "--kb-path", kb, "--model", "hash")
    assert again.returncode == 0
    assert "0 added" in again.stdout and "20 unchanged" in again.stdout
    assert "0 chunks embedded" in again.stdout

    out = groove(
        "search",
        "--kb-path",
        kb,
        "--model",
        "hash",
        "--format",
        "json",
        "--limit",
        "3",
        "Retry-After",
    )
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    results = payload["results"]
    assert [r["rank"] for r in results] == [1, 2, 3]
    assert results[0]["path"] == "ref/rate-limiting.md"
    assert {"rank", "path", "heading", "score", "content"} <= set(results[0])


def test_search_text_output(kb_eval_copy: Path, groove: Groove) -> None:
    kb = str(kb_eval_copy)
    assert groove("index", "--kb-path", kb, "--model", "hash").returncode == 0
    out = groove("search", "--kb-path", kb, "--model", "hash", "canary")
    assert out.returncode == 0
    assert out.stdout.lstrip().startswith("1.")
    hits = json.loads(
        groove("search", "--kb-path", kb, "--model", "hash", "--format", "json", "canary").stdout
    )["results"]
    first = hits[0]
    label = first["path"] if first["heading"] is None else f"{first['path']}#{first['heading']}"
    # the pytest failure's and the TREC files' spelling of a hit, not `path > heading`
    assert out.stdout.lstrip().startswith(f"1. {label}  (score ")


def test_search_without_index_is_one_line_error(tmp_path: Path, groove: Groove) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    out = groove("search", "--kb-path", str(kb), "--model", "hash", "anything")
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: No index found at")
    assert "Traceback" not in out.stderr


def test_bad_flag_values_are_usage_errors(tmp_path: Path, groove: Groove) -> None:
    out = groove("search", "--kb-path", str(tmp_path), "--mmr", "maybe", "q")
    assert out.returncode == 2
    assert "--mmr takes true or false" in out.stderr
    out = groove("search", "--kb-path", str(tmp_path), "--mmr-lambda", "1.5", "q")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr


def test_query_of_only_exclusions_is_refused(kb_eval_copy: Path, groove: Groove) -> None:
    kb = str(kb_eval_copy)
    assert groove("index", "--kb-path", kb, "--model", "hash").returncode == 0
    out = groove("search", "--kb-path", kb, "--model", "hash", "--", "-backup")
    assert out.returncode in (1, 2)
    assert out.stderr.startswith("Error:") and "Traceback" not in out.stderr


def test_bad_config_names_the_file(tmp_path: Path, groove: Groove) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "groove.toml").write_text("[search.fusion]\nrrf_k = 0\n", encoding="utf-8")
    out = groove("index", "--kb-path", str(kb), "--model", "hash")
    assert out.returncode == 1
    assert "groove.toml" in out.stderr and "rrf_k" in out.stderr
    assert "Traceback" not in out.stderr


def test_unknown_model_is_clear(tmp_path: Path, groove: Groove) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    out = groove("index", "--kb-path", str(kb), "--model", "no-such-model")
    assert out.returncode == 2  # a bad flag value
    assert out.stderr.startswith("groove index: error: unknown embedding model 'no-such-model'")
    assert out.stderr.count("\n") == 1


def test_an_in_process_command_leaves_the_collector_as_it_found_it(
    kb_eval_copy: Path, tmp_path: Path, groove: Groove
) -> None:
    import gc

    frozen_before = gc.get_freeze_count()
    kb = str(kb_eval_copy)
    assert groove("index", "--kb-path", kb, "--model", "hash").returncode == 0
    assert groove("search", "--kb-path", str(tmp_path), "--model", "hash", "q").returncode == 1
    # what the command froze after its imports is given back, after success and error
    assert gc.get_freeze_count() == frozen_before


def test_a_note_named_with_a_line_break_stays_on_its_line(tmp_path: Path, groove: Groove) -> None:
    kb = tmp_path / "kb"
    (kb / "ops").mkdir(parents=True)
    body = "## Rollback\n\nRoll the release back with the deploy tool, then page the owner.\n"
    (kb / "ops" / "new\nline.md").write_text("# Odd name\n\n" + body, encoding="utf-8")
    (kb / "ops" / "plain.md").write_text("# Plain\n\n" + body, encoding="utf-8")
    assert groove("index", "--kb-path", kb, "--model", "hash").returncode == 0
    done = groove("search", "--kb-path", kb, "--model", "hash", "roll the release back")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if not line.startswith("(low")]
    # every line is a hit ("  1. path#heading  (score ...)") or its indented snippet
    assert all(line.lstrip()[:2] in {"1.", "2."} or line.startswith("     ") for line in lines)
    assert any("ops/new\\nline.md#Rollback" in line for line in lines)


# --------------------------------------------------------------------------- empty KB


def test_indexing_a_folder_without_markdown_says_so_and_creates_nothing(
    tmp_path: Path, groove: Groove
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not Markdown\n", encoding="utf-8")
    done = groove.process("index", "--kb-path", empty, "--model", "hash")
    assert done.returncode == 1
    assert "0 chunks embedded" not in done.stdout
    assert f"no indexable file under {empty}: only .md files are indexed" in done.stderr
    assert "check --kb-path" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (empty / ".groove").exists()


def test_a_re_index_walks_the_kb_once(
    kb_eval_copy: Path, groove: Groove, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the empty-KB check walks the KB only when there is no index yet: the indexer's
    # own walk is the re-index's only one
    from pytest_groove.kb.source import walk

    kb = str(kb_eval_copy)
    assert groove("index", "--kb-path", kb, "--model", "hash").returncode == 0
    walks: list[Path] = []
    monkeypatch.setattr(walk, "collect_files", lambda kb, *a: walks.append(kb))
    again = groove("index", "--kb-path", kb, "--model", "hash")
    assert (again.returncode, walks) == (0, []), again.stderr


def test_an_existing_index_of_a_now_empty_kb_is_still_brought_up_to_date(
    tmp_path: Path, groove: Groove
) -> None:
    kb = write_invoices_kb(tmp_path / "kb")
    assert groove.process("index", "--kb-path", kb, "--model", "hash").returncode == 0
    for name in INVOICES_NOTES:
        (kb / name).unlink()
    again = groove.process("index", "--kb-path", kb, "--model", "hash")
    assert again.returncode == 0, again.stderr
    assert "2 removed" in again.stdout


#: what a note written by someone else can hold that a terminal acts on: every C0 and
#: C1 control character (ESC and BEL among them), an OSC 8 hyperlink, a colour, and
#: the format characters that reorder or hide text
TERMINAL_CONTROLS = "".join(
    chr(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if chr(c) not in "\n\r\t "
)
HOSTILE_NOTE = (
    "# Escapes\n\nThe canary rollout "
    "\x1b]8;;https://example.invalid\x1b\\click\x1b]8;;\x1b\\ and \x1b[31mred\x1b[0m \x07 "
    f"\u202e\u200b\u2066 {TERMINAL_CONTROLS} waits for the canary.\n"
)


def test_search_never_sends_a_notes_control_characters_to_the_terminal(
    tmp_path: Path, groove: Groove
) -> None:
    (tmp_path / "note.md").write_text(HOSTILE_NOTE, encoding="utf-8")
    assert groove("index", "--kb-path", str(tmp_path), "--model", "hash").returncode == 0
    out = groove("search", "--kb-path", str(tmp_path), "--model", "hash", "canary rollout")
    assert out.returncode == 0, out.stderr
    snippet = out.stdout.splitlines()[1]
    assert "canary rollout" in snippet and "\\x1b" in snippet
    assert all(ch.isprintable() for ch in out.stdout.replace("\n", "")), ascii(out.stdout)
    assert max(len(line) for line in out.stdout.splitlines()) <= 200


def _index_logged(kb: Path, log: Path, env: dict[str, str]) -> int:
    """``groove index --kb-path KB --model hash >LOG 2>&1``: a CI log (no terminal)."""
    command = [sys.executable, "-m", "pytest_groove.cli", "index", "--kb-path", str(kb)]
    with log.open("w", encoding="utf-8") as out:
        done = subprocess.run(
            [*command, "--model", "hash"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
            timeout=300,
            check=False,
        )
    return done.returncode


def test_a_long_index_run_logs_progress_lines_before_its_summary(
    tmp_path: Path, groove: Groove
) -> None:
    kb = make_kb(tmp_path / "kb", 300)
    log = tmp_path / "log"
    assert _index_logged(kb, log, {"GROOVE_PROGRESS_SECONDS": "0.01"}) == 0
    lines = log.read_text(encoding="utf-8").splitlines()
    assert lines[-1].startswith("indexed: 300 added"), lines
    progress = [line for line in lines if line.startswith("groove: indexing notes: ")]
    assert progress and all(" / 300 files, " in line for line in progress), lines
    # one line each, plain text: a CI log shows them as they are
    assert all(line.isprintable() and line.isascii() for line in lines), lines
    # a quick run (the default pace) shows none: stderr stays empty
    quick = groove("index", "--kb-path", kb, "--model", "hash", "--force")
    assert quick.returncode == 0 and quick.stderr == "", quick.stderr


def test_a_bad_progress_interval_is_one_line(tmp_path: Path, groove: Groove) -> None:
    kb = write_invoices_kb(tmp_path / "kb")
    out = groove("index", "--kb-path", kb, "--model", "hash", env={"GROOVE_PROGRESS_SECONDS": "x"})
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        "Error: GROOVE_PROGRESS_SECONDS='x' is not a positive number of seconds between "
        "progress lines; fix or unset it"
    ]


#: a note with two sections on the query and another note with one: grouped by
#: document, the second section comes after the other note, with a higher score
GROUPED_NOTES = {
    "deploy.md": "# Deploy\n\n## Canary release\n\nThe canary release ships to one zone "
    "first; the canary release is watched for an hour.\n\n## Canary rollback\n\nRoll the "
    "canary release back when the canary alarms fire during the release.\n",
    "auth.md": "# Auth\n\n## Tokens\n\nA release of tokens happens weekly.\n",
    "misc.md": "# Misc\n\n## Lunch\n\nLunch is at noon.\n",
}


def test_search_says_when_document_grouping_puts_scores_out_of_order(
    tmp_path: Path, groove: Groove
) -> None:
    kb = write_notes(tmp_path / "kb", GROUPED_NOTES)
    assert groove("index", "--kb-path", kb, "--model", "hash").returncode == 0
    out = groove("search", "--kb-path", kb, "--model", "hash", "canary release")
    assert out.returncode == 0, out.stderr
    scores = [
        float(line.rsplit("(score ", 1)[1][:-1])
        for line in out.stdout.splitlines()
        if "(score " in line
    ]
    assert scores != sorted(scores, reverse=True)
    assert out.stdout.splitlines()[-1] == (
        "hits are grouped by document ([search] document_first): scores are not in rank order"
    )
    (kb / "groove.toml").write_text("[search]\ndocument_first = false\n", encoding="utf-8")
    plain = groove("search", "--kb-path", kb, "--model", "hash", "canary release")
    assert plain.returncode == 0, plain.stderr
    assert "grouped by document" not in plain.stdout


def test_a_note_with_a_long_line_and_a_long_heading_is_indexed_in_bounded_chunks(
    tmp_path: Path, groove: Groove
) -> None:
    """A 600 KB line is ten chunks of at most 64 KiB under its heading, and a
    5,000-character heading is cut at 4,096 with one warning naming the note:
    before, the line was one chunk and the heading was kept whole, without a word."""
    line = " ".join(f"w{n}" for n in range(120_000))[:600_000]
    heading = "H" * 5_000
    note = f"# Dump\n\n## {heading}\n\nThe note opens with one ordinary paragraph of text.\n\n"
    (tmp_path / "dump.md").write_text(note + line + " needle\n", encoding="utf-8")
    (tmp_path / "other.md").write_text("## Other\n\n" + "An ordinary note. " * 5, "utf-8")
    done = groove("index", "--kb-path", str(tmp_path), "--model", "hash")
    assert done.returncode == 0, done.stderr
    warnings = [row for row in (done.stdout + done.stderr).splitlines() if "warning" in row]
    assert warnings == [
        "warning: dump.md: 1 heading over 4,096 characters cut to its first 4,096 "
        "(shorten it in the note to index it whole)"
    ]
    assert "11 chunks embedded" in done.stdout
    out = groove(
        "search", "--kb-path", str(tmp_path), "--model", "hash", "--format", "json", "needle"
    )
    assert out.returncode == 0, out.stderr
    top = json.loads(out.stdout)["results"][0]
    assert top["path"] == "dump.md" and top["heading"] == "H" * 4_096
    assert "needle" in top["content"] and len(top["content"].encode()) <= 3 * 64 * 1024


def test_index_says_how_many_chunks_it_embedded_and_how_many_it_found(
    tmp_path: Path, groove: Groove
) -> None:
    kb = make_kb(tmp_path / "kb", 4, sections=5)
    assert groove("index", "--kb-path", kb, "--model", "hash").returncode == 0
    note = kb / "folder1" / "note-0001.md"
    note.write_text(note.read_text(encoding="utf-8") + "One more line.\n", encoding="utf-8")
    edited = groove("index", "--kb-path", kb, "--model", "hash")
    assert edited.returncode == 0, edited.stderr
    # the last section is new text; the other four are found by what they embed
    assert "1 changed" in edited.stdout and "1 chunks embedded, 4 reused" in edited.stdout
    forced = groove("index", "--kb-path", kb, "--model", "hash", "--force")
    assert "0 chunks embedded, 20 reused" in forced.stdout


#: runs ``groove <argv>`` in-process and prints whether any module of the evaluation
#: (its command modules or its library) was loaded
_LOADS_EVAL = """
import sys
from pytest_groove.cli.commands import run_command_line
try:
    run_command_line(sys.argv[1:])
except SystemExit:
    pass
loaded = [name for name in sys.modules if name.startswith(("pytest_groove.evaluation",
          "pytest_groove.cli.evaluate"))]
print(bool(loaded), file=sys.stderr)
"""


def test_index_and_search_leave_the_evaluation_unimported(tmp_path: Path) -> None:
    # `groove index` runs on every CI job: the evaluation stack is no part of its start-up
    def loads_eval(*argv: str) -> bool:
        done = subprocess.run(
            [sys.executable, "-c", _LOADS_EVAL, *argv],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stderr.strip().splitlines()[-1] == "True"

    kb = tmp_path / "kb"
    write_notes(kb, {"a.md": "# A\n\nSome words about deploys.\n"})
    assert not loads_eval("index", "--kb-path", str(kb), "--model", "hash")
    assert (kb / ".groove").is_dir()
    assert not loads_eval("index", "--help")
    assert not loads_eval("search", "--help")
    assert loads_eval("eval", "--help")
    # a command line that does not start with the command still sees every command
    assert loads_eval("-h")
