"""Moments as the history file and the reports write them (RFC 3339, UTC).

Files, the JSON report, the text and HTML reports, messages and ``groove history`` all
write one spelling: ``Z`` with 0, 3 or 6 fractional digits (:func:`format_timestamp`,
:func:`display_timestamp`), so a moment copied from any of them names the same run; any
RFC 3339 offset with up to 9 fractional digits is read back as UTC
(:func:`parse_timestamp`).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from pytest_groove.shapes import read_str, shape_error

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


def now_utc() -> datetime:
    return datetime.now(UTC)


def format_timestamp(moment: datetime, *, zulu: bool = True) -> str:
    """RFC 3339 in UTC with 0, 3 or 6 fractional digits; ``Z`` or ``+00:00`` suffix."""
    moment = moment.astimezone(UTC)
    # not strftime: %Y does not zero-pad years below 1000 on every platform
    text = (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )
    micro = moment.microsecond
    if micro:
        text += f".{micro // 1000:03d}" if micro % 1000 == 0 else f".{micro:06d}"
    return text + ("Z" if zulu else "+00:00")


def display_timestamp(moment: datetime) -> str:
    """A moment as people read it (report banners, stderr messages): the same ``Z``
    spelling the history, the JSON report and ``groove history`` write, so the text
    a user copies from a report is the one ``--baseline-run`` and ``history freeze``
    take, and two spellings of one moment never meet on a screen.
    """
    return format_timestamp(moment)


def parse_timestamp(text: Any, path: str = "timestamp") -> datetime:
    """Read an RFC 3339 timestamp (any offset, up to 9 fractional digits) as UTC."""
    match = _RFC3339.fullmatch(read_str(text, path))
    if match is None:
        raise shape_error(path, f"{text!r} is not an RFC 3339 timestamp")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction = (match.group(7) or "").ljust(6, "0")[:6]
    offset = timedelta(0)
    if match.group(9):
        offset = timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
        if match.group(9) == "-":
            offset = -offset
    try:
        moment = datetime(
            year,
            month,
            day,
            hour,
            minute,
            min(second, 59),
            int(fraction),
            tzinfo=timezone(offset),
        )
        return moment.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise shape_error(path, f"{text!r} is not a valid date/time ({exc})") from None
