"""The history file: load, save, bounds, refusals, atomicity, locking, baselines."""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.history.file import (
    HISTORY_FILE_NAME,
    HistoryWarning,
    bound_history,
    choose_baseline,
    encode_history,
    find_run,
    freeze_run,
    history_path,
    load_history,
    named_baseline,
    parse_history,
    save_history,
    select_baseline,
    stage_save,
)
from pytest_groove.evaluation.runs.record import RecordFormatError, RunRecord
from tests.helpers.eval_factories import big_run, corpus, fingerprint, run

unix_only = pytest.mark.skipif(sys.platform == "win32", reason="symlinks are refused on Unix")


@pytest.fixture
def hist(tmp_path: Path) -> Path:
    return tmp_path / HISTORY_FILE_NAME


def stamps(runs: list[RunRecord]) -> list[int]:
    """Minutes of each run (the factories' timestamps), newest first."""
    return [int((r.timestamp - run().timestamp).total_seconds() // 60) for r in runs]


def save(path: Path, new: RunRecord, size: int = 10, **kw: Any) -> list[str]:
    return save_history(path, [], new, size, **kw)


# --------------------------------------------------------------------------- loading


def test_history_lives_in_the_kb(tmp_path: Path) -> None:
    assert history_path(tmp_path) == tmp_path / ".groove-eval-history.json"


def test_missing_history_is_empty(hist: Path) -> None:
    assert load_history(hist, warnings=[]) == []


@pytest.mark.parametrize("content", [b"{not json", b"", b"{}", b"[]", b'{"runs": {}}', b"\xff\xfe"])
def test_unparsable_history_starts_fresh_with_a_warning(hist: Path, content: bytes) -> None:
    hist.write_bytes(content)
    warnings: list[str] = []
    assert load_history(hist, warnings=warnings) == []
    assert len(warnings) == 1
    assert str(hist) in warnings[0] and "starting fresh" in warnings[0]


def damaged(runs: list[RunRecord], index: int, breaks: Any = None) -> bytes:
    """A history of ``runs`` whose run ``index`` is replaced by ``breaks``."""
    doc = json.loads(encode_history(runs))
    doc["runs"][index] = breaks if breaks is not None else {"timestamp": "yesterday"}
    return json.dumps(doc, indent=2).encode()


def test_a_run_that_does_not_parse_is_skipped_and_the_others_kept(hist: Path) -> None:
    runs = [run(minutes=3), run(minutes=2, corpus=corpus()), run(minutes=1)]
    hist.write_bytes(damaged(runs, 1))
    warnings: list[str] = []
    assert load_history(hist, warnings=warnings) == [runs[0], runs[2]]
    (message,) = warnings
    assert str(hist) in message
    assert "1 of 3 stored run(s)" in message and "runs[1].timestamp" in message
    assert f"{hist}.bak" in message


def test_one_warning_counts_every_skipped_run(hist: Path) -> None:
    runs = [run(minutes=3), run(minutes=2), run(minutes=1)]
    doc = json.loads(damaged(runs, 0, []))
    doc["runs"][2] = "not a run"
    hist.write_text(json.dumps(doc))
    warnings: list[str] = []
    assert stamps(load_history(hist, warnings=warnings)) == [2]
    assert len(warnings) == 1 and "2 of 3 stored run(s)" in warnings[0]


def backups(hist: Path) -> list[Path]:
    return sorted(hist.parent.glob(hist.name + ".bak-*"))


def test_saving_over_skipped_runs_first_keeps_the_original_as_bak(hist: Path) -> None:
    runs = [run(minutes=2), run(minutes=1)]
    original = damaged(runs, 0)
    hist.write_bytes(original)
    loaded = load_history(hist, warnings=[])
    assert backups(hist) == []  # loading never writes
    save_history(hist, loaded, run(minutes=3), 10)
    (backup,) = backups(hist)
    assert backup.read_bytes() == original
    assert stamps(load_history(hist)) == [3, 1]
    leftovers = [p.name for p in hist.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_saving_over_an_unparsable_file_keeps_it_as_bak(hist: Path) -> None:
    hist.write_bytes(b"<<<<<<< HEAD\n{}")
    warnings: list[str] = []
    runs = load_history(hist, warnings=warnings)
    assert f"{hist}.bak" in warnings[0]
    save_history(hist, runs, run(minutes=3), 10)
    assert [b.read_bytes() for b in backups(hist)] == [b"<<<<<<< HEAD\n{}"]


def test_a_whole_history_needs_no_bak(hist: Path) -> None:
    save(hist, run(minutes=1))
    save(hist, run(minutes=2))
    hist.write_bytes(b"")
    save(hist, run(minutes=3))
    assert backups(hist) == []


def test_a_bak_that_cannot_be_written_stops_the_save(
    hist: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = damaged([run(minutes=2), run(minutes=1)], 1)
    hist.write_bytes(original)
    real_open = os.open

    def refuse_bak(path: Any, *args: Any, **kwargs: Any) -> int:
        if ".bak-" in str(path):
            raise OSError(28, "No space left on device")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse_bak)
    with pytest.raises(GrooveError, match=r"\.bak-.*No space left"):
        save(hist, run(minutes=3))
    assert hist.read_bytes() == original
    assert backups(hist) == []


def test_without_a_warning_list_the_warning_is_issued(hist: Path) -> None:
    hist.write_bytes(b"{not json")
    with pytest.warns(HistoryWarning, match="starting fresh"):
        assert load_history(hist) == []


def test_deeply_nested_json_is_unparsable_not_a_crash(hist: Path) -> None:
    hist.write_bytes(b"[" * 100_000)
    warnings: list[str] = []
    assert load_history(hist, warnings=warnings) == []
    assert warnings


def test_save_then_load_round_trips(hist: Path) -> None:
    new = run(minutes=1, corpus=corpus(), per_query=[big_run(0, 2, 3).per_query[0]])
    assert save(hist, new) == []
    assert load_history(hist) == [new]
    assert json.loads(hist.read_text("utf-8"))["runs"][0]["timestamp"] == "2026-04-24T05:33:01Z"


def test_unknown_top_level_keys_are_read_past_and_named(hist: Path) -> None:
    data = json.loads(encode_history([run(minutes=1)]))
    data["padding"] = "x" * 100
    hist.write_text(json.dumps(data))
    with pytest.warns(HistoryWarning, match="top level: padding"):
        assert stamps(load_history(hist)) == [1]


def test_unknown_fingerprint_keys_survive_a_rewrite_and_disable_the_diff(hist: Path) -> None:
    data = json.loads(encode_history([run(minutes=1)]))
    data["runs"][0]["fingerprint"]["future_knob"] = {"depth": 3}
    hist.write_text(json.dumps(data))
    (stored,) = load_history(hist)
    assert choose_baseline([stored], fingerprint()).baseline is None
    save(hist, run(minutes=2))
    rewritten = json.loads(hist.read_text("utf-8"))["runs"]
    assert [r["fingerprint"].get("future_knob") for r in rewritten] == [None, {"depth": 3}]


def test_legacy_runs_without_corpus_or_findings_load(hist: Path) -> None:
    data = json.loads(encode_history([run(minutes=1, corpus=corpus())]))
    del data["runs"][0]["corpus"]
    del data["runs"][0]["fingerprint"]["metric_version"]
    hist.write_text(json.dumps(data))
    (loaded,) = load_history(hist)
    assert loaded.corpus is None and loaded.findings == ()
    assert loaded.fingerprint.metric_version == 1


def test_encoding_writes_format_2_with_one_run_per_line(hist: Path) -> None:
    runs = [run(minutes=2, corpus=corpus()), run(minutes=1)]
    data = encode_history(runs)
    doc = json.loads(data)
    assert doc["format"] == 2
    lines = data.decode().splitlines()
    # a committed history changes by one line per run
    assert [json.loads(line.rstrip(",")) for line in lines[3:5]] == doc["runs"]
    assert encode_history([]) == b'{\n  "format": 2,\n  "runs": []\n}\n'


# --------------------------------------------------------------------------- refusals


def test_history_over_the_cap_is_refused_and_left_untouched(hist: Path) -> None:
    save(hist, run(minutes=1))
    padded = json.loads(hist.read_text())
    padded["padding"] = "x" * 4096
    hist.write_text(json.dumps(padded))
    before = hist.read_bytes()
    with pytest.raises(GrooveError, match="refusing to read the eval history"):
        load_history(hist, cap=4000)
    with pytest.raises(GrooveError, match="over the"):
        load_history(hist, cap=4000)
    assert hist.read_bytes() == before


@unix_only
def test_dangling_symlink_is_refused_not_absent_and_never_replaced(hist: Path) -> None:
    hist.symlink_to(hist.parent / "nowhere.json")
    with pytest.raises(GrooveError, match="refusing to read"):
        load_history(hist)
    with pytest.raises(GrooveError, match="refusing to read"):
        save(hist, run())
    assert hist.is_symlink()
    assert not (hist.parent / "nowhere.json").exists()


@unix_only
def test_symlink_to_a_real_history_is_refused(hist: Path, tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.json"
    real.write_bytes(encode_history([run(minutes=1)]))
    hist.symlink_to(real)
    with pytest.raises(GrooveError, match="refusing to read"):
        load_history(hist)
    before = real.read_bytes()
    with pytest.raises(GrooveError):
        save(hist, run(minutes=2))
    assert real.read_bytes() == before


def test_hard_linked_history_is_refused_and_untouched(hist: Path, tmp_path: Path) -> None:
    save(hist, run(minutes=1))
    os.link(hist, tmp_path / "other-name.json")
    before = hist.read_bytes()
    with pytest.raises(GrooveError, match="hard link"):
        load_history(hist)
    with pytest.raises(GrooveError, match="hard link"):
        save(hist, run(minutes=2))
    assert hist.read_bytes() == before


def test_a_directory_in_place_of_the_history_is_refused(hist: Path) -> None:
    hist.mkdir()
    with pytest.raises(GrooveError, match=r"is a folder, not a file; .*move the folder out"):
        load_history(hist)


@unix_only
def test_symlinked_lock_file_is_refused(hist: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    hist.with_name(hist.name + ".lock").symlink_to(victim)
    with pytest.raises(GrooveError, match="lock"):
        save(hist, run())
    assert victim.read_text() == "keep me"
    assert not hist.exists()


# --------------------------------------------------------------------------- saving


def test_newest_first_bounded_by_history_size(hist: Path) -> None:
    for minute in range(15):
        save_history(hist, load_history(hist), run(minutes=minute), 10)
    assert stamps(load_history(hist)) == list(range(14, 4, -1))


def test_save_rereads_the_file_so_a_concurrent_run_is_kept(hist: Path) -> None:
    stale = load_history(hist)  # [] -- then another process saves a run
    save(hist, run(minutes=1))
    save_history(hist, stale, run(minutes=2), 10)
    assert stamps(load_history(hist)) == [2, 1]


def test_save_replaces_unparsable_content(hist: Path) -> None:
    hist.write_bytes(b"garbage")
    warnings: list[str] = []
    runs = load_history(hist, warnings=warnings)
    assert save_history(hist, runs, run(minutes=3), 10) == []
    assert stamps(load_history(hist)) == [3]


def test_save_leaves_no_temporary_file_and_keeps_the_mode(hist: Path) -> None:
    save(hist, run(minutes=1))
    os.chmod(hist, 0o640)
    save(hist, run(minutes=2))
    leftovers = [p.name for p in hist.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
    if sys.platform != "win32":
        assert hist.stat().st_mode & 0o777 == 0o640


def test_a_failed_replace_keeps_the_old_file(hist: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    save(hist, run(minutes=1))
    before = hist.read_bytes()

    def broken(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(GrooveError, match="could not write the eval history"):
        save(hist, run(minutes=2))
    assert hist.read_bytes() == before
    assert [p for p in hist.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_history_is_trimmed_oldest_first_to_fit_the_cap(hist: Path) -> None:
    stored = [big_run(minute, queries=100, hits=10) for minute in range(8, -1, -1)]
    hist.write_bytes(encode_history(stored))
    cap = hist.stat().st_size // 4
    assert hist.stat().st_size > 3 * cap
    messages = save_history(hist, load_history(hist), big_run(9, queries=100), 10, cap)
    kept = load_history(hist)
    assert 0 < len(kept) < 10
    assert hist.stat().st_size <= cap
    assert stamps(kept) == list(range(9, 9 - len(kept), -1))
    assert messages == [
        f"eval history trimmed to {len(kept)} run(s) to stay under the {cap}-byte cap; "
        "[eval].history_size asks for more"
    ]


def test_a_single_run_over_the_cap_is_an_error_naming_no_history(hist: Path) -> None:
    save(hist, run(minutes=1))
    before = hist.read_bytes()
    with pytest.raises(GrooveError, match="--no-history"):
        save_history(hist, [], big_run(2, queries=5), 10, 1024)
    assert hist.read_bytes() == before


def test_realistic_history_size_is_well_under_the_cap() -> None:
    size = len(encode_history([big_run(m, queries=25, hits=10) for m in range(10)]))
    assert 32 * 1024 < size < 1024 * 1024


def _save_many(path: str, base: int) -> None:
    for i in range(5):
        save_history(Path(path), [], run(minutes=base + i), 1000)


@pytest.mark.skipif(sys.platform == "win32", reason="fork start method")
def test_concurrent_savers_never_lose_a_run(hist: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=_save_many, args=(str(hist), 100 * n)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    saved = load_history(hist)
    assert sorted(stamps(saved)) == sorted(100 * n + i for n in range(4) for i in range(5))


# --------------------------------------------------------------------------- frozen baseline


def test_freezing_writes_the_baseline_key_and_reloads_frozen(hist: Path) -> None:
    save(hist, run(minutes=1))
    save(hist, run(minutes=2), freeze_baseline=True)
    save(hist, run(minutes=3))
    doc = json.loads(hist.read_text())
    assert doc["baseline"] == "2026-04-24T05:34:01Z"
    assert list(doc) == ["format", "baseline", "runs"]
    assert [r.frozen for r in load_history(hist)] == [False, True, False]


def test_freezing_again_moves_the_marker(hist: Path) -> None:
    save(hist, run(minutes=1), freeze_baseline=True)
    save(hist, run(minutes=2), freeze_baseline=True)
    assert [r.frozen for r in load_history(hist)] == [True, False]


def test_frozen_run_is_kept_beyond_history_size(hist: Path) -> None:
    save(hist, run(minutes=0), size=3, freeze_baseline=True)
    for minute in range(1, 8):
        save(hist, run(minutes=minute), size=3)
    loaded = load_history(hist)
    assert stamps(loaded) == [7, 6, 5, 0]
    assert loaded[-1].frozen


def test_frozen_run_is_dropped_last_when_the_cap_bites() -> None:
    frozen = big_run(0, queries=20)
    ordered = [*(big_run(m, queries=20) for m in (3, 2, 1)), replace(frozen, frozen=True)]
    one = len(encode_history(ordered[:1]))
    kept, data, messages = bound_history(ordered, 10, int(one * 2.5))
    assert stamps(kept) == [3, 0]
    assert json.loads(data)["baseline"] == "2026-04-24T05:32:01Z"
    assert "trimmed to 2 run(s)" in messages[0]
    kept, data, messages = bound_history(ordered, 10, one + 10)
    assert stamps(kept) == [3]
    assert "baseline" not in json.loads(data)
    assert any("frozen baseline" in m and "dropped" in m for m in messages)
    # a message for people shows the moment as the text report does
    assert any("baseline of 2026-04-24T05:32:01Z no longer" in m for m in messages)


def test_a_baseline_marker_naming_no_run_freezes_nothing_and_says_so(hist: Path) -> None:
    doc = json.loads(encode_history([run(minutes=1)]))
    for marker in ("2030-01-01T00:00:00Z", "not a time"):
        doc["baseline"] = marker
        hist.write_text(json.dumps(doc))
        warnings: list[str] = []
        assert [r.frozen for r in load_history(hist, warnings=warnings)] == [False]
        (message,) = warnings
        assert f"marker ({marker}) names no single stored run" in message
    # the marker is the user's: the save that drops it keeps the file first
    save_history(hist, load_history(hist, warnings=[]), run(minutes=2), 10)
    assert len(backups(hist)) == 1


# --------------------------------------------------------------------------- baseline choice


def test_newest_compatible_run_is_the_baseline() -> None:
    runs = [run(minutes=2), run(minutes=1)]
    choice = choose_baseline(runs, fingerprint())
    assert choice.baseline is runs[0] and choice.skipped == 0 and not choice.frozen


def test_baseline_search_goes_back_past_incompatible_runs() -> None:
    experiment = run(minutes=3, fp=fingerprint(reranker="bge-reranker-v2-m3"))
    runs = [experiment, run(minutes=2), run(minutes=1)]
    choice = choose_baseline(runs, fingerprint())
    assert choice.baseline is runs[1]
    assert choice.newest is experiment
    assert choice.skipped == 1
    assert select_baseline(runs, fingerprint()) is runs[1]


def test_no_compatible_run_gives_no_baseline_but_names_the_newest() -> None:
    runs = [run(minutes=2, fp=fingerprint(golden_hash="other")), run(minutes=1)]
    choice = choose_baseline(runs, fingerprint(limit=20))
    assert choice.baseline is None
    assert choice.shown is runs[0]
    assert choose_baseline([], fingerprint()).shown is None


def test_frozen_baseline_wins_while_compatible() -> None:
    frozen = replace(run(minutes=1), frozen=True)
    runs = [run(minutes=3), run(minutes=2), frozen]
    choice = choose_baseline(runs, fingerprint())
    assert choice.baseline is frozen and choice.frozen


def test_incompatible_frozen_baseline_falls_back_to_newest_compatible() -> None:
    frozen = replace(run(minutes=1, fp=fingerprint(metric_version=1)), frozen=True)
    runs = [run(minutes=3), frozen]
    choice = choose_baseline(runs, fingerprint())
    assert choice.baseline is runs[0] and not choice.frozen


# --------------------------------------------------------------------------- properties


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.binary(max_size=512))
def test_arbitrary_bytes_never_crash_and_never_lose_data(hist: Path, content: bytes) -> None:
    hist.write_bytes(content)
    warnings: list[str] = []
    loaded = load_history(hist, warnings=warnings)
    assert hist.read_bytes() == content  # loading never writes
    try:
        expected = parse_history(content)
    except RecordFormatError:
        assert loaded == [] and len(warnings) == 1
        expected = []
    else:
        assert loaded == expected and len(warnings) <= 1
    save_history(hist, loaded, run(minutes=99), 1000)
    assert stamps(load_history(hist))[0] == 99
    assert load_history(hist)[1:] == expected


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


_VALID = json.loads(
    encode_history(
        [run(minutes=1, corpus=corpus(), per_query=big_run(0, 1, 2).per_query), run(minutes=0)]
    )
)
_VALID["baseline"] = "2026-04-24T05:33:01Z"


_RUNS = [
    run(minutes=3, corpus=corpus(), per_query=big_run(0, 2, 2).per_query),
    run(minutes=2, per_query=big_run(0, 1, 3).per_query),
    run(minutes=1, corpus=corpus(9, 9)),
]
_RUNS_DOC = json.loads(encode_history(_RUNS))
#: every place inside some stored run, as (run index, path within that run)
_RUN_PLACES = [(i, where) for i, raw in enumerate(_RUNS_DOC["runs"]) for where in _paths(raw)]


@settings(max_examples=200)
@given(place=st.sampled_from(_RUN_PLACES), value=_json, delete=st.booleans())
def test_one_run_damaged_anywhere_leaves_every_other_run(
    place: tuple[int, tuple[Any, ...]], value: Any, delete: bool
) -> None:
    index, where = place
    doc = json.loads(json.dumps(_RUNS_DOC))
    if not where:
        doc["runs"][index] = value
    else:
        target = doc["runs"][index]
        for step in where[:-1]:
            target = target[step]
        if delete and isinstance(target, dict):
            del target[where[-1]]
        else:
            target[where[-1]] = value
    runs = parse_history(json.dumps(doc).encode())
    others = [r for i, r in enumerate(_RUNS) if i != index]
    assert [r for r in runs if r in others] == others
    assert len(runs) in (len(others), len(_RUNS))


@settings(max_examples=200)
@given(where=st.sampled_from(_paths(_VALID)[1:]), value=_json)
def test_a_history_damaged_anywhere_parses_or_is_rejected_cleanly(
    where: tuple[Any, ...], value: Any
) -> None:
    doc = json.loads(json.dumps(_VALID))
    target = doc
    for step in where[:-1]:
        target = target[step]
    target[where[-1]] = value
    try:
        runs = parse_history(json.dumps(doc).encode())
    except RecordFormatError:
        return
    assert all(isinstance(r, RunRecord) for r in runs)
    # whatever parsed can be written back and read again to the same bytes (compared as
    # bytes: a damaged metric may read back as NaN, which never equals itself)
    encoded = encode_history(runs)
    again = parse_history(encoded)
    assert len(again) == len(runs)
    assert encode_history(again) == encoded


# --------------------------------------------------------------------------- format 2


def format_1(runs: list[RunRecord]) -> bytes:
    """A history as versions before format 2 wrote it (pretty-printed full runs)."""
    doc = {"runs": [r.to_json() for r in runs]}
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()


def float32_run(minutes: int, queries: int = 12, hits: int = 10) -> RunRecord:
    """A run shaped like a real one: float32 scores, Japanese and English headings."""
    base = big_run(minutes, queries=queries, hits=hits)
    per_query = []
    for i, result in enumerate(base.per_query):
        top = tuple(
            replace(
                hit,
                # a KB of 20 documents: the same paths come back for many queries
                path=f"docs/area-{(i + j) % 20}/some-document.md",
                heading=("戻した後にやること" if j % 2 else f"Section {(i + j) % 20} of the guide"),
                score=float(np.float32(0.0327868 / (1 + 0.013 * j + 0.001 * i))),
            )
            for j, hit in enumerate(result.top_k)
        )
        metrics = replace(
            result.metrics,
            ndcg_at_k={1: 0.0, 5: 0.6309297535714575, 10: 0.6309297535714575},
            reciprocal_rank=1 / 3,
        )
        per_query.append(replace(result, top_k=top, metrics=metrics))
    return replace(base, per_query=tuple(per_query))


def test_format_1_is_read_and_rewritten_as_format_2(hist: Path) -> None:
    old = [float32_run(2), run(minutes=1, corpus=corpus())]
    hist.write_bytes(format_1(old))
    assert load_history(hist) == old
    save(hist, run(minutes=3))
    assert json.loads(hist.read_bytes())["format"] == 2
    assert load_history(hist)[1:] == old
    assert backups(hist) == []  # nothing was lost, so nothing needed a copy


def test_a_twelve_query_run_takes_at_most_a_quarter_of_format_1() -> None:
    runs = [float32_run(0)]
    old, new = len(format_1(runs)), len(encode_history(runs))
    assert new * 4 <= old, (old, new)
    assert parse_history(encode_history(runs)) == runs  # and nothing is lost


def test_scores_that_are_not_32_bit_floats_round_trip_exactly() -> None:
    runs = [big_run(0, queries=3, hits=4)]  # scores 1/i: doubles
    assert "scores" not in json.loads(encode_history(runs))["runs"][0]
    assert parse_history(encode_history(runs)) == runs


def test_unusual_ranks_and_k_values_round_trip() -> None:
    base = big_run(0, queries=2, hits=3)
    odd = replace(
        base.per_query[1],
        top_k=tuple(replace(h, rank=h.rank * 2) for h in base.per_query[1].top_k),
        metrics=replace(base.per_query[1].metrics, recall_at_k={3: 0.5}),
    )
    runs = [replace(base, per_query=(base.per_query[0], odd))]
    assert parse_history(encode_history(runs)) == runs


@pytest.mark.parametrize(
    "breaks",
    [
        {"paths": ["a.md"]},
        {
            "queries": [
                {"id": "q", "query": "x", "expected": [[5, None]], "hits": [], "metrics": {}}
            ]
        },
        {"scores": "float16"},
        {"metric_k": ["1"]},
    ],
)
def test_a_damaged_compact_run_is_skipped_not_a_crash(hist: Path, breaks: dict[str, Any]) -> None:
    runs = [float32_run(2, queries=2), float32_run(1, queries=2)]
    doc = json.loads(encode_history(runs))
    doc["runs"][0].update(breaks)
    if "paths" in breaks:
        doc["runs"][0]["paths"] = []  # every index now points past the table
    hist.write_text(json.dumps(doc))
    warnings: list[str] = []
    assert load_history(hist, warnings=warnings) == [runs[1]]
    assert "runs[0]" in warnings[0]


# --------------------------------------------------------------------------- damage never blocks


def with_lone_surrogate(runs: list[RunRecord]) -> bytes:
    """A history whose first run's query text holds ``\\udfff`` (valid JSON, not UTF-8-able)."""
    data = encode_history(runs).decode()
    return data.replace('"query":"how does feature', '"query":"how \\udfff feature', 1).encode()


def test_a_lone_surrogate_is_repaired_and_later_runs_save(hist: Path) -> None:
    stored = [big_run(2, queries=2, hits=2), big_run(1, queries=2, hits=2)]
    original = with_lone_surrogate(stored)
    assert b"\\udfff" in original
    hist.write_bytes(original)
    warnings: list[str] = []
    loaded = load_history(hist, warnings=warnings)
    assert len(loaded) == 2 and "\ufffd" in loaded[0].per_query[0].query
    assert "lone surrogate" in warnings[0] and "runs[0]" in warnings[0]
    save_history(hist, loaded, run(minutes=3), 10)
    save_history(hist, load_history(hist), run(minutes=4), 10)  # and every save after it
    assert stamps(load_history(hist, warnings=[])) == [4, 3, 2, 1]
    (backup,) = backups(hist)
    assert backup.read_bytes() == original


def test_a_new_run_holding_a_lone_surrogate_still_saves(hist: Path) -> None:
    bad = run(minutes=1, per_query=[replace(big_run(0, 1, 1).per_query[0], query="a\udfffb")])
    save(hist, bad)
    (loaded,) = load_history(hist, warnings=[])
    assert loaded.per_query[0].query == "a\ufffdb"


def test_every_damage_event_keeps_its_own_backup(hist: Path) -> None:
    first = b"<<<<<<< HEAD\n{first}"
    hist.write_bytes(first)
    save(hist, run(minutes=1))
    second = damaged([run(minutes=3), run(minutes=2)], 0)
    hist.write_bytes(second)
    save(hist, run(minutes=4))
    third = b"{half a file"
    hist.write_bytes(third)
    save(hist, run(minutes=5))
    assert sorted(b.read_bytes() for b in backups(hist)) == sorted([first, second, third])


def test_a_backup_name_already_taken_is_never_overwritten(hist: Path) -> None:
    from datetime import UTC, datetime

    from pytest_groove.evaluation.history.file import new_backup_path

    moment = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    first = new_backup_path(hist, moment)
    assert first.name == ".groove-eval-history.json.bak-20260102T030405.000006Z"
    first.write_text("kept")
    second = new_backup_path(hist, moment)
    assert second != first and second.name.endswith("Z-2")


def test_stale_temporary_files_of_a_killed_save_are_removed(hist: Path) -> None:
    save(hist, run(minutes=1))
    stale = [
        hist.with_name(hist.name + ".k2j4_x9q.tmp"),
        hist.with_name(hist.name + ".bak.0a1b2c3d.tmp"),
    ]
    for path in stale:
        path.write_bytes(b"x" * 1000)
    others = [hist.with_name("notes.tmp"), hist.with_name(hist.name + ".mine.tmp.txt")]
    for path in others:
        path.write_text("not ours")
    save(hist, run(minutes=2))
    assert [p.exists() for p in stale] == [False, False]
    assert [p.exists() for p in others] == [True, True]
    assert stamps(load_history(hist)) == [2, 1]


# --------------------------------------------------------------------------- finding, freezing


def test_a_run_is_found_by_its_timestamp_or_a_unique_prefix(hist: Path) -> None:
    runs = [run(minutes=62), run(minutes=61), run(minutes=1)]
    # 2026-04-24T06:34:01Z, 06:33:01Z, 05:33:01Z
    assert find_run(runs, "2026-04-24T06:34:01Z", hist) is runs[0]
    assert find_run(runs, "2026-04-24T08:34:01+02:00", hist) is runs[0]  # the same instant
    assert find_run(runs, "2026-04-24T05", hist) is runs[2]
    with pytest.raises(GrooveError, match=r"matches 2 runs .*give more of the timestamp"):
        find_run(runs, "2026-04-24T06", hist)
    with pytest.raises(GrooveError, match=r"no run in .* matches '2025'.*groove history"):
        find_run(runs, "2025", hist)
    with pytest.raises(GrooveError, match="no run"):
        find_run(runs, "", hist)


def test_freezing_a_past_run_keeps_every_run(hist: Path) -> None:
    for minutes in (1, 2, 3):
        save(hist, run(minutes=minutes))
    frozen = freeze_run(hist, "2026-04-24T05:34")
    assert frozen.frozen and stamps([frozen]) == [2]
    loaded = load_history(hist)
    assert stamps(loaded) == [3, 2, 1]
    assert [r.frozen for r in loaded] == [False, True, False]
    assert choose_baseline(loaded, fingerprint()).baseline == loaded[1]
    freeze_run(hist, "2026-04-24T05:33")
    assert [r.frozen for r in load_history(hist)] == [False, False, True]


def test_freezing_without_a_history_is_one_clear_error(hist: Path) -> None:
    with pytest.raises(GrooveError, match="no eval history to freeze a run in"):
        freeze_run(hist, "2026")
    assert not hist.exists()


def test_a_named_baseline_is_used_or_the_difference_is_named(hist: Path) -> None:
    runs = [run(minutes=3), run(minutes=2, fp=fingerprint(model="e5-small")), run(minutes=1)]
    choice = named_baseline(runs, fingerprint(), "2026-04-24T05:33", hist)
    assert choice.baseline is runs[2] and choice.named
    with pytest.raises(
        GrooveError,
        match=r"cannot be compared with this run: model: e5-small \(that run\) vs bge-m3",
    ):
        named_baseline(runs, fingerprint(), "2026-04-24T05:34", hist)


# --------------------------------------------------------------------------- staged saves


def test_a_staged_save_changes_nothing_until_committed(hist: Path) -> None:
    save(hist, run(minutes=1))
    before = hist.read_bytes()
    staged = stage_save(hist, load_history(hist), run(minutes=2), 10)
    assert hist.read_bytes() == before
    assert staged.pending
    staged.commit()
    assert not staged.pending
    assert stamps(load_history(hist)) == [2, 1]
    staged.commit()  # a second commit does nothing
    assert stamps(load_history(hist)) == [2, 1]


def test_a_discarded_save_leaves_the_history_and_no_temp_file(hist: Path) -> None:
    save(hist, run(minutes=1))
    before = hist.read_bytes()
    stage_save(hist, load_history(hist), run(minutes=2), 10).discard()
    assert hist.read_bytes() == before
    assert sorted(p.name for p in hist.parent.iterdir()) == [
        HISTORY_FILE_NAME,
        HISTORY_FILE_NAME + ".lock",
    ]
    # the lock was released: the next save goes through at once
    save(hist, run(minutes=3))
    assert stamps(load_history(hist)) == [3, 1]


def test_a_failure_inside_a_staged_save_discards_it(hist: Path) -> None:
    save(hist, run(minutes=1))
    before = hist.read_bytes()
    staged = stage_save(hist, load_history(hist), run(minutes=2), 10)
    with pytest.raises(OSError, match="report"), staged:
        raise OSError("the report could not be written")
    assert hist.read_bytes() == before
    with stage_save(hist, load_history(hist), run(minutes=2), 10):
        pass
    assert stamps(load_history(hist)) == [2, 1]


# --------------------------------------------------------------------------- other branches


def conflicted(ours: list[RunRecord], theirs: list[RunRecord], common: list[RunRecord]) -> bytes:
    """The history git leaves when two branches each recorded runs on one base."""
    lines = [
        b"{",
        b'  "format": 2,',
        b'  "runs": [',
        b"<<<<<<< HEAD",
        *(piece + b"," for piece in json_lines(ours)),
        b"=======",
        *(piece + b"," for piece in json_lines(theirs)),
        b">>>>>>> feature",
        *json_lines(common),
        b"  ]",
        b"}",
    ]
    return b"\n".join(lines) + b"\n"


def json_lines(runs: list[RunRecord]) -> list[bytes]:
    """Each run's line as the history writes it."""
    encoded = encode_history(runs).split(b"\n")
    return [line.removesuffix(b",") for line in encoded if line.startswith(b"{") and len(line) > 1]


def test_a_merge_conflict_keeps_both_sides_runs_newest_first(hist: Path) -> None:
    base = [run(minutes=1)]
    # the feature branch's run is the newer one, written below ours in the conflict
    hist.write_bytes(conflicted([run(minutes=2)], [run(minutes=3)], base))
    warnings: list[str] = []
    runs = load_history(hist, warnings=warnings)
    assert stamps(runs) == [3, 2, 1]
    (message,) = warnings
    assert "merge conflict markers at lines 4, 6 and 8" in message
    assert "3 run(s) read" in message and f"{hist}.bak" in message
    # the baseline is the newest run, whatever its place in the file
    assert select_baseline(runs, fingerprint()) == runs[0]
    original = hist.read_bytes()
    save_history(hist, runs, run(minutes=4), 10)
    assert [b.read_bytes() for b in backups(hist)] == [original]
    assert stamps(load_history(hist, warnings=[])) == [4, 3, 2, 1]


def test_a_cut_off_history_keeps_the_runs_on_whole_lines(hist: Path) -> None:
    data = encode_history([run(minutes=3), run(minutes=2), run(minutes=1)])
    last = data.rindex(b"\n{")
    hist.write_bytes(data[: last + 40])  # the oldest run's line is cut in the middle
    warnings: list[str] = []
    assert stamps(load_history(hist, warnings=warnings)) == [3, 2]
    (message,) = warnings
    assert "not JSON as a whole (Unterminated string" in message
    assert "skipped 1 of 3 stored run(s)" in message and "line 6: not a whole JSON" in message


@pytest.mark.parametrize("bad", [b"\xe9", b"\xff\xfe", b"\xc3"])
def test_a_byte_that_is_not_utf8_costs_only_its_line(hist: Path, bad: bytes) -> None:
    frozen = replace(run(minutes=1), frozen=True)
    lines = encode_history([run(minutes=3), run(minutes=2), frozen]).split(b"\n")
    newest = next(i for i, line in enumerate(lines) if line.startswith(b'{"'))
    cut = lines[newest].index(b'"golden_hash"')
    lines[newest] = lines[newest][:cut] + bad + lines[newest][cut:]
    hist.write_bytes(b"\n".join(lines))
    warnings: list[str] = []
    runs = load_history(hist, warnings=warnings)
    # the frozen baseline and the other run survive; the damaged line is named
    assert stamps(runs) == [2, 1] and [r.frozen for r in runs] == [False, True]
    (message,) = warnings
    assert "not JSON as a whole (not UTF-8 text (" in message
    assert f"line {newest + 1}: not UTF-8 text" in message and "starting fresh" not in message


def test_a_conflict_between_two_frozen_markers_freezes_neither(hist: Path) -> None:
    ours, theirs = replace(run(minutes=2), frozen=True), replace(run(minutes=3), frozen=True)
    head_ours = encode_history([ours]).split(b"\n")[2]
    head_theirs = encode_history([theirs]).split(b"\n")[2]
    assert head_ours.startswith(b'  "baseline"')
    data = conflicted([ours], [theirs], [run(minutes=1)]).replace(
        b'  "format": 2,\n',
        b'  "format": 2,\n<<<<<<< HEAD\n'
        + head_ours
        + b"\n=======\n"
        + head_theirs
        + b"\n>>>>>>> feature\n",
    )
    hist.write_bytes(data)
    warnings: list[str] = []
    runs = load_history(hist, warnings=warnings)
    assert [r.frozen for r in runs] == [False, False, False]
    assert "frozen-baseline markers name different runs" in warnings[0]


def test_a_history_from_a_newer_version_is_left_alone(hist: Path) -> None:
    original = encode_history([run(minutes=1)]).replace(b'"format": 2', b'"format": 3')
    hist.write_bytes(original)
    with pytest.raises(GrooveError) as caught:
        load_history(hist, warnings=[])
    assert caught.value.message == (
        f"eval history {hist} was written by a newer pytest-groove (history format 3; this "
        "version reads formats 1 to 2), so it is left as it is: upgrade pytest-groove, or "
        "pass --no-history"
    )
    with pytest.raises(GrooveError, match="newer pytest-groove"):
        save_history(hist, [], run(minutes=2), 10)
    # read line by line too (a conflict in a newer file)
    hist.write_bytes(original.replace(b'"runs"', b'<<<<<<< HEAD\n"runs"', 1))
    with pytest.raises(GrooveError, match="newer pytest-groove"):
        load_history(hist, warnings=[])
    assert backups(hist) == []


def test_a_run_written_twice_is_one_run(hist: Path) -> None:
    doc = json.loads(encode_history([run(minutes=2), run(minutes=1)]))
    doc["runs"].insert(1, doc["runs"][0])
    hist.write_text(json.dumps(doc))
    runs = load_history(hist, warnings=[])
    assert stamps(runs) == [2, 1]
    assert find_run(runs, "2026-04-24T05:34", hist) == runs[0]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(order=st.permutations(range(5)), cut=st.integers(min_value=0, max_value=4))
def test_runs_read_in_any_file_order_come_out_newest_first(
    hist: Path, order: list[int], cut: int
) -> None:
    runs = [run(minutes=m) for m in range(5)]
    shuffled = [runs[i] for i in order]
    # split into two sides of a conflict at any place
    hist.write_bytes(conflicted(shuffled[:cut], shuffled[cut:-1], shuffled[-1:]))
    assert stamps(load_history(hist, warnings=[])) == [4, 3, 2, 1, 0]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cut=st.integers(min_value=0, max_value=4000),
    inserted=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=20),
            st.sampled_from(
                [
                    "<<<<<<< HEAD",
                    "=======",
                    ">>>>>>> b",
                    "{",
                    "}",
                    "{]",
                    '"baseline": "x",',
                    '"format": 2,',
                    '"format": "3",',
                    '{"t": 1}',
                    "",
                    ",",
                    '{"a": [}',
                ]
            ),
        ),
        max_size=6,
    ),
)
def test_any_cut_or_stray_line_is_runs_or_one_warning(
    hist: Path, cut: int, inserted: list[tuple[int, str]]
) -> None:
    lines = encode_history([run(minutes=3), run(minutes=2), run(minutes=1)]).decode().split("\n")
    for at, text in inserted:
        lines.insert(min(at, len(lines)), text)
    hist.write_text("\n".join(lines)[: cut or None], encoding="utf-8")
    warnings: list[str] = []
    try:
        runs = load_history(hist, warnings=warnings)
    except GrooveError as exc:
        # the one refusal: a stray line that leaves the file declaring a format this
        # version does not know (it is left as it is, never rewritten older)
        assert "was written by a newer pytest-groove" in str(exc)
        assert any(text == '"format": "3",' for _, text in inserted)
        return
    # every run read is one of those written, each once, newest first
    assert set(stamps(runs)) <= {1, 2, 3} and stamps(runs) == sorted(
        set(stamps(runs)), reverse=True
    )
    assert len(warnings) <= 1
