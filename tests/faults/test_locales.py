"""Locales that decode file names otherwise than UTF-8: right answers or one line.

Python reads file names, arguments and standard output in the locale's encoding
unless UTF-8 mode is on.  Under ``de_DE.ISO-8859-1``, ``ja_JP.EUC-JP`` or ``C``
(with ``PYTHONUTF8=0``) a UTF-8 name on disk comes out as other characters, a UTF-8
argument as other characters or none, and standard output is not UTF-8.  Every test
here runs ``groove`` or ``pytest --groove-kb`` in a child process under such a locale
(``conftest.foreign_locale`` makes a missing one with ``localedef``, into a folder of
the session) and checks that the run either gives the answers a UTF-8 run gives or
stops with one line naming the locale and the fix, before anything is recorded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from conftest import KB_EVAL, KB_EVAL_GOLDEN, LOCAL_STATE, copy_example_kb

GROOVE = [sys.executable, "-m", "pytest_groove.cli"]
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly"]
HASH = ["--model", "hash"]
LATIN1, EUCJP, ASCII = "de_DE.ISO-8859-1", "ja_JP.EUC-JP", "C"
#: the environment of a UTF-8 run, to compare with
UTF8 = {**os.environ, "LC_ALL": "C.UTF-8"}
#: what every refusal about the locale ends with
THE_FIX = "(the locale); run it under a UTF-8 locale (LC_ALL=C.UTF-8) or with PYTHONUTF8=1"

ForeignLocale = Callable[[str], tuple[dict[str, str], str]]

CAFE_NOTE = (
    "# Café\n\n## Coffee machine\n\n"
    "The espresso machine on floor three is descaled every Friday by facilities.\n"
)
CAFE_QUERY = (
    "  - query: when is the espresso machine descaled\n    expected:\n      - path: café.md\n"
)


def run(
    args: Sequence[object], env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(arg) for arg in args], capture_output=True, timeout=300, env=env, cwd=cwd
    )


def error_lines(proc: subprocess.CompletedProcess[bytes], encoding: str) -> list[str]:
    """The lines of standard error that are no warning, read in the child's encoding."""
    stderr = proc.stderr.decode(encoding, "replace")
    assert "Traceback" not in stderr and "INTERNALERROR" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    return [line for line in lines if "warning:" not in line]


def one_line(proc: subprocess.CompletedProcess[bytes], encoding: str, statuses: set[int]) -> str:
    """The one line a refused run prints; it names the locale and the fix."""
    lines = error_lines(proc, encoding)
    assert proc.returncode in statuses and len(lines) == 1, (proc.returncode, lines)
    line = lines[0]
    assert f"as {encoding} {THE_FIX}" in line, line
    assert "lone surrogate" not in line and "NUL" not in line, line
    return line


# --------------------------------------------------------------------------- typed values


def _eucjp_cases(tmp_path: Path, kb: Path) -> dict[str, list[object]]:
    """Each place a UTF-8 value typed under EUC-JP reaches: Python's EUC-JP codec cannot
    write back what the C library decoded (``必要`` became ``\\x85`` and more)."""
    other = tmp_path / "必要kb"
    other.mkdir()
    return {
        "search query": ["search", "--kb-path", kb, *HASH, "必要なもの"],
        "search short query": ["search", "--kb-path", kb, *HASH, "必要"],
        "--html": ["eval", "--kb-path", kb, *HASH, "--no-history", "--html", "必要.html"],
        "--trec-run": ["eval", "--kb-path", kb, *HASH, "--no-history", "--trec-run", "必要.txt"],
        "--golden": ["eval", "--kb-path", kb, *HASH, "--golden", "必要.yml"],
        "--config": ["eval", "--kb-path", kb, *HASH, "--config", "必要.toml"],
        "--index-dir": ["eval", "--kb-path", kb, *HASH, "--index-dir", "必要idx"],
        "index --kb-path": ["index", "--kb-path", other, *HASH],
        "search --kb-path": ["search", "--kb-path", other, *HASH, "x"],
        "eval --kb-path": ["eval", "--kb-path", other, *HASH],
        "init --kb-path": ["init", "--kb-path", other],
        "tune --kb-path": ["tune", "--kb-path", other, *HASH],
        "history --kb-path": ["history", "--kb-path", other],
        "floors --kb-path": ["floors", "--kb-path", other],
    }


