"""What a run costs beyond its queries: each target beside its peer, in the same run.

Usage::

    python benchmarks/bench_eval_overhead.py [--load N] [--docs 1000,10000] [--repeat 3]
                                             [--only fixed,edit,pytest] [--keep DIR]
                                             [--queries N]

Every figure is a ratio of two whole-process commands timed interleaved (``--repeat``
rounds: the best of each side, or for the edit the median pair), so a busy machine
moves both sides alike:

``--queries N`` gives the ``fixed`` and ``edit`` figures a golden set of N queries
(``bench_scale.py``'s mix of query shapes, as ``bench_speed.py``'s eval figures use)
in place of the one query; the edit's target is set with ``--queries 100``.

* ``fixed``: ``groove eval`` of one golden query on an unchanged, warm index (the
  indexer's no-op pass included) at each ``--docs`` size (10 chunks a document,
  ``bench_scale.py``'s generator): the largest against the smallest.  Target: 100k
  chunks <= 2.5x 10k.
* ``edit``: at the largest size, ``groove eval`` right after appending one line to
  one file (the indexer re-embeds that file; the vector caches are updated, not
  rebuilt) against the no-op eval right after it, in time (the median of the rounds'
  ratios, each round's pair run back to back; beside it the CPU time's, which a busy
  machine moves less) and peak RSS (the largest of each side).  Targets <= 1.2x and
  <= 1.15x.
* ``pytest``: ``pytest --groove-kb`` against ``groove eval`` on ``tests/corpora/kb-eval``
  with the default model and ``PYTHONDONTWRITEBYTECODE=1``, wall and CPU time, in a
  virtualenv holding what the README's install holds (the package as a wheel, not
  editable, and its runtime requirements: no other pytest plugin; see
  :func:`readme_python`), the golden file outside this repository.  Target <= 1.2x
  (the best of each side, and the median of the rounds' pytest/groove ratios).
  Beside it, each door's floor in the same rounds (an empty ``pytest -q``, a bare
  interpreter) and what each door adds above its floor: the plugin's own share.

``--load N`` starts N CPU-bound neighbour processes for the whole run.  Figures, not
tests: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import generate_kb
from bench_speed import (
    KB_EVAL,
    ROOT,
    Report,
    eval_command,
    eval_queries,
    neighbours,
    run_child,
    run_child_cpu,
    write_golden,
)

from pytest_groove.engine.builtin import run_indexer
from pytest_groove.settings.config import IndexSettings, Settings

GOLDEN_KB_EVAL = ROOT / "tests" / "corpora" / "kb-eval-golden.yml"


def prepared_kb(tmp: Path, docs: int, queries: int = 1) -> tuple[Path, Path]:
    """A generated KB of ``docs`` documents, indexed, and a golden file of ``queries``
    queries (one: the fixed query; more: ``bench_scale.py``'s mix of shapes)."""
    kb = tmp / f"hash-{docs}"
    if not kb.is_dir():
        generate_kb(kb, docs, 10, 7)
    run_indexer(kb, Settings(index=IndexSettings(model="hash")), progress=False)
    expected = sorted(p.relative_to(kb).as_posix() for p in kb.rglob("*.md"))[0]
    if queries == 1:
        golden = tmp / f"golden-one-{docs}.yml"
        write_golden(golden, ["retry budget for the replica lease"], expected)
    else:
        golden = tmp / f"golden-{queries}-{docs}.yml"
        write_golden(golden, eval_queries("scale", kb, queries, 7), expected)
    return kb, golden


def best(command: Sequence[str], repeat: int, env: dict[str, str] | None = None) -> float:
    return min(run_child(command, env)[0] for _ in range(repeat))


def golden_size(golden: Path) -> str:
    count = golden.read_text(encoding="utf-8").count("\n  - id: ")
    return "1 golden query" if count == 1 else f"{count} golden queries"


def figure_fixed(report: Report, kbs: list[tuple[int, Path, Path]], repeat: int) -> None:
    walls: dict[int, list[float]] = {docs: [] for docs, _, _ in kbs}
    for _ in range(repeat):  # interleaved
        for docs, kb, golden in kbs:
            walls[docs].append(run_child(eval_command(kb, "--golden", str(golden)))[0])
    (small, *_), (large, *_) = kbs[0], kbs[-1]
    report.add(
        f"groove eval, {golden_size(kbs[-1][2])}, no-op, {large * 10:,} vs {small * 10:,} chunks",
        f"{min(walls[large]):.2f} s",
        f"{min(walls[small]):.2f} s",
        f"{min(walls[large]) / min(walls[small]):.2f}x",
        "<= 2.5x",
    )


def figure_edit(report: Report, kb: Path, golden: Path, repeat: int) -> None:
    command = eval_command(kb, "--golden", str(golden))
    target = sorted(kb.rglob("*.md"))[len(list(kb.rglob("*.md"))) // 2]
    run_child(command)  # warm
    edited: list[tuple[float, float, float]] = []
    noop: list[tuple[float, float, float]] = []
    for round_ in range(repeat):
        with target.open("a", encoding="utf-8") as handle:
            handle.write(f"\nOne more line, round {round_}.\n")
        edited.append(run_child_cpu(command))
        noop.append(run_child_cpu(command))
    chunks = sum(1 for _ in kb.rglob("*.md")) * 10
    # each round's pair ran back to back, so a busy spell moves both of it: the median
    # of the pairs' ratios (two minimums taken apart can come from different spells)
    ratio = statistics.median(e[0] / n[0] for e, n in zip(edited, noop, strict=True))
    cpu_ratio = statistics.median(e[2] / n[2] for e, n in zip(edited, noop, strict=True))
    wall_e = statistics.median(e[0] for e in edited)
    wall_n = statistics.median(n[0] for n in noop)
    rss_e, rss_n = max(e[1] for e in edited), max(n[1] for n in noop)
    report.add(
        f"groove eval after a one-line edit vs no-op, {chunks:,} chunks, "
        f"{golden_size(golden)}: time (median pair)",
        f"{wall_e:.2f} s",
        f"{wall_n:.2f} s",
        f"{ratio:.2f}x",
        "<= 1.2x",
    )
    report.add(
        "  the same: CPU time (median pair)",
        f"{statistics.median(e[2] for e in edited):.2f} s",
        f"{statistics.median(n[2] for n in noop):.2f} s",
        f"{cpu_ratio:.2f}x",
        "",
    )
    report.add(
        "  the same: peak RSS",
        f"{rss_e:.0f} MiB",
        f"{rss_n:.0f} MiB",
        f"{rss_e / rss_n:.2f}x",
        "<= 1.15x",
    )


def readme_python(tmp: Path, extra: Sequence[str] = ()) -> Path:
    """The interpreter of a virtualenv holding what the README's ``pip install
    pytest-groove`` installs and nothing else: no test extra, so no other pytest plugin
    -- but the distributions named in ``extra`` (``pytest-xdist``) and what they need.

    The package is installed from this checkout as a wheel (``pip install --target``,
    bytecode compiled as pip compiles it); its runtime requirements (``pyproject.toml``'s
    ``dependencies``, and theirs) are linked in from this environment, so no network.
    """
    import tomllib
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement

    env = tmp / ("readme-env" + "".join(f"+{name}" for name in extra))
    shutil.rmtree(env, ignore_errors=True)  # a kept one may hold an older wheel
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    site = next((env / "lib").glob("python*/site-packages"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(site),
            str(ROOT),
        ],
        check=True,
    )
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [Requirement(r) for r in [*project["dependencies"], *extra]]
    seen: set[str] = set()
    while wanted:
        requirement = wanted.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        try:
            dist = distribution(requirement.name)
        except PackageNotFoundError:
            continue
        if dist.metadata["Name"].lower() in seen:
            continue
        seen.add(dist.metadata["Name"].lower())
        wanted += [Requirement(r) for r in dist.requires or []]
        for top in {f.parts[0] for f in dist.files or [] if f.parts and f.parts[0] != ".."}:
            link = site / top
            if not link.exists() and not top.endswith(".pth"):
                link.symlink_to(Path(str(dist.locate_file(top))))
    return env / "bin" / "python"


def figure_pytest(report: Report, tmp: Path, repeat: int) -> None:
    python = str(readme_python(tmp))
    kb = tmp / "kb-eval"
    shutil.copytree(KB_EVAL, kb, ignore=shutil.ignore_patterns(".groove*"))
    # the golden file beside the KB, as a team keeps it: one inside this repository
    # would make pytest load the repository's own conftest.py (hypothesis and all)
    golden = tmp / "kb-eval-golden.yml"
    shutil.copyfile(GOLDEN_KB_EVAL, golden)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # nor the current folder on sys.path (a checkout's sources would shadow the install)
    env["PYTHONSAFEPATH"] = "1"
    groove = [
        python,
        "-c",
        "import sys; from pytest_groove.cli import main; sys.exit(main())",
        "eval",
        "--kb-path",
        str(kb),
        "--golden",
        str(golden),
        "--no-history",
    ]
    plugin = [
        python,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(tmp),
        "--groove-kb",
        str(kb),
        "--groove-golden",
        str(golden),
        "--groove-no-history",
    ]
    # the floors of each door: pytest collecting nothing in an empty folder (exit 5),
    # and the bare interpreter
    empty = tmp / "empty"
    empty.mkdir()
    empty_pytest = [
        *(python, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
        *("--rootdir", str(empty), str(empty)),
    ]
    bare = [python, "-c", "pass"]
    run_child(groove, env)  # index once
    commands = {"groove": groove, "pytest": plugin, "empty": empty_pytest, "bare": bare}
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            wall, _, cpu = run_child_cpu(command, env, ok=(0, 1, 5))
            walls[name].append(wall)
            cpus[name].append(cpu)
    report.add(
        "pytest --groove-kb vs groove eval, kb-eval, e5, PYTHONDONTWRITEBYTECODE=1: wall",
        f"{min(walls['pytest']):.2f} s",
        f"{min(walls['groove']):.2f} s",
        f"{min(walls['pytest']) / min(walls['groove']):.2f}x",
        "<= 1.2x",
    )
    # each round's two commands ran back to back: their ratio, round by round, moves
    # less with a machine whose speed drifts than the two sides' best times do
    pairs = [p / g for p, g in zip(walls["pytest"], walls["groove"], strict=True)]
    report.add(
        "  the same: median of the rounds' ratios (lowest-highest)",
        "",
        "",
        f"{statistics.median(pairs):.2f}x ({min(pairs):.2f}-{max(pairs):.2f}x)",
        "<= 1.2x",
    )
    report.add(
        "  the same: CPU time",
        f"{min(cpus['pytest']):.2f} s",
        f"{min(cpus['groove']):.2f} s",
        f"{min(cpus['pytest']) / min(cpus['groove']):.2f}x",
        "<= 1.2x",
    )
    # what each door adds to its floor: the plugin's own share of a pytest run
    best = {name: min(values) for name, values in walls.items()}
    report.add(
        "  each door above its floor (pytest door - empty pytest run, groove eval - bare python)",
        f"{best['pytest'] - best['empty']:.2f} s",
        f"{best['groove'] - best['bare']:.2f} s",
        f"{(best['pytest'] - best['empty']) / (best['groove'] - best['bare']):.2f}x",
        "",
    )
    report.add(
        "  the floors: empty `pytest -q` / bare interpreter",
        f"{best['empty']:.2f} s",
        f"{best['bare']:.2f} s",
        "",
        "",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=int, default=0, help="CPU-bound neighbour processes")
    parser.add_argument("--docs", default="1000,10000", help="document counts (10 chunks each)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="fixed,edit,pytest")
    parser.add_argument("--keep", type=Path, help="keep the generated KBs here for the next run")
    parser.add_argument("--queries", type=int, default=1, help="golden queries per eval")
    args = parser.parse_args()
    groups = {g.strip() for g in args.only.split(",") if g.strip()}
    sizes = sorted(int(d) for d in args.docs.split(","))
    report = Report(args.load)
    with tempfile.TemporaryDirectory(prefix="groove-overhead-") as name, neighbours(args.load):
        tmp = Path(name)
        kept = args.keep or tmp
        kept.mkdir(parents=True, exist_ok=True)
        kbs = (
            [(docs, *prepared_kb(kept, docs, args.queries)) for docs in sizes]
            if groups - {"pytest"}
            else []
        )
        if "fixed" in groups and len(kbs) > 1:
            figure_fixed(report, kbs, args.repeat)
        if "edit" in groups and kbs:
            figure_edit(report, kbs[-1][1], kbs[-1][2], args.repeat)
        if "pytest" in groups:
            figure_pytest(report, tmp, args.repeat)
    report.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
