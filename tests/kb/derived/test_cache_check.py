"""The indexer's check of the derived files: damage is removed, another writer's work
is not.

Two checkouts may share one ``--index-dir``: one replaces a derived file, then its
seal, a moment apart.  A check that reads the pair between the two renames sees a
file its seal does not vouch for; that is another writer at work, not damage.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_groove.files.seal import seal_path, write_sealed
from pytest_groove.kb.derived import cache_check
from pytest_groove.kb.derived.cache_check import check_caches, remove_caches
from pytest_groove.kb.derived.phrase_scores import CACHE_PREFIX

#: one derived file's name (a phrase scores file's)
CACHE_NAME = f"{CACHE_PREFIX}0123456789abcdef-1.npz"


def _sealed(folder: Path, data: bytes) -> Path:
    path = folder / CACHE_NAME
    write_sealed(path, lambda handle: handle.write(data))
    return path


def _replaced_unsealed(path: Path, data: bytes) -> None:
    """What a writer's first rename leaves: new bytes, the old file's seal."""
    tmp = path.with_name(path.name + ".other.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def test_a_file_another_writer_is_replacing_is_judged_again_not_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _sealed(tmp_path, b'{"old": 1}')
    _replaced_unsealed(path, b'{"new": 2}')
    waits: list[float] = []

    def the_other_writer_seals_it_meanwhile(seconds: float) -> None:
        # the check waits: the other checkout finishes its write (file, then seal)
        waits.append(seconds)
        if len(waits) == 1:
            write_sealed(path, lambda handle: handle.write(b'{"new": 2}'))

    monkeypatch.setattr(cache_check.time, "sleep", the_other_writer_seals_it_meanwhile)
    assert check_caches(tmp_path) == []
    assert path.read_bytes() == b'{"new": 2}' and seal_path(path).exists()
    assert waits == [cache_check.SETTLE_SECONDS[0]]  # judged again once, then trusted


def test_a_file_its_seal_does_not_vouch_for_and_nobody_replaces_is_damage(
    tmp_path: Path,
) -> None:
    path = _sealed(tmp_path, b'{"old": 1}')
    _replaced_unsealed(path, b'{"new": 2}')
    (warning,) = check_caches(tmp_path)
    assert "is damaged" in warning and CACHE_NAME in warning
    assert not path.exists() and not seal_path(path).exists()


#: what earlier versions kept beside index.db: the corpus snapshot, quote scans, note rows
RETIRED = (
    "corpus-snapshot.json",
    "quote-scan-0123456789abcdef.json",
    "notevectors-0123abcd-gen7-centred.rows.npz",
    "quote-scan-ff.json",
)


@pytest.mark.parametrize("forced", [False, True])
def test_a_file_an_earlier_version_kept_is_removed_with_its_seal(
    tmp_path: Path, forced: bool
) -> None:
    assert all(cache_check.is_retired(name) for name in RETIRED)
    for name in RETIRED:
        write_sealed(tmp_path / name, lambda handle: handle.write(b"{}"))
    (tmp_path / RETIRED[-1]).unlink()  # a seal whose file is gone
    kept = _sealed(tmp_path, b"phrase scores")
    if forced:
        remove_caches(tmp_path)
    else:
        assert check_caches(tmp_path) == []  # no warning: nothing was damaged
    for name in RETIRED:
        assert not (tmp_path / name).exists() and not seal_path(tmp_path / name).exists()
    assert kept.exists() is not forced


def test_only_the_retired_names_are_retired() -> None:
    for name in ("index.db", "quote-scan-1.json.2.tmp", "quote-scan-1.npz", "phrases-1.npz"):
        assert not cache_check.is_retired(name), name