def test_utf8_typed_under_euc_jp_is_one_line_naming_the_locale(
    example_kb_copy: Path, tmp_path: Path, foreign_locale: ForeignLocale
) -> None:
    # before: tracebacks (os.fsencode in typed_text, resolve in report_targets), "the
    # path holds a NUL character" and "a lone surrogate", none naming the locale
    env, encoding = foreign_locale(EUCJP)
    failures = {}
    for case, args in _eucjp_cases(tmp_path, example_kb_copy).items():
        proc = run([*GROOVE, *args], env, tmp_path)
        try:
            one_line(proc, encoding, {1, 2})
        except AssertionError as exc:
            failures[case] = str(exc)
    assert not failures, failures
    assert not list(tmp_path.glob("*.html")) and not list(tmp_path.glob("*.txt"))


@pytest.mark.parametrize(
    "option",
    ["--groove-json=/tmp/必要.json", "--groove-golden=必要.yml", "--groove-kb=必要kb",
     "--groove-config=必要.toml", "--groove-index-dir=必要idx"],
)  # fmt: skip
def test_under_pytest_utf8_typed_under_euc_jp_is_one_usage_error(
    example_kb_copy: Path, tmp_path: Path, foreign_locale: ForeignLocale, option: str
) -> None:
    # --groove-json was INTERNALERROR (exit 3)
    env, encoding = foreign_locale(EUCJP)
    (tmp_path / "必要kb").mkdir()
    args = [*PYTEST, "--groove-kb", example_kb_copy, "--groove-model", "hash", option]
    if option.startswith("--groove-kb"):
        args = [*PYTEST, "--groove-model", "hash", option]
    proc = run(args, env, tmp_path)
    lines = [line for line in error_lines(proc, encoding) if line.startswith("ERROR:")]
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR and len(lines) == 1, proc.stderr
    assert f"as {encoding} {THE_FIX}" in lines[0], lines[0]
    assert "lone surrogate" not in lines[0] and "NUL" not in lines[0]


# --------------------------------------------------------------------------- written paths


@pytest.mark.parametrize("locale", [ASCII, LATIN1])
def test_an_expected_path_the_locale_cannot_name_is_refused_naming_the_locale(
    example_kb_copy: Path, tmp_path: Path, foreign_locale: ForeignLocale, locale: str
) -> None:
    # once "holds a character that cannot be written as a file name (a lone
    # surrogate) ...; shorten it": the wrong cause and the wrong fix
    env, encoding = foreign_locale(locale)
    golden = tmp_path / "golden.yml"
    golden.write_text(
        "queries:\n  - query: the weather in town\n    expected:\n      - path: İstanbul/ılık.md\n",
        encoding="utf-8",
    )
    args = [*GROOVE, "eval", "--kb-path", example_kb_copy, *HASH, "--golden", golden]
    line = one_line(run(args, env), encoding, {1})
    assert "line 4" in line and "shorten" not in line


@pytest.mark.parametrize(
    ("setting", "key"),
    [('index_dir = "índice"\n', "index_dir"), ('[eval]\ngolden = "prüfung.yml"\n', "golden")],
)
def test_a_config_path_the_locale_would_write_otherwise_is_refused(
    example_kb_copy: Path, foreign_locale: ForeignLocale, setting: str, key: str
) -> None:
    # Latin-1 made the folder `\xedndice`, another name than the one in the file
    env, encoding = foreign_locale(LATIN1)
    (example_kb_copy / "groove.toml").write_text(setting, encoding="utf-8")
    before = sorted(p.name for p in example_kb_copy.iterdir())
    proc = run([*GROOVE, "index", "--kb-path", example_kb_copy, *HASH], env)
    line = one_line(proc, encoding, {1})
    assert key in line and "groove.toml" in line
    assert sorted(p.name for p in example_kb_copy.iterdir()) == before


