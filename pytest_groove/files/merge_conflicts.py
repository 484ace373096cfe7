"""The lines git leaves in a file whose merge conflicted.

A committed golden file or history is merged like code; a conflict leaves both sides'
lines between ``<<<<<<<``, ``=======`` and ``>>>>>>>`` lines (``|||||||`` too in the
``diff3`` style).  Saying so beats the parser's account of the first line it could not
read, which is the line after a marker, not the marker.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: a conflict marker line (``diff3`` style included)
_MARKER = re.compile(r"^(<{7}|\|{7}|={7}|>{7})(?: |$)")


def is_conflict_marker(line: str) -> bool:
    """Whether ``line`` (without its line break) is a conflict marker."""
    return _MARKER.match(line) is not None


def conflict_marker_lines(text: str) -> list[int]:
    """The 1-based numbers of the lines of ``text`` that are conflict markers."""
    return [number for number, line in enumerate(text.splitlines(), 1) if is_conflict_marker(line)]


def has_conflict(text: str) -> bool:
    """Whether ``text`` holds a whole conflict: an opening and a closing marker."""
    lines = text.splitlines()
    return any(line.startswith("<" * 7) for line in lines) and any(
        line.startswith(">" * 7) for line in lines
    )


def line_list(numbers: Sequence[int]) -> str:
    """``line 4``, ``lines 4, 6 and 8``, ``lines 4, 6, 8, 12 and 3 more``."""
    if len(numbers) == 1:
        return f"line {numbers[0]}"
    if len(numbers) <= 4:
        return f"lines {', '.join(str(n) for n in numbers[:-1])} and {numbers[-1]}"
    return f"lines {', '.join(str(n) for n in numbers[:4])} and {len(numbers) - 4} more"
