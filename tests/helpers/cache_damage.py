"""Damaging the derived files of an index folder, and what a run measured after.

Helpers for tests/faults/test_caches.py and tests/files/test_seal.py: each damage
keeps the file's inode (as a torn write or a stray edit would), and a run is the real
``groove`` command in-process (``cli_invoke.invoke``) with the hash embedder.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import LOCAL_STATE
from tests.helpers.cli_invoke import CliRun, invoke

HASH = ("--model", "hash")
#: what the names of the index folder's derived files (and their seals) begin with
DERIVED = ("vectors", "notevectors", "phrases-", "words-")


def index_dir(kb: Path) -> Path:
    return kb / ".groove" / "hash"


def empty(data: bytes, rng: random.Random) -> bytes:
    return b""


def half(data: bytes, rng: random.Random) -> bytes:
    return data[: len(data) // 2]


def zeroed(data: bytes, rng: random.Random) -> bytes:
    """A block of zeros over the middle of the file, as a torn write leaves."""
    start, length = len(data) // 4, max(1, len(data) // 2)
    return data[:start] + bytes(len(data[start : start + length])) + data[start + length :]


def flipped(data: bytes, rng: random.Random) -> bytes:
    """Up to 50 bytes changed at random places (never to themselves)."""
    out = bytearray(data)
    for _ in range(min(50, len(out))):
        at = rng.randrange(len(out))
        out[at] ^= rng.randrange(1, 256)
    return bytes(out)


DAMAGE: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "empty": empty,
    "half": half,
    "zeroed": zeroed,
    "flipped": flipped,
}


def damage(path: Path, how: str, seed: int = 0) -> bool:
    """Damage ``path`` in place (same inode, as a torn write or a stray edit would);
    whether its bytes changed."""
    data = path.read_bytes()
    damaged = DAMAGE[how](data, random.Random(seed))
    with path.open("r+b") as handle:  # in place: the file keeps its inode
        handle.write(damaged)
        handle.truncate(len(damaged))
    return damaged != data


def derived_files(index_dir: Path) -> list[Path]:
    """Every derived file of the index folder and every seal, in name order."""
    return sorted(
        p for p in index_dir.iterdir() if p.name.startswith(DERIVED) and p.name[-4:] != ".tmp"
    )


def eval_json(kb: Path, *extra: str) -> tuple[CliRun, dict[str, Any]]:
    run = invoke("eval", "--kb-path", kb, *HASH, "--format", "json", *extra)
    assert "Traceback" not in run.stderr, run.stderr
    return run, json.loads(run.stdout) if run.stdout.strip() else {}


#: what a run measured of each query (the rest compares it with the baseline)
_MEASURED = ("id", "query", "expected", "top_k", "metrics", "first_rank")


def measured(report: dict[str, Any]) -> dict[str, Any]:
    """What a run measured: the corpus, each query's hits (with their scores) and
    metrics, the metrics in all, the findings."""
    return {
        "corpus": report["corpus"],
        "aggregate": report["aggregate"],
        "per_query": [{key: q[key] for key in _MEASURED} for q in report["per_query"]],
        "findings": report["findings"],
    }


def warnings_of(run: CliRun) -> list[str]:
    return [line for line in run.stderr.splitlines() if "warning:" in line]


def assert_one_warning_naming(run: CliRun, path: Path) -> None:
    lines = warnings_of(run)
    assert len(lines) == 1 and path.name in lines[0], run.stderr
    assert "damaged" in lines[0] and "rebuilt from index.db" in lines[0], lines[0]


def copy_kb(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, ignore=LOCAL_STATE)
    return target


def evaluated_example(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The example KB copied into ``tmp_path``, evaluated once (every derived file
    written), and what it measured: the undamaged figures a damaged index must match."""
    from conftest import EXAMPLE_KB

    kb = copy_kb(EXAMPLE_KB, tmp_path / "kb")
    run, report = eval_json(kb, "--no-history")
    assert run.returncode == 0, run.stderr
    return kb, measured(report)
