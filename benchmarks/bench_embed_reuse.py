"""Texts embedded and time per typical edit of a KB of long notes.

    python benchmarks/bench_embed_reuse.py [--notes 30] [--model hash] [--seed 7]
        [--baseline-src DIR] [--keep DIR]

Generates a deterministic KB of ``--notes`` runbook-like notes of 20-60 ``##``
sections each (one of exactly 40), indexes it, then makes one change at a time and
re-indexes after each, as ``groove index`` does (``run_indexer``, vector caches
included):

* **edit one section** of the 40-section note (one sentence appended to its 21st);
* **reorder**: two sections of another note swap places (its opening stays);
* **move between notes**: a section leaves one note for another;
* **rename**: a note moves to another folder, bytes unchanged;
* **rename and edit**: a note moves and one of its sections is edited (one commit);
* **--force**: a rebuild of the unchanged KB.

For each it prints the texts the embedder was given (chunks and note vectors: the
embedder is wrapped and counts them), the wall time and the CPU time (user + system
of this process) of the re-index.  With ``--baseline-src DIR`` (a checkout of another
version, e.g. ``git worktree add /tmp/groove-main main``) it runs the same steps in a
subprocess importing pytest-groove from ``DIR/`` and prints both side by side.

Only public pytest-groove functions are used; no timers are asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import pytest_groove
from pytest_groove.embed.registry import get_embedder
from pytest_groove.engine.builtin import run_indexer
from pytest_groove.settings.config import IndexSettings, Settings

WORDS = [
    "rotate",
    "drain",
    "cordon",
    "upgrade",
    "replica",
    "primary",
    "failover",
    "backup",
    "restore",
    "snapshot",
    "latency",
    "quota",
    "token",
    "secret",
    "certificate",
    "ingress",
    "gateway",
    "pager",
    "escalate",
    "rollback",
    "canary",
    "deploy",
    "migration",
    "schema",
    "index",
    "vacuum",
    "checkpoint",
    "shard",
    "partition",
    "consumer",
    "producer",
    "queue",
    "retry",
    "timeout",
    "circuit",
    "breaker",
    "cache",
    "eviction",
    "warmup",
    "node",
    "pod",
    "volume",
    "mount",
    "kernel",
    "patch",
    "audit",
    "owner",
    "ticket",
    "release",
    "freeze",
    "window",
    "budget",
]


class CountingEmbedder:
    """The real embedder, counting the passages it is given and the time it takes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.passages = 0
        self.seconds = 0.0

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        started = time.perf_counter()
        try:
            return self.inner.embed_passages(texts)
        finally:
            self.passages += len(texts)
            self.seconds += time.perf_counter() - started

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)


def section_text(rng: random.Random, note: int, number: int) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 140)))
    return f"## Step {number}: {rng.choice(WORDS)} {rng.choice(WORDS)}\n\n{words}."


def generate(kb: Path, notes: int, seed: int) -> dict[str, list[str]]:
    """``notes`` notes of 20-60 sections (the first of exactly 40), written to ``kb``."""
    rng = random.Random(seed)
    made: dict[str, list[str]] = {}
    for note in range(notes):
        count = 40 if note == 0 else rng.randint(20, 60)
        rel = f"team{note % 4}/runbook-{note:03d}.md"
        made[rel] = [section_text(rng, note, s) for s in range(count)]
        write(kb, rel, made[rel])
    return made


def write(kb: Path, rel: str, sections: list[str]) -> None:
    path = kb / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    title = Path(rel).stem.replace("-", " ").title()
    path.write_text(f"# {title}\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")


