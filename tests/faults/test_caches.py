"""Damaged derived files of the index folder: found, rebuilt from index.db, never used.

Every file beside ``index.db`` (vector caches, their means and states, the
word-posting segments, the phrase scores, and the seals of them all) is damaged in
place -- emptied, cut to half, a block zeroed, bytes flipped -- and the real
``groove`` command (in-process) or ``pytest --groove-kb`` must give the metrics of the
undamaged index, exit as it did, print no traceback, and name the damaged file in one
warning line.  Hash embedder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE_KB, KB_EVAL, KB_EVAL_GOLDEN
from tests.faults.test_plugin import DOCS, GOLDEN
from tests.helpers.cache_damage import (
    DAMAGE,
    HASH,
    assert_one_warning_naming,
    copy_kb,
    damage,
    derived_files,
    eval_json,
    evaluated_example,
    index_dir,
    measured,
    warnings_of,
)
from tests.helpers.cli_invoke import invoke

pytest_plugins = ["pytester"]


@pytest.fixture
def example(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The example KB, evaluated once (every derived file written) and what it measured."""
    return evaluated_example(tmp_path)


# ----------------------------------------------------------- the reviewer's reproductions


def test_a_zeroed_block_in_the_vector_cache_is_rebuilt_not_measured(tmp_path: Path) -> None:
    kb = copy_kb(EXAMPLE_KB, tmp_path / "kb")
    first, before = eval_json(kb)
    assert first.returncode == 0, first.stderr
    (cache,) = index_dir(kb).glob("vectors-*.faiss")
    assert damage(cache, "zeroed")
    run, report = eval_json(kb, "--fail-on-regression")
    # no false regression: the metrics of the undamaged index, recorded as such
    assert run.returncode == 0, run.stdout + run.stderr
    assert measured(report) == measured(before)
    assert report["recorded"] and report["diff"] is not None
    assert_one_warning_naming(run, cache)
    # repaired for good: the next run trusts the rebuilt file and says nothing
    again, report = eval_json(kb, "--fail-on-regression")
    assert again.returncode == 0 and warnings_of(again) == [], again.stderr
    assert measured(report) == measured(before)


@pytest.mark.parametrize("how", ["zeroed", "flipped"])
def test_groove_index_repairs_a_damaged_vector_cache(
    example: tuple[Path, dict[str, Any]], how: str
) -> None:
    kb, before = example
    (cache,) = index_dir(kb).glob("vectors-*.faiss")
    pristine = cache.read_bytes()
    assert damage(cache, how, seed=3)
    run = invoke("index", "--kb-path", kb, *HASH)
    assert run.returncode == 0, run.stderr
    assert_one_warning_naming(run, cache)
    assert cache.read_bytes() == pristine  # built again, byte for byte
    again, report = eval_json(kb, "--no-history")
    assert again.returncode == 0 and warnings_of(again) == [], again.stderr
    assert measured(report) == before


