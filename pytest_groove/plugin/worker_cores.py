"""An xdist worker's share of the machine's cores for the engine's OpenMP threads.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os


def share_cores_between_workers() -> None:
    """Give each xdist worker its share of the cores for OpenMP (unless the user chose).

    The embedding engine runs OpenMP threads; N workers each starting one thread per
    core oversubscribe the machine and spin against each other (measured on 2 cores,
    ``-n 2`` over the example KB: 5.5 s with the default, 1.9 s with one thread per
    worker).  OpenMP reads the variable when the engine library loads, which happens
    at the worker's first search, just after this (called then, not at start-up, so a
    worker that runs no golden query leaves its tests' environment as it found it).
    """
    if "OMP_NUM_THREADS" in os.environ:
        return
    try:
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    except ValueError:
        return
    cores = os.cpu_count() or 1
    os.environ["OMP_NUM_THREADS"] = str(max(1, cores // max(1, workers)))