def test_a_beir_import_never_writes_a_name_the_locale_would_change(
    tmp_path: Path, foreign_locale: ForeignLocale
) -> None:
    env, encoding = foreign_locale(LATIN1)
    source = tmp_path / "dataset"
    (source / "qrels").mkdir(parents=True)
    documents = [{"_id": "文書/一", "title": "Rollback", "text": "Revert a release."}]
    (source / "corpus.jsonl").write_text(
        "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in documents), encoding="utf-8"
    )
    (source / "queries.jsonl").write_text('{"_id": "q1", "text": "revert"}\n')
    (source / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\t文書/一\t1\n", encoding="utf-8"
    )
    kb = tmp_path / "kb"
    proc = run([*GROOVE, "import", "beir", source, "--kb-path", kb], env)
    line = one_line(proc, encoding, {1})
    assert "nothing was written" in line
    assert not kb.exists()


# --------------------------------------------------------------------------- the walk


@pytest.fixture
def cafe_kb(tmp_path: Path) -> Path:
    """The example KB with a note whose name is not ASCII, and a query expecting it."""
    kb = tmp_path / "r3"
    copy_example_kb(kb)
    (kb / "café.md").write_text(CAFE_NOTE, encoding="utf-8")
    with (kb / ".groove-eval.yml").open("a", encoding="utf-8") as golden:
        golden.write(CAFE_QUERY)
    return kb


@pytest.mark.parametrize("locale", [LATIN1, EUCJP, ASCII])
def test_a_utf8_note_name_under_a_foreign_locale_records_nothing(
    cafe_kb: Path, foreign_locale: ForeignLocale, locale: str
) -> None:
    # Latin-1 read `café.md` as `cafÃ©.md`: the answer "renamed", a regression, and the
    # bogus run recorded as the next baseline (ASCII and EUC-JP skipped the note as
    # "not valid UTF-8", which it is)
    env, encoding = foreign_locale(locale)
    recorded = run([*GROOVE, "eval", "--kb-path", cafe_kb, *HASH], UTF8)
    assert recorded.returncode == 0, recorded.stderr
    history = (cafe_kb / ".groove-eval-history.json").read_bytes()
    proc = run([*GROOVE, "eval", "--kb-path", cafe_kb, *HASH, "--fail-on-regression"], env)
    line = one_line(proc, encoding, {1})
    assert "café.md" in line or "caf\\xe9.md" in line, line
    assert proc.stdout == b""  # no report: nothing was measured
    assert (cafe_kb / ".groove-eval-history.json").read_bytes() == history


@pytest.mark.parametrize("locale", [LATIN1, EUCJP, ASCII])
def test_the_walk_stops_at_a_utf8_name_the_locale_misreads(
    cafe_kb: Path, foreign_locale: ForeignLocale, locale: str
) -> None:
    # no golden file names the note here: the walk itself must not index `cafÃ©.md`
    # (Latin-1), nor leave the note out as "not valid UTF-8" (EUC-JP, ASCII)
    env, encoding = foreign_locale(locale)
    (cafe_kb / "menu").mkdir()
    (cafe_kb / "menu" / "crème.md").write_text(CAFE_NOTE, encoding="utf-8")
    (cafe_kb / "café.md").rename(cafe_kb / "menu" / "cafe.md")
    (cafe_kb / "menu").rename(cafe_kb / "menü")
    for command in (["index"], ["eval", "--golden", KB_EVAL_GOLDEN, "--no-history"]):
        proc = run([*GROOVE, *command, "--kb-path", cafe_kb, *HASH], env)
        line = one_line(proc, encoding, {1})
        assert line.startswith("Error: cannot read the name of ")
        assert "men" in line and "crème" not in line  # the folder, before what is in it


def test_under_pytest_a_utf8_note_name_records_nothing(
    cafe_kb: Path, foreign_locale: ForeignLocale
) -> None:
    env, encoding = foreign_locale(LATIN1)
    recorded = run([*GROOVE, "eval", "--kb-path", cafe_kb, *HASH], UTF8)
    assert recorded.returncode == 0, recorded.stderr
    history = (cafe_kb / ".groove-eval-history.json").read_bytes()
    proc = run([*PYTEST, "--groove-kb", cafe_kb, "--groove-model", "hash"], env, cafe_kb.parent)
    lines = [line for line in error_lines(proc, encoding) if line.startswith("ERROR:")]
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR and len(lines) == 1, proc.stderr
    assert f"as {encoding} {THE_FIX}" in lines[0]
    assert (cafe_kb / ".groove-eval-history.json").read_bytes() == history


