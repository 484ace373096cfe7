"""A pytest plugin for ``bench_speed.py --only xdist``: each pytest process (the
controller and every xdist worker) appends its own peak RSS to the file named by
``GROOVE_BENCH_PEAKS`` when it exits, one ``<role> <MiB>`` line each."""

from __future__ import annotations

import atexit
import os
import resource

PEAKS_ENV = "GROOVE_BENCH_PEAKS"


def _write_peak() -> None:
    path = os.environ.get(PEAKS_ENV)
    if not path:
        return
    role = os.environ.get("PYTEST_XDIST_WORKER", "main")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(f"{role} {peak:.0f}\n")


atexit.register(_write_peak)
