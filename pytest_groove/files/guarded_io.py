"""Reading the files eval keeps inside the knowledge base, defensively.

The golden file and the history file both default to living inside the KB, which
may be writable by people other than the one running the evaluation.  So neither
is read by simply opening its name.  The procedure:

1. ``lstat`` the name.  "No such file" means *absent* (``None``); any other failure
   to look is an error, never "absent".  A dangling symlink exists as a name, so it
   is not absent: it goes on to be refused (for the history, "absent" would lead to
   a fresh file being renamed over the link).
2. Open the name once -- on Unix with ``O_NOFOLLOW`` (a symlink in the last
   component fails the open) and ``O_NONBLOCK`` (a named pipe cannot hang us) -- and
   decide everything from one ``fstat`` of that handle, never from the name again:
   not a regular file, more than one hard link, or larger than the cap are refusals.
3. Read at most ``cap + 1`` bytes from the same handle, so a file that grows after
   the ``fstat`` is still caught and never read past the cap.

Symlinks are refused on Unix only.  On Windows creating one needs a privilege the
attacker in this threat model does not have, and refusing reparse points there would
refuse every OneDrive/Dropbox placeholder.

Caps are inclusive: a file of exactly ``cap`` bytes is read, ``cap + 1`` is refused.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Literal

from pytest_groove.errors import GrooveError, clip_path
from pytest_groove.files.beneath import (
    NO_FOLLOW_READ_FLAGS,
    open_folder,
    open_root,
    read_at_most,
)
from pytest_groove.files.paths import unencodable_name
from pytest_groove.files.resource_limits import raise_if_limit

#: the golden file may hold at most this many bytes (a 25-query golden set is ~5.5 KB)
GOLDEN_CAP = 1 * 1024 * 1024
#: the history file may hold at most this many bytes; a history of 10 runs x 25
#: queries x 20 hits already passes 1 MiB, so it needs a much larger cap
HISTORY_CAP = 64 * 1024 * 1024

RefusalKind = Literal["not_regular", "hard_link", "too_large"]

# Errors an O_NOFOLLOW open reports for a symlink in the last component: ELOOP on
# Linux and macOS, EMLINK on FreeBSD, EFTYPE on NetBSD.
_SYMLINK_OPEN_ERRNOS = frozenset(
    code for code in (errno.ELOOP, errno.EMLINK, getattr(errno, "EFTYPE", None)) if code is not None
)

_HAS_DIR_FD = os.open in os.supports_dir_fd


class ReadRefused(GrooveError):
    """The file exists but is not something groove will read (see the module doc).

    Callers that must tell "refused" from other failures (the history loader does
    not) can catch this subclass; its message is already the complete user line.
    """

    def __init__(self, message: str, kind: RefusalKind) -> None:
        super().__init__(message)
        self.kind: RefusalKind = kind


def _os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _refuse(what: str, kind: RefusalKind, reason: str) -> ReadRefused:
    return ReadRefused(f"refusing to read the {what}: {reason}", kind)


def _not_regular(path: Path, what: str, mode: int | None = None) -> ReadRefused:
    if mode is not None and stat.S_ISDIR(mode):
        # a path naming a folder is a wrong path (a flag or setting pointing at the KB
        # or a subfolder), not a folder to replace with a file
        return _refuse(
            what,
            "not_regular",
            f"{clip_path(path)} is a folder, not a file; name the {what} itself (or move "
            "the folder out of its way)",
        )
    return _refuse(
        what,
        "not_regular",
        f"{clip_path(path)} is not a regular file (a symlink, directory, device or named pipe "
        f"is in its place); only a plain file is read here, so replace it with one.",
    )


def _hard_link(path: Path, what: str) -> ReadRefused:
    return _refuse(
        what,
        "hard_link",
        f"{clip_path(path)} has more than one name (hard link); another name may sit outside the "
        f"knowledge base, and a hard link would let a file you cannot read be read on "
        f"your behalf. Replace it with a plain copy.",
    )


#: what to do about a file over its cap, by what it is
_TOO_LARGE_FIX = {
    "eval history": (
        "no run writes a history that large: it is damaged or not a history; move it aside "
        "(the next run starts a new one) and keep the runs you need with `groove history`"
    ),
    "golden file": "split the golden set into files under the limit (--golden picks one)",
    "config file": "a groove.toml is a few lines: check that the path names the right file",
}


def _too_large(path: Path, what: str, size: int, cap: int) -> ReadRefused:
    fix = _TOO_LARGE_FIX.get(what)
    return _refuse(
        what,
        "too_large",
        f"{clip_path(path)} is {size:,} bytes, over the {cap:,} byte limit (size taken from "
        "the opened file)" + (f"; {fix}" if fix else ""),
    )


class _LinkOnTheWay(Exception):
    """A folder between the KB root and the file is a symlink (or not a folder)."""


def _open_below(path: Path, within: Path) -> int | None:
    """Open ``path`` through descriptors below ``within``, links refused on the way.

    Returns None when ``path`` is not lexically inside ``within`` or the system
    cannot open relative to a folder descriptor (then the caller opens by name).
    """
    if not _HAS_DIR_FD:
        return None
    root = Path(os.path.abspath(within))
    try:
        rel = Path(os.path.abspath(path)).relative_to(root)
    except ValueError:
        return None
    parts = rel.parts
    if len(parts) < 2:
        return None  # a direct child: O_NOFOLLOW on the name already covers it
    root_fd = open_root(root)
    try:
        folder_fd = open_folder(root_fd, root, "/".join(parts[:-1]))
    except OSError as exc:
        if exc.errno in _SYMLINK_OPEN_ERRNOS | {errno.ENOTDIR}:
            raise _LinkOnTheWay from exc
        raise
    finally:
        os.close(root_fd)
    try:
        return os.open(parts[-1], NO_FOLLOW_READ_FLAGS, dir_fd=folder_fd)
    finally:
        os.close(folder_fd)


def read_guarded(path: Path, what: str, cap: int, within: Path | None = None) -> bytes | None:
    """Return the bytes of ``path``, or ``None`` when no such name exists.

    With ``within`` (the knowledge base), a ``path`` inside it is opened one folder
    at a time below it, so a folder on the way swapped for a symlink is refused
    rather than followed.

    ``what`` names the file in messages ("golden file", "eval history").  Raises
    :class:`ReadRefused` for a symlink (Unix), a non-regular file, a hard link or a
    file over ``cap`` bytes, and :class:`GrooveError` when the file cannot be looked
    at or read.  Every message is one line naming ``path``.
    """
    if not _name_exists(path):
        return None
    fd = _open_guarded(path, what, within)
    data = _read_opened(fd, path, what, cap)  # closes fd
    if len(data) > cap:
        # The file grew between the fstat and the read.
        raise _too_large(path, what, len(data), cap)
    return data


def _name_exists(path: Path) -> bool:
    """Step 1: whether ``path`` exists as a name (a dangling symlink does); any
    failure to look other than "no such file" is an error, never "absent"."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise GrooveError(f"could not look at {clip_path(path)} ({_os_reason(exc)})") from exc
    except UnicodeEncodeError:  # a character the locale's encoding has no bytes for
        raise GrooveError(
            f"could not look at {clip_path(path)}: the path {unencodable_name()}"
        ) from None
    except ValueError:  # os.lstat's "embedded null byte"
        raise GrooveError(
            f"could not look at {clip_path(path)}: the path holds a NUL character, which no "
            "file name can"
        ) from None
    return True


