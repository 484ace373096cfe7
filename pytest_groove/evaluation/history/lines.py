"""Reading a history file line by line, when it is not JSON as a whole.

The history is written one run per line (:mod:`.history_format`), so the two ways a
committed file stops being JSON leave whole runs on lines of their own:

- a merge that conflicted: git puts both branches' lines between its ``<<<<<<<``,
  ``=======`` and ``>>>>>>>`` lines (``|||||||`` too in the ``diff3`` style);
- a file cut off partway (a full disk on another tool's write, a bad copy);
- bytes that are not UTF-8 (a bad copy, an editor saving in another encoding): the
  text is decoded with each such byte kept as a lone surrogate
  (``surrogateescape``), and only the lines holding one are lost.

:func:`scan_lines` finds, on each line, a run's JSON object, a header line
(``"format"``, ``"baseline"``) or a conflict marker; what the runs mean is left to
:mod:`.history_format`.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from pytest_groove.files.merge_conflicts import is_conflict_marker

#: the header lines of the layout the history is written in
_FORMAT_LINE = re.compile(r'^"format"\s*:\s*(\d+)\s*,?$')
#: digits of a format number read as a number; a longer one is no format this or any
#: later version writes (and ``int`` refuses more than 4,300 digits)
_FORMAT_DIGITS = 18


def format_number(digits: str) -> int | str:
    """A format header's number, or (too long to be one) how long it is."""
    if len(digits) <= _FORMAT_DIGITS:
        return int(digits)
    return f"a number of {len(digits):,} digits"


_BASELINE_LINE = re.compile(r'^"baseline"\s*:\s*("(?:[^"\\]|\\.)*")\s*,?$')
#: a byte that was not UTF-8, as ``surrogateescape`` decoding keeps it
_UNDECODED_BYTE = re.compile("[\udc80-\udcff]")


@dataclass
class LineScan:
    """What the lines of a file that is not JSON as a whole hold."""

    #: (``line N``, the JSON object on it) for each line holding one
    raw_runs: list[tuple[str, Any]] = field(default_factory=list)
    #: why each line that starts like a run holds no whole JSON object
    broken: list[str] = field(default_factory=list)
    #: the numbers of the lines that are merge conflict markers
    conflict_lines: list[int] = field(default_factory=list)
    #: each ``"format"`` header value, and each ``"baseline"`` marker, in file order
    #: each header's format: a number, or how long a number too long to read is
    formats: list[int | str] = field(default_factory=list)
    baselines: list[str] = field(default_factory=list)


def scan_lines(text: str) -> LineScan:
    """Every run, header and conflict marker on a line of its own in ``text``."""
    scan = LineScan()
    for number, line in enumerate(text.splitlines(), 1):
        if is_conflict_marker(line):
            scan.conflict_lines.append(number)
            continue
        if _UNDECODED_BYTE.search(line) is not None:
            if line.strip().removesuffix(",").rstrip().startswith("{"):
                scan.broken.append(f"line {number}: not UTF-8 text")
            continue  # a header line with such a byte is no header either
        stripped = line.strip()
        header = _FORMAT_LINE.match(stripped)
        if header:
            scan.formats.append(format_number(header.group(1)))
            continue
        marker = _BASELINE_LINE.match(stripped)
        if marker:
            with contextlib.suppress(ValueError):  # an unreadable marker freezes nothing
                scan.baselines.append(str(json.loads(marker.group(1))))
            continue
        candidate = stripped.removesuffix(",").rstrip()
        if not candidate.startswith("{") or candidate in ("{", "{}"):
            continue  # the file's own braces, or no run
        try:
            raw = json.loads(candidate)
        except (ValueError, RecursionError):
            scan.broken.append(f"line {number}: not a whole JSON object (cut off?)")
            continue
        if isinstance(raw, dict):
            scan.raw_runs.append((f"line {number}", raw))
    return scan
