"""Resolving user-given paths without a traceback (stdlib only: both doors import it).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from pathlib import Path

from pytest_groove.errors import GrooveError


def resolve_path(path: Path, what: str, flags: str) -> Path:
    """``path`` made absolute with symlinks followed; a symlink loop is one clear error.

    ``what`` names the path in the message ("knowledge base", "golden file") and
    ``flags`` the option(s) that set it.  Python before 3.13 raises ``RuntimeError``
    for a loop; 3.13 returns the path where the loop starts, which is still a link
    (a fully resolved path never is: a dangling link resolves to its missing target).
    """
    try:
        resolved = path.resolve()
        looped = resolved.is_symlink()
    except (OSError, RuntimeError):
        looped = True
    if looped:
        raise GrooveError(
            f"{what} {path} cannot be resolved (a symlink loop?); point {flags} at a real "
            "file or folder"
        )
    return resolved