def _indexed_line(proc: subprocess.CompletedProcess[bytes]) -> str:
    assert proc.returncode == 0, proc.stderr
    (line,) = [x for x in proc.stdout.decode("ascii", "replace").splitlines() if "indexed:" in x]
    return line.split(";")[0]  # the counts, not the time taken


@pytest.mark.parametrize("locale", [LATIN1, EUCJP])
def test_a_name_that_is_not_utf8_is_skipped_under_every_locale(
    tmp_path: Path, foreign_locale: ForeignLocale, locale: str
) -> None:
    # a Latin-1 name on disk: a UTF-8 run skips it (the index holds UTF-8 text), and so
    # must a Latin-1 run, which once indexed it as `café.md`
    env, encoding = foreign_locale(locale)
    kbs = {}
    for name in ("utf8", "foreign"):
        kbs[name] = kb = tmp_path / name
        copy_example_kb(kb)
        (kb / os.fsdecode(b"caf\xe9.md")).write_text(CAFE_NOTE, encoding="utf-8")
    utf8 = run([*GROOVE, "index", "--kb-path", kbs["utf8"], *HASH], UTF8)
    foreign = run([*GROOVE, "index", "--kb-path", kbs["foreign"], *HASH], env)
    assert _indexed_line(foreign) == _indexed_line(utf8)
    assert "its name is not valid UTF-8" in foreign.stderr.decode(encoding, "replace")


def test_names_that_are_not_ascii_but_never_indexed_are_no_reason_to_stop(
    tmp_path: Path, foreign_locale: ForeignLocale
) -> None:
    # only a name the run would index or enter has to be read right: an image, a link
    # and an ignored folder with such names are left out as under a UTF-8 locale
    env, encoding = foreign_locale(LATIN1)
    kb = tmp_path / "kb"
    copy_example_kb(kb)
    (kb / "Übersicht.png").write_bytes(b"\x89PNG")
    (kb / "Entwürfe").mkdir()
    (kb / "Entwürfe" / "draft.md").write_text("# Draft\n\n## Idea\n\nNot yet.\n")
    (kb / ".grooveignore").write_text("Entwürfe/\n", encoding="utf-8")
    (kb / "verknüpft.md").symlink_to(kb / "README.md")
    proc = run([*GROOVE, "eval", "--kb-path", kb, *HASH, "--no-history"], env)
    assert proc.returncode == 0, proc.stderr.decode(encoding, "replace")


# --------------------------------------------------------------------------- the KB's own path


@pytest.mark.parametrize("locale", [LATIN1, EUCJP])
def test_a_kb_folder_named_in_utf8_is_evaluated_as_under_utf8(
    tmp_path: Path, foreign_locale: ForeignLocale, locale: str
) -> None:
    # the KB's own path, typed, is used as typed; but SQLite takes names as UTF-8: it
    # was given `Notizen-Ã¼` and said "unable to open database file; pass --index-dir"
    env, encoding = foreign_locale(locale)
    kb = tmp_path / "Notizen-ü"
    copy_example_kb(kb)
    args = [*GROOVE, "eval", "--kb-path", kb, *HASH, "--format", "json", "--no-history"]
    foreign = run(args, env)
    assert foreign.returncode == 0, foreign.stderr.decode(encoding, "replace")
    # the index the foreign run built, where a UTF-8 run looks for it, up to date
    indexed = _indexed_line(run([*GROOVE, "index", "--kb-path", kb, *HASH], UTF8))
    assert indexed.startswith("indexed: 0 added, 0 changed, 0 renamed, 0 removed"), indexed
    utf8 = run(args, UTF8)
    assert json.loads(foreign.stdout)["per_query"] == json.loads(utf8.stdout)["per_query"]


# --------------------------------------------------------------------------- JSON


