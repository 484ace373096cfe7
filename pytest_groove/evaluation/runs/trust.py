"""Which stored runs can be trusted as a baseline: content digests and dates.

A history is committed next to the code, so it can be edited by hand: a baseline's
metrics set to 0 (every later run "improves"), to NaN (no comparison is ever a
regression), or a forged run with a future timestamp (always the newest).  So:

- every run is stored with ``digest``, the SHA-256 of its own JSON object (every other
  key, canonical form).  A run whose digest does not match was edited after it was
  written: it is named in a warning and never used as the baseline, and it stays
  marked (its digest is written as :data:`EDITED` from then on) so a later save does
  not launder it.  A run in this version's compact layout always has one, so one
  without is untrusted too (deleting the key is the cheapest edit of all); only a
  format-1 run, written before digests existed, is trusted without one.
- a run dated after now (beyond :data:`CLOCK_SLACK`) is named and never chosen.

The digest is no signature: anyone can recompute it.  It catches the quiet edit, not a
determined forger; the date check and ``groove history verify`` catch the rest that
can be caught without a secret.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.runs.record import RunRecord, format_timestamp, now_utc

#: the key of a stored run's digest
DIGEST_KEY = "digest"
#: written instead of a digest for a run known to have been edited
EDITED = "edited"
#: how far in the future a timestamp may be before it counts as forged (clock skew)
CLOCK_SLACK = timedelta(minutes=5)


def content_digest(obj: Mapping[str, Any]) -> str:
    """SHA-256 of a stored run's JSON object without its digest (sorted keys, compact)."""
    body = {key: value for key, value in obj.items() if key != DIGEST_KEY}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def stamp(obj: dict[str, Any], edited: bool) -> dict[str, Any]:
    """``obj`` with its digest added last (or the edited mark)."""
    obj[DIGEST_KEY] = EDITED if edited else content_digest(obj)
    return obj


def was_edited(obj: Mapping[str, Any], *, digest_required: bool = True) -> bool:
    """The stored object's digest does not match its content, or is missing where
    every run is written with one (``digest_required``: the compact layout)."""
    stored = obj.get(DIGEST_KEY)
    if stored is None:
        return digest_required
    return bool(stored != content_digest(obj))


def in_future(run: RunRecord, now: datetime | None = None) -> bool:
    return run.timestamp > (now or now_utc()) + CLOCK_SLACK


def untrusted(run: RunRecord, now: datetime | None = None) -> str | None:
    """Why ``run`` cannot be a baseline (None: it can)."""
    if run.edited:
        return "its digest is missing or does not match its content (edited after it was recorded)"
    if in_future(run, now):
        return "it is dated in the future"
    return None


def trusted_runs(runs: Sequence[RunRecord], now: datetime | None = None) -> list[RunRecord]:
    moment = now or now_utc()
    return [run for run in runs if untrusted(run, moment) is None]


def untrusted_warnings(
    runs: Sequence[RunRecord], path: Path, now: datetime | None = None
) -> list[str]:
    """One warning per run that is never used as the baseline."""
    moment = now or now_utc()
    out = []
    for run in runs:
        why = untrusted(run, moment)
        if why is not None:
            out.append(
                f"eval history {path}: the run {format_timestamp(run.timestamp)} is never used "
                f"as the baseline: {why}; `groove history verify` checks every run"
            )
    return out


def refuse_untrusted(run: RunRecord) -> None:
    """``--baseline RUN`` naming a run that cannot be trusted: one clear error."""
    why = untrusted(run)
    if why is not None:
        raise GrooveError(
            f"baseline {format_timestamp(run.timestamp)} cannot be used: {why}; name another "
            "run (`groove history verify` lists the runs that cannot be trusted)"
        )