def steps(kb: Path, notes: dict[str, list[str]]) -> list[tuple[str, Callable[[], bool]]]:
    """The changes, in order; each makes its edit and says whether it forces a rebuild."""
    forty, other, source, target, renamed, both = sorted(notes)[:6]

    def edit() -> bool:
        notes[forty][20] += " Check the replica lag before the failover."
        write(kb, forty, notes[forty])
        return False

    def reorder() -> bool:
        s = notes[other]
        s[5], s[15] = s[15], s[5]
        write(kb, other, s)
        return False

    def move() -> bool:
        notes[target].insert(7, notes[source].pop(9))
        write(kb, source, notes[source])
        write(kb, target, notes[target])
        return False

    def rename() -> bool:
        (kb / "moved").mkdir(exist_ok=True)
        (kb / renamed).rename(kb / "moved" / Path(renamed).name)
        return False

    def rename_and_edit() -> bool:
        sections = notes.pop(both)
        sections[11] += " Page the owner first."
        (kb / both).unlink()
        write(kb, f"moved/{Path(both).name}", sections)
        return False

    return [
        ("edit one section (40-section note)", edit),
        ("reorder two sections", reorder),
        ("move a section between notes", move),
        ("rename a note", rename),
        ("rename and edit a note", rename_and_edit),
        ("--force, nothing changed", lambda: True),
    ]


def measure(args: argparse.Namespace) -> dict[str, Any]:
    settings = Settings(index=IndexSettings(model=args.model))
    embedder = CountingEmbedder(get_embedder(args.model))
    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(args.keep or tmp) / f"kb-reuse-{args.notes}-{args.seed}"
        if kb.exists():
            shutil.rmtree(kb)
        notes = generate(kb, args.notes, args.seed)
        sections = sum(len(s) for s in notes.values())
        rows = [run_step("full index", kb, settings, embedder, force=False)]
        for name, change in steps(kb, notes):
            force = change()
            rows.append(run_step(name, kb, settings, embedder, force=force))
    return {
        "package": str(Path(pytest_groove.__file__).parent),
        "sections": sections,
        "rows": rows,
    }


def run_step(
    name: str, kb: Path, settings: Settings, embedder: CountingEmbedder, *, force: bool
) -> dict[str, Any]:
    texts, in_model = embedder.passages, embedder.seconds
    cpu, wall = os.times(), time.perf_counter()
    report = run_indexer(kb, settings, embedder=embedder, force=force, progress=False)
    wall = time.perf_counter() - wall
    after = os.times()
    return {
        "step": name,
        "texts": embedder.passages - texts,
        "chunks_embedded": report.chunks_embedded,
        "chunks_reused": getattr(report, "chunks_reused", None),
        "wall": wall,
        "cpu": (after.user - cpu.user) + (after.system - cpu.system),
        "model": embedder.seconds - in_model,
    }


def baseline(args: argparse.Namespace) -> dict[str, Any]:
    """The same steps in a subprocess importing pytest-groove from ``--baseline-src``."""
    command = [sys.executable, __file__, "--json", "--notes", str(args.notes)]
    command += ["--model", args.model, "--seed", str(args.seed)]
    env = {**os.environ, "PYTHONPATH": str(Path(args.baseline_src).resolve())}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return ""
    return f"{row['texts']:>6,} {row['wall']:7.2f} s {row['cpu']:7.2f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=30)
    parser.add_argument("--model", default="hash")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--baseline-src", help="a checkout to compare with (its package dir)")
    parser.add_argument("--keep", help="generate the KB in this folder and keep it")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args)))
        return 0
    ours = measure(args)
    theirs = baseline(args) if args.baseline_src else None
    print(
        f"KB: {args.notes} notes, {ours['sections']:,} sections (20-60 a note), "
        f"model {args.model}, seed {args.seed}"
    )
    print(f"this checkout: {ours['package']}")
    if theirs is not None:
        print(f"baseline:      {theirs['package']}")
    header = f"{'step':36} {'texts':>6} {'wall':>9} {'cpu':>9}"
    print(header + ("   " + header[37:] if theirs else ""))
    for index, row in enumerate(ours["rows"]):
        other = theirs["rows"][index] if theirs else None
        print(f"{row['step']:36} {cell(row)}" + (f"   {cell(other)}" if other else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