def _open_guarded(path: Path, what: str, within: Path | None) -> int:
    """Step 2: open the name once, links refused (below ``within`` when inside it)."""
    try:
        below = _open_below(path, within) if within is not None else None
        return below if below is not None else os.open(path, NO_FOLLOW_READ_FLAGS)
    except _LinkOnTheWay:
        raise _refuse(
            what,
            "not_regular",
            f"a folder on the way to {clip_path(path)} inside the knowledge base is a symbolic "
            "link (or not a folder); pass the file's real path instead",
        ) from None
    except OSError as exc:
        if os.name != "nt" and exc.errno in _SYMLINK_OPEN_ERRNOS | {errno.ENOTDIR}:
            raise _not_regular(path, what) from exc
        raise_if_limit(exc, path)
        raise GrooveError(
            f"failed to read the {what}: {clip_path(path)} ({_os_reason(exc)})"
        ) from exc


def _read_opened(fd: int, path: Path, what: str, cap: int) -> bytes:
    """Steps 2-3: judge the open ``fd`` by one ``fstat`` and read at most ``cap + 1``
    bytes of it; ``fd`` is closed either way."""
    try:
        info = os.fstat(fd)
        # Order matters only for which reason is shown; it follows the reference.
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(path, what, info.st_mode)
        if info.st_nlink > 1:
            raise _hard_link(path, what)
        if info.st_size > cap:
            raise _too_large(path, what, info.st_size, cap)
        return read_at_most(fd, cap + 1)
    except OSError as exc:
        raise_if_limit(exc, path)
        raise GrooveError(
            f"failed to read the {what}: {clip_path(path)} ({_os_reason(exc)})"
        ) from exc
    finally:
        os.close(fd)
