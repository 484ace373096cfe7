"""The names ``[eval] metrics`` and ``--groove-metrics`` take (standard library only).

The default metrics (recall, MRR and nDCG at each k) are always measured; the names here add
the optional ones.  Each is the key of its kind in :mod:`.metric_table`.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_groove.shapes import ShapeError, read_items, read_str

#: the optional metrics, in report order (metric table keys)
OPTIONAL_METRICS = ("precision", "hit_rate", "map", "r_precision")
#: the default metrics: accepted in the list (they are always measured)
DEFAULT_METRICS = ("recall", "mrr", "ndcg")
#: other spellings of an optional metric (after lower-casing and ``-`` -> ``_``)
_ALIASES = {"success": "hit_rate", "p": "precision", "rprec": "r_precision"}


def metric_names_hint() -> str:
    return ", ".join(OPTIONAL_METRICS)


def parse_metric_names(names: Iterable[str], where: str) -> tuple[str, ...]:
    """The optional metrics ``names`` ask for, in report order; ValueError names ``where``.

    Case and ``-`` / ``_`` do not matter (``hit-rate``, ``R-Precision``); ``success``
    is ``hit_rate``.  The default metrics may be listed too and change nothing.
    """
    chosen: set[str] = set()
    for raw in names:
        name = raw.strip().lower().replace("-", "_")
        name = _ALIASES.get(name, name)
        if name in DEFAULT_METRICS:
            continue
        if name not in OPTIONAL_METRICS:
            raise ValueError(
                f"{where}: unknown metric {raw.strip()!r}; choose from {metric_names_hint()} "
                f"({', '.join(DEFAULT_METRICS)} are always measured)"
            )
        chosen.add(name)
    return tuple(name for name in OPTIONAL_METRICS if name in chosen)


def read_metric_names(value: Any, path: str) -> tuple[str, ...]:
    """``[eval] metrics``: a list of names :func:`parse_metric_names` takes."""
    expected = f"a list of metric names out of {metric_names_hint()}"
    try:
        return parse_metric_names(read_items(value, path, read_str), path)
    except ValueError:  # a ShapeError too
        raise ShapeError(path, path=path, expected=expected, value=value) from None
