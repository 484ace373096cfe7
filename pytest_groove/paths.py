"""Resolving user-given paths without a traceback (stdlib only: both doors import it)."""

from __future__ import annotations

from pathlib import Path

from pytest_groove.errors import GrooveError


def resolve_path(path: Path, what: str, flags: str) -> Path:
    """``path`` made absolute with symlinks followed; a symlink loop is one clear error.

    ``what`` names the path in the message ("knowledge base", "golden file") and
    ``flags`` the option(s) that set it.  Python before 3.13 raises ``RuntimeError``
    for a loop, later versions ``OSError``.
    """
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        raise GrooveError(
            f"{what} {path} cannot be resolved (a symlink loop?); point {flags} at a real "
            "file or folder"
        ) from None
