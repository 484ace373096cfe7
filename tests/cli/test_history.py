"""``groove history`` and the baseline / threshold / retriever doors of ``groove eval``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import copy_example_kb
from pytest_groove.evaluation.history.file import HISTORY_FILE_NAME, encode_history, load_history
from tests.helpers.cli_invoke import Groove, single_error
from tests.helpers.eval_factories import big_run, fingerprint, run


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    copy_example_kb(root)
    return root


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    """A KB folder whose history holds three runs (minutes 3, 2, 1), the oldest frozen."""
    root = tmp_path / "stored"
    root.mkdir()
    from dataclasses import replace

    runs = [
        big_run(3, queries=2, hits=2),
        run(minutes=2, fp=fingerprint(model="e5-small")),
        replace(big_run(1, queries=2, hits=2), frozen=True),
    ]
    (root / HISTORY_FILE_NAME).write_bytes(encode_history(runs))
    return root


def test_history_lists_runs_newest_first_with_the_frozen_marker(
    stored: Path, groove: Groove
) -> None:
    done = groove("history", "--kb-path", stored)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("3 run(s) in ") and "* = frozen baseline" in lines[0]
    assert lines[1].startswith("  2026-04-24T05:35:01Z  bge-m3  4 docs  2 queries  recall@1 0.500")
    assert lines[2].startswith("  2026-04-24T05:34:01Z  e5-small")
    assert lines[3].startswith("* 2026-04-24T05:33:01Z")


def test_history_as_json(stored: Path, groove: Groove) -> None:
    done = groove("history", "--kb-path", stored, "--format", "json")
    rows = json.loads(done.stdout)
    assert [r["run"] for r in rows] == [
        "2026-04-24T05:35:01Z",
        "2026-04-24T05:34:01Z",
        "2026-04-24T05:33:01Z",
    ]
    assert [r["frozen"] for r in rows] == [False, False, True]
    assert rows[0]["aggregate"]["mrr"] == 0.5


def test_history_show_prints_the_run_report(stored: Path, groove: Groove) -> None:
    done = groove("history", "show", "2026-04-24T05:35", "--kb-path", stored)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("recorded run — 2026-04-24T05:35:01Z")
    # diffed as when it was recorded: against the frozen baseline older than it
    assert "Aggregate (previous run: 2026-04-24T05:33:01Z, frozen baseline" in done.stdout


def test_history_diff_is_the_gate_diff(stored: Path, groove: Groove) -> None:
    done = groove("history", "diff", "2026-04-24T05:33", "2026-04-24T05:35", "--kb-path", stored)
    assert done.returncode == 0, done.stderr
    assert "diff against 2026-04-24T05:33:01Z" in done.stdout
    incompatible = groove(
        "history", "--kb-path", stored, "diff", "2026-04-24T05:34", "2026-04-24T05:35"
    )
    # runs of other settings are compared all the same, each difference named
    assert "Aggregate (run of 2026-04-24T05:34:01Z, compared across changes)" in (
        incompatible.stdout
    )
    assert "  settings changed: model e5-small -> bge-m3" in incompatible.stdout
    assert "diff disabled" not in incompatible.stdout


def test_a_gated_diff_of_runs_with_other_settings_compares_them(
    stored: Path, groove: Groove
) -> None:
    # it refused (and before that printed "diff disabled" and passed): a model change
    # is exactly what a gate is asked to judge, so the two runs are compared
    before = (stored / HISTORY_FILE_NAME).read_bytes()
    gated = groove(
        "history", "diff", "2026-04-24T05:34", "2026-04-24T05:35", "--kb-path", stored,
        "--fail-on-regression",
    )  # fmt: skip
    assert gated.returncode in (0, 1) and "Error" not in gated.stderr
    assert "settings changed: model e5-small -> bge-m3" in gated.stdout
    assert (stored / HISTORY_FILE_NAME).read_bytes() == before
    comparable = groove(
        "history", "diff", "2026-04-24T05:33", "2026-04-24T05:35", "--kb-path", stored,
        "--fail-on-regression",
    )  # fmt: skip
    assert comparable.returncode in (0, 1) and "Error" not in comparable.stderr


def test_history_freeze_moves_the_baseline_and_keeps_every_run(
    stored: Path, groove: Groove
) -> None:
    done = groove("history", "freeze", "2026-04-24T05:35:01Z", "--kb-path", stored)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("frozen baseline: the run of 2026-04-24T05:35:01Z;")
    assert "+00:00" not in done.stdout  # one spelling of the moment, not two
    loaded = load_history(stored / HISTORY_FILE_NAME)
    assert [r.frozen for r in loaded] == [True, False, False]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("show", "1999"), "no run in "),
        (("show", "2026-04-24T05"), "matches 3 runs"),
        (("freeze", "x"), "no run in "),
    ],
)
def test_unknown_or_ambiguous_runs_are_one_line(
    stored: Path, args: tuple[str, ...], message: str, groove: Groove
) -> None:
    done = groove("history", *args, "--kb-path", stored)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: ") and message in done.stderr
    assert done.stderr.count("\n") == 1


def test_history_needs_a_kb(tmp_path: Path, groove: Groove) -> None:
    done = groove("history")
    assert done.returncode == 1 and "needs --kb-path" in done.stderr
    assert "Traceback" not in done.stderr


# --------------------------------------------------------------------------- groove eval doors


def test_eval_with_a_named_baseline_threshold_and_freeze_confirmation(
    kb: Path, groove: Groove
) -> None:
    first = groove("eval", "--kb-path", kb, "--model", "hash")
    assert first.returncode == 0, first.stderr
    (recorded,) = load_history(kb / HISTORY_FILE_NAME)
    stamp = recorded.timestamp.strftime("%Y-%m-%dT%H:%M:%S")
    second = groove(
        "eval",
        "--kb-path",
        kb,
        "--model",
        "hash",
        "--baseline",
        stamp,
        "--threshold",
        "recall@5=0.02,mrr=0.1",
        "--freeze-baseline",
        "--fail-on-regression",
    )
    assert second.returncode == 0, second.stderr
    assert "Aggregate (baseline run you named: " in second.stdout
    assert "groove eval: frozen baseline: the run of " in second.stderr
    assert [r.frozen for r in load_history(kb / HISTORY_FILE_NAME)] == [True, False]


def test_a_merge_that_kept_both_sides_baseline_lines_freezes_neither(
    kb: Path, groove: Groove
) -> None:
    """Branch a froze R1, branch b R2; the conflict on the `baseline` line was resolved
    by keeping both lines (as a ``merge=union`` driver does): neither side's choice may
    win by where its line landed, as with the conflict markers left in."""
    history = kb / HISTORY_FILE_NAME
    for _ in range(2):
        assert groove("eval", "--kb-path", kb, "--model", "hash").returncode == 0
    newer, older = (run.timestamp for run in load_history(history))
    r1, r2 = (stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ") for stamp in (older, newer))
    base = history.read_bytes()
    sides = []
    for run_id in (r1, r2):  # branch a, then branch b
        history.write_bytes(base)
        assert groove("history", "freeze", run_id, "--kb-path", kb).returncode == 0
        sides.append(history.read_text(encoding="utf-8").splitlines(keepends=True))
    ours, theirs = sides
    (their_marker,) = (line for line in theirs if line.lstrip().startswith('"baseline"'))
    at = next(i for i, line in enumerate(ours) if line.lstrip().startswith('"baseline"'))
    history.write_text("".join([*ours[: at + 1], their_marker, *ours[at + 1 :]]), "utf-8")

    listed = groove("history", "--kb-path", kb)
    assert listed.returncode == 0, listed.stderr
    assert not any(line.startswith("*") for line in listed.stdout.splitlines()[1:])
    warning = (
        f"its frozen-baseline markers name different runs ({r1}, {r2}: both sides of a "
        "merge?), so neither is frozen and the next save drops them; `groove history freeze "
        "RUN` freezes the one you want"
    )
    assert warning in listed.stderr
    assert groove("history", "verify", "--kb-path", kb).returncode == 1
    gated = groove("eval", "--kb-path", kb, "--model", "hash", "--fail-on-regression")
    assert gated.returncode == 0, gated.stderr
    assert f"Aggregate (previous run: {r2})" in gated.stdout  # the newest, not frozen
    assert warning in gated.stderr


def test_eval_refuses_bad_baselines_and_thresholds_before_any_search(
    kb: Path, groove: Groove
) -> None:
    unknown = groove("eval", "--kb-path", kb, "--model", "hash", "--baseline", "1999")
    assert unknown.returncode == 1 and "no run in " in unknown.stderr
    bad = groove("eval", "--kb-path", kb, "--model", "hash", "--threshold", "f1@5=0.1")
    assert bad.returncode == 2 and "unknown metric 'f1@5'" in bad.stderr
    unasked = groove("eval", "--kb-path", kb, "--model", "hash", "--threshold", "map=0.1")
    assert (
        unasked.returncode == 2 and "names map, which this run does not measure" in unasked.stderr
    )
    unmeasured = groove("eval", "--kb-path", kb, "--model", "hash", "--threshold", "ndcg@7=0.1")
    assert (
        unmeasured.returncode == 2
        and "ndcg@7, which this run does not measure" in unmeasured.stderr
    )
    assert not (kb / ".groove").exists()  # nothing was indexed or searched


@pytest.mark.parametrize(
    "floor", ["map=0.5", "precision@5=0.01", "hit_rate@5=0.01", "r_precision=0.01"]
)
def test_a_floor_on_an_optional_metric_not_measured_is_refused(
    kb: Path, floor: str, groove: Groove
) -> None:
    # read as 0, such a floor failed every run (exit 1) for a metric never measured
    key = floor.partition("=")[0]
    flagged = groove("eval", "--kb-path", kb, "--model", "hash", "--fail-under", floor)
    assert flagged.returncode == 2, flagged.stderr
    assert f"names {key}, which this run does not measure; ask for it with --metrics" in (
        flagged.stderr
    )
    (kb / "groove.toml").write_text(f'[eval]\nfail_under = "{floor}"\n', encoding="utf-8")
    configured = groove("eval", "--kb-path", kb, "--model", "hash")
    # the file's value: a config error naming the file (exit 1), not a bad flag (exit 2)
    assert configured.returncode == 1, configured.stderr
    assert configured.stderr.startswith(f"Error: invalid config {kb / 'groove.toml'}: ")
    assert f"[eval].fail_under names {key}, which this run does not measure" in (configured.stderr)
    assert not (kb / ".groove").exists()  # nothing was indexed or searched


def test_eval_refuses_an_incompatible_named_baseline(kb: Path, groove: Groove) -> None:
    assert groove("eval", "--kb-path", kb, "--model", "hash", "--k", "1,5").returncode == 0
    (recorded,) = load_history(kb / HISTORY_FILE_NAME)
    stamp = recorded.timestamp.isoformat()
    done = groove("eval", "--kb-path", kb, "--model", "hash", "--baseline", stamp)
    assert done.returncode == 1
    assert "k_values: [1, 5] (that run) vs [1, 5, 10] (this run)" in (" ".join(done.stderr.split()))


def test_eval_says_where_the_reports_were_written(kb: Path, tmp_path: Path, groove: Groove) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "out" / "report.html"
    done = groove("eval", "--kb-path", kb, "--model", "hash", "--no-history", "--html", target)
    assert done.returncode == 0, done.stderr
    assert f"groove eval: HTML report written to {target}" in done.stderr


def test_eval_with_a_module_retriever(kb: Path, tmp_path: Path, groove: Groove) -> None:
    (tmp_path / "team_search.py").write_text(
        "def search(query, limit):\n"
        "    return [{'path': 'ops/release-train.md', 'heading': 'Schedule', 'score': 1.0}]\n",
        encoding="utf-8",
    )
    done = groove(
        "eval", "--kb-path", kb, "--retriever", "team_search:search", "--no-history", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "retriever: team_search:search" in done.stdout
    assert not (kb / ".groove").exists()  # no index was built


@pytest.mark.parametrize(
    ("toml", "flags"),
    [
        ("[search.fusion]\nrrf_k = 30\n", ()),
        ("[search.mmr]\nenabled = true\n", ()),
        ("", ("--parent-retriever", "true")),
        ("[search]\nvector_centring = false\n", ()),
    ],
)
def test_a_retriever_regression_is_caught_whatever_the_engine_settings(
    kb: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    toml: str,
    flags: tuple[str, ...],
    groove: Groove,
) -> None:
    # the built-in pipeline's settings decide nothing a custom retriever returns: a
    # change to them must not switch the comparison (and the gate) off.  The module has
    # a name of its own: in-process runs share sys.modules
    (tmp_path / "settings_blind_search.py").write_text(
        "import os, pathlib\n"
        "def search(query, limit):\n"
        "    if os.environ.get('BROKEN'):\n"
        "        return [{'path': 'README.md', 'score': 1.0}]\n"
        "    kb = pathlib.Path(os.environ['KB'])\n"
        "    notes = sorted(p.relative_to(kb).as_posix() for p in kb.rglob('*.md'))\n"
        "    words = set(query.lower().split())\n"
        "    ranked = sorted(notes, key=lambda p: -len(words & set(p.replace('/', ' ')\n"
        "                    .replace('-', ' ').replace('.md', '').split())))\n"
        "    return [{'path': p, 'score': 1.0} for p in ranked[:limit]]\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("KB", str(kb))
    eval_args = (
        "eval",
        "--kb-path",
        kb,
        "--retriever",
        "settings_blind_search:search",
        "--no-color",
    )
    assert groove(*eval_args, cwd=tmp_path).returncode == 0
    (kb / "groove.toml").write_text(toml, encoding="utf-8")
    monkeypatch.setenv("BROKEN", "1")
    done = groove(*eval_args, *flags, "--fail-on-regression", cwd=tmp_path)
    assert "diff disabled" not in done.stdout
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Exit status 1 because --fail-on-regression was set" in done.stderr


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('model = "no-such-model"\n', "unknown embedding model 'no-such-model'"),
        ("[eval\n", "not valid TOML"),
        ("[eval]\nregression_threshold = 7\n", "regression_threshold"),
    ],
)
def test_eval_exits_1_for_an_invalid_groove_toml_naming_the_file(
    kb: Path, toml: str, message: str, groove: Groove
) -> None:
    (kb / "groove.toml").write_text(toml, encoding="utf-8")
    done = groove("eval", "--kb-path", kb)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"Error: invalid config {kb / 'groove.toml'}")
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not (kb / ".groove").exists()


CONFLICTED_TOML = """\
<<<<<<< HEAD
[eval]
k_values = [1, 5]
=======
[eval]
k_values = [1, 10]
>>>>>>> feature
"""


def test_a_groove_toml_left_mid_merge_is_named_as_a_merge_conflict(
    kb: Path, groove: Groove
) -> None:
    # tomllib's account is "Invalid statement (at line 1, column 1)": the marker line
    (kb / "groove.toml").write_text(CONFLICTED_TOML, encoding="utf-8")
    done = groove("eval", "--kb-path", kb, "--model", "hash")
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        f"Error: invalid config {kb / 'groove.toml'}: a merge conflict was left in the file "
        "(conflict markers at lines 1, 4 and 7), so it is not valid TOML: resolve the "
        "conflict, keeping the settings of both sides you want, and delete the marker lines\n"
    )
    assert not (kb / ".groove").exists()
    # a file that is only broken TOML is still called that
    (kb / "groove.toml").write_text("[eval\n=======\n", encoding="utf-8")
    assert "merge conflict" not in groove("eval", "--kb-path", kb).stderr


@pytest.mark.parametrize("command", ["freeze", "delete"])
def test_editing_a_history_that_cannot_be_written_names_no_eval_flag(
    kb: Path, monkeypatch: pytest.MonkeyPatch, command: str, groove: Groove
) -> None:
    import errno

    from pytest_groove.files import atomic

    assert groove("eval", "--kb-path", kb, "--model", "hash").returncode == 0
    stamp = load_history(kb / HISTORY_FILE_NAME)[0].timestamp.isoformat()

    def read_only(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(atomic, "write_atomic", read_only)
    done = groove("history", command, stamp, "--kb-path", kb)
    assert done.returncode == 1
    assert "Read-only file system" in done.stderr and "directory is writable" in done.stderr
    # `groove history` has no --no-history: the advice must not send anyone there
    assert "--no-history" not in done.stderr


def test_a_run_whose_queries_do_not_read_back_is_listed_then_named(
    tmp_path: Path, groove: Groove
) -> None:
    """A digest made again over queries this version cannot read: the listing reads no
    queries and lists the run; `show` stops in one line; `verify` names the run."""
    from pytest_groove.evaluation.history.codec import encode_run
    from pytest_groove.evaluation.runs.trust import stamp

    root = tmp_path / "forged"
    root.mkdir()
    good, bad = big_run(3, queries=2, hits=2), big_run(2, queries=2, hits=2)
    obj = encode_run(bad)
    del obj["digest"]
    obj["queries"][1]["hits"][0][0] = 99  # no path of the run's table
    forged = json.dumps(stamp(obj, False), ensure_ascii=False, separators=(",", ":"))
    data = encode_history([good, bad]).decode().splitlines()
    data[4] = forged
    (root / HISTORY_FILE_NAME).write_text("\n".join(data) + "\n", encoding="utf-8")

    listed = groove("history", "--kb-path", root)
    assert listed.returncode == 0 and listed.stderr == ""
    assert "2 run(s)" in listed.stdout
    shown = groove("history", "show", "2026-04-24T05:34", "--kb-path", root)
    assert "runs[1].queries[1].hits[0][0]" in single_error(shown)
    verified = groove("history", "verify", "--kb-path", root)
    assert verified.returncode == 1
    assert verified.stdout.startswith(
        "2026-04-24T05:34:01Z: its digest matches, but its queries cannot be read ("
    )


def _unreadable(data: bytes, run: object) -> bytes:
    """``data`` with ``run``'s line holding a hit that names no path of its table, under
    a digest made again."""
    from pytest_groove.evaluation.history.codec import encode_run
    from pytest_groove.evaluation.runs.trust import stamp

    obj = encode_run(run)  # type: ignore[arg-type]
    honest = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
    del obj["digest"]
    next(q for q in obj["queries"] if q["hits"])["hits"][0][0] = 9999
    forged = json.dumps(stamp(obj, False), ensure_ascii=False, separators=(",", ":"))
    assert honest in data
    return data.replace(honest, forged.encode(), 1)


def test_eval_reads_the_queries_of_its_baseline_only(kb: Path, groove: Groove) -> None:
    """An older run whose queries do not read back costs `groove eval` nothing: only the
    baseline's queries are read; as the baseline, it stops the run in one line."""
    from dataclasses import replace
    from datetime import timedelta

    assert groove("eval", "--kb-path", kb, "--model", "hash").returncode == 0
    path = kb / HISTORY_FILE_NAME
    (recorded,) = load_history(path)
    day = timedelta(days=1)
    older, oldest = (
        replace(recorded, timestamp=recorded.timestamp - day),
        replace(recorded, timestamp=recorded.timestamp - 2 * day),
    )
    path.write_bytes(_unreadable(encode_history([recorded, older]), older))
    again = groove("eval", "--kb-path", kb, "--model", "hash")
    assert again.returncode == 0 and "cannot be read" not in again.stderr, again.stderr
    assert len(load_history(path)) == 3

    data = _unreadable(encode_history([older, oldest]), older)
    path.write_bytes(data)
    stopped = groove("eval", "--kb-path", kb, "--model", "hash")
    assert "matches its digest, but its queries cannot be read" in single_error(stopped)
    assert path.read_bytes() == data  # nothing recorded