@pytest.fixture
def ascii_kb(tmp_path: Path) -> Path:
    """kb-eval: ASCII file names, English and Japanese notes and queries."""
    kb = tmp_path / "kb-eval"
    shutil.copytree(KB_EVAL, kb, ignore=LOCAL_STATE)
    return kb


def _same_json(foreign: subprocess.CompletedProcess[bytes], utf8: Any) -> dict[str, Any]:
    assert foreign.returncode == utf8.returncode == 0, foreign.stderr
    # RFC 8259: JSON between systems is UTF-8; written as ASCII with \u escapes, it
    # is the same bytes in every encoding
    assert foreign.stdout.isascii(), foreign.stdout[:200]
    document: dict[str, Any] = json.loads(foreign.stdout)
    assert document == json.loads(utf8.stdout)
    return document


@pytest.mark.parametrize("locale", [LATIN1, EUCJP])
def test_eval_json_under_a_foreign_locale_is_the_utf8_runs_json(
    ascii_kb: Path, foreign_locale: ForeignLocale, locale: str
) -> None:
    # EUC-JP wrote the Japanese queries as EUC-JP bytes, which no JSON reader takes;
    # an ASCII-named KB is evaluated alike under every locale
    env, _ = foreign_locale(locale)
    args = [*GROOVE, "eval", "--kb-path", ascii_kb, *HASH, "--golden", KB_EVAL_GOLDEN]
    args += ["--format", "json", "--no-history"]
    utf8 = run(args, UTF8)
    report = json.loads(utf8.stdout)
    foreign = run(args, env)
    assert foreign.stdout.isascii(), foreign.stdout[:200]
    foreign_report = json.loads(foreign.stdout)
    assert foreign.returncode == utf8.returncode == 0
    assert foreign_report["aggregate"] == report["aggregate"]
    assert foreign_report["per_query"] == report["per_query"]
    assert any(not q["query"].isascii() for q in report["per_query"])


@pytest.mark.parametrize("command", ["search", "history show", "tune"])
def test_every_json_command_under_euc_jp_writes_utf8_json(
    ascii_kb: Path, tmp_path: Path, foreign_locale: ForeignLocale, command: str
) -> None:
    env, _ = foreign_locale(EUCJP)
    kb = ["--kb-path", ascii_kb, *HASH]
    golden = tmp_path / "golden.yml"
    # an id that is not ASCII, so that tune's report holds one
    text = KB_EVAL_GOLDEN.read_text(encoding="utf-8")
    golden.write_text(text.replace("id: ja-rollback", "id: 切り戻し"), encoding="utf-8")
    recorded = run([*GROOVE, "eval", *kb, "--golden", golden, "--format", "json"], UTF8)
    assert recorded.returncode == 0, recorded.stderr
    if command == "search":
        args = ["search", *kb, "--format", "json", "rollback release"]
    elif command == "history show":
        listing = run([*GROOVE, "history", "--kb-path", ascii_kb, "--format", "json"], UTF8)
        (row,) = json.loads(listing.stdout)
        args = ["history", "show", row["run"], "--kb-path", ascii_kb, "--format", "json"]
    else:
        args = ["tune", *kb, "--golden", golden, "--format", "json"]
    utf8 = run([*GROOVE, *args], UTF8)
    assert not utf8.stdout.isascii(), utf8.stdout[:200]
    _same_json(run([*GROOVE, *args], env), utf8)


def test_the_plugins_json_report_under_euc_jp_is_utf8(
    ascii_kb: Path, foreign_locale: ForeignLocale, tmp_path: Path
) -> None:
    env, _ = foreign_locale(EUCJP)
    reports = {}
    for name, environment in (("utf8", UTF8), ("eucjp", env)):
        target = tmp_path / f"{name}.json"
        args = [*PYTEST, "--groove-kb", ascii_kb, "--groove-model", "hash"]
        args += ["--groove-golden", KB_EVAL_GOLDEN, "--groove-json", target, "--groove-no-history"]
        proc = run(args, environment, tmp_path)
        assert proc.returncode in (0, 1), proc.stderr
        reports[name] = json.loads(target.read_bytes().decode("utf-8"))
    assert reports["eucjp"]["per_query"] == reports["utf8"]["per_query"]