def test_index_force_reads_no_old_cache(
    example: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb, before = example
    folder = index_dir(kb)
    held = tmp_path / "held"  # a second name for each old file: its inode is never reused
    held.mkdir()
    old: set[tuple[int, int]] = set()
    for number, path in enumerate(derived_files(folder)):
        damage(path, "flipped", seed=number)
        os.link(path, held / path.name)
        old.add((path.stat().st_dev, path.stat().st_ino))
    opened: list[tuple[int, int]] = []
    real_open = os.open

    def spy(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = real_open(path, flags, *args, **kwargs)
        info = os.fstat(fd)
        opened.append((info.st_dev, info.st_ino))
        return fd

    monkeypatch.setattr(os, "open", spy)
    run = invoke("index", "--kb-path", kb, *HASH, "--force")
    monkeypatch.undo()
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert warnings_of(run) == [], run.stderr  # nothing was read, so nothing was damaged
    assert opened and not old & set(opened), "index --force opened an old cache"
    again, report = eval_json(kb, "--no-history")
    assert again.returncode == 0 and warnings_of(again) == [], again.stderr
    assert measured(report) == before


# ------------------------------------------------------------ every derived file, any way


def check_each_file(kb: Path, before: dict[str, Any], hows: list[str], *extra: str) -> int:
    """Damage each derived file of ``kb``'s index folder in turn (the ``i``-th with
    ``hows[i % len(hows)]``), evaluate, and compare with the undamaged run; returns how
    many files were damaged."""
    folder = index_dir(kb)
    names = [p.name for p in derived_files(folder)]
    count = 0
    for number, name in enumerate(names):
        path = folder / name
        if not path.exists():  # a family member removed with an earlier one
            eval_json(kb, "--no-history", *extra)
            continue
        changed = damage(path, hows[number % len(hows)], seed=number)
        run, report = eval_json(kb, "--no-history", *extra)
        assert run.returncode == 0, f"{name}: {run.stderr}"
        assert measured(report) == before, f"{name} damaged changed what was measured"
        if changed:
            assert_one_warning_naming(run, path)
            count += 1
        else:
            assert warnings_of(run) == [], run.stderr
    return count


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_each_derived_file_damaged_gives_the_undamaged_metrics(
    example: tuple[Path, dict[str, Any]], how: str
) -> None:
    kb, before = example
    names = {p.name.split("-")[0].split(".")[0] for p in derived_files(index_dir(kb))}
    assert {"vectors", "phrases", "words"} <= names
    assert any(p.name.endswith(".state.npz") for p in derived_files(index_dir(kb)))
    # the files and seals of the vector cache, its state, the phrase scores and the
    # word-posting segments (the quote scans and the note rows are rows of index.db)
    assert check_each_file(kb, before, [how]) >= 7


def test_a_damaged_means_file_is_never_read_as_not_centred(tmp_path: Path) -> None:
    """kb-eval is bilingual enough to be language-centred: its cache has a means file."""
    kb = copy_kb(KB_EVAL, tmp_path / "kb")
    golden = ("--golden", str(KB_EVAL_GOLDEN))
    run, report = eval_json(kb, "--no-history", *golden)
    assert run.returncode == 0, run.stderr
    (means,) = index_dir(kb).glob("vectors-*-centred.npz")
    for number, how in enumerate(sorted(DAMAGE)):
        assert damage(means, how, seed=number)
        again, got = eval_json(kb, "--no-history", *golden)
        assert again.returncode == 0, again.stderr
        assert measured(got) == measured(report)
        assert_one_warning_naming(again, means)
        (means,) = index_dir(kb).glob("vectors-*-centred.npz")


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["example", "kb-eval"])
def test_every_derived_file_damaged_every_way(tmp_path: Path, corpus: str) -> None:
    source, golden = (EXAMPLE_KB, ()) if corpus == "example" else (KB_EVAL, ("--golden",))
    extra = (*golden, str(KB_EVAL_GOLDEN)) if golden else ()
    kb = copy_kb(source, tmp_path / "kb")
    run, report = eval_json(kb, "--no-history", *extra)
    assert run.returncode == 0, run.stderr
    for how in sorted(DAMAGE):
        check_each_file(kb, measured(report), [how], *extra)


@pytest.fixture(scope="module")
def fuzzed_kb(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    kb = copy_kb(EXAMPLE_KB, tmp_path_factory.mktemp("fuzz") / "kb")
    run, report = eval_json(kb)
    assert run.returncode == 0, run.stderr
    return kb, measured(report)


def _fuzz(kb: Path, before: dict[str, Any], picks: list[tuple[int, str, int]]) -> None:
    """Damage several derived files at once, then run the gate over the history."""
    files = derived_files(index_dir(kb))
    chosen = {files[pick % len(files)]: (how, seed) for pick, how, seed in picks}
    changed = [path for path, (how, seed) in chosen.items() if damage(path, how, seed)]
    run, report = eval_json(kb, "--fail-on-regression")
    assert run.returncode == 0, run.stdout + run.stderr
    assert measured(report) == before
    lines = warnings_of(run)
    assert len(lines) <= len(changed), run.stderr
    for line in lines:
        assert "damaged" in line and any(path.name in line for path in changed), line


_PICKS = st.lists(
    st.tuples(st.integers(0, 10**6), st.sampled_from(sorted(DAMAGE)), st.integers(0, 10**6)),
    min_size=1,
    max_size=4,
)


def _generated_damage(count: int) -> Callable[[tuple[Path, dict[str, Any]]], None]:
    """The property of :func:`_fuzz` over ``count`` generated damages."""

    @settings(max_examples=count, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(picks=_PICKS)
    def check(fuzzed_kb: tuple[Path, dict[str, Any]], picks: list[tuple[int, str, int]]) -> None:
        _fuzz(*fuzzed_kb, picks)

    return check


test_generated_damage_never_moves_the_gate = _generated_damage(8)
test_much_generated_damage_never_moves_the_gate = pytest.mark.slow(_generated_damage(300))


# ------------------------------------------------------------------- the pytest door

# the two-note KB of the pytest door's other fault tests


@pytest.mark.parametrize(
    ("target", "how", "dist"),
    [
        ("vectors-*.faiss", "empty", ()),
        ("vectors-*.faiss", "zeroed", ()),
        # workers starting take seconds: slow
        pytest.param("vectors-*.faiss", "half", ("-n", "2"), marks=pytest.mark.slow),
    ],
    ids=["vectors-empty", "vectors-zeroed", "vectors-half-xdist"],
)
def test_under_pytest_a_damaged_cache_is_rebuilt_and_the_session_passes(
    pytester: pytest.Pytester, target: str, how: str, dist: tuple[str, ...]
) -> None:
    kb = pytester.path / "kb"
    kb.mkdir()
    for name, text in DOCS.items():
        (kb / name).write_text(text, encoding="utf-8")
    (kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    args = ("--groove-kb", "kb", "--groove-model", "hash", "--groove-fail-on-regression")
    first = pytester.runpytest(*args)
    assert first.ret == pytest.ExitCode.OK, first.stdout.str()
    (path,) = index_dir(kb).glob(target)
    assert damage(path, how)
    result = pytester.runpytest(*args, *dist)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK, output
    assert "INTERNALERROR" not in output and "Traceback" not in output
    warned = [line for line in output.splitlines() if "warning:" in line]
    assert len(warned) == 1 and path.name in warned[0], output
    history = json.loads((kb / ".groove-eval-history.json").read_text(encoding="utf-8"))
    first_run, last_run = history["runs"][0], history["runs"][-1]
    assert len(history["runs"]) == 2 and last_run["aggregate"] == first_run["aggregate"]
