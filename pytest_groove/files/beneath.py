"""Open and read files below a root folder (a knowledge base) without ever leaving it.

The walk decides which files to index, and the indexer reads them a moment later.
Between the two, whoever can write the KB can swap a file (or a folder above it)
for a symbolic link to ``/etc/passwd``, or for a named pipe that blocks every
reader.  Opening the path by name would follow the link.  So, on systems that
can (``dir_fd`` support: Linux, macOS, the BSDs):

- a path is opened one component at a time, each relative to the descriptor of
  the folder above it, every component with ``O_NOFOLLOW``: a symlink anywhere
  below the KB root fails the open instead of being followed;
- the file itself is opened with ``O_NONBLOCK`` too, so a named pipe swapped in
  returns at once instead of waiting for a writer;
- everything is decided from ``fstat`` of the open descriptor: it must be a
  regular file with one name, no larger than the cap, and the very file (device
  and inode) the walk saw; nothing is read by path after that check.

Elsewhere (Windows) the file is opened by name; creating a symlink there needs a
privilege the threat model does not grant.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from pytest_groove.errors import GrooveError, clip_path, flag
from pytest_groove.files.resource_limits import RESOURCE_ERRNOS

_HAS_DIR_FD = os.open in os.supports_dir_fd and os.scandir in os.supports_fd
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
#: how a file is opened for reading without following a link in its last component
#: (non-blocking: a named pipe answers at once instead of waiting for a writer)
NO_FOLLOW_READ_FLAGS = (
    os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC | getattr(os, "O_BINARY", 0)
)
_READ_CHUNK = 1024 * 1024


class Skipped(Exception):
    """The file is not read; ``reason`` completes "skipped <path>: ..."."""

    def __init__(self, reason: str, *, lasting: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        #: the file's own state refuses it (a hard link, over the size cap), not a
        #: race or an I/O error: a fresh index of the same tree would not hold it either
        self.lasting = lasting


@dataclass(frozen=True)
class FileIdentity:
    """Which file the walk saw at a path: the pair the read must find again."""

    device: int
    inode: int

    @classmethod
    def of(cls, info: os.stat_result) -> FileIdentity:
        return cls(info.st_dev, info.st_ino)


def open_root(root: Path) -> int:
    """A descriptor for the KB folder itself (the one place a link may be followed)."""
    return os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)


def open_folder(root_fd: int, root: Path, rel: str) -> int:
    """Descriptor of the KB-relative folder ``rel`` ("" is the root), links refused."""
    if not _HAS_DIR_FD:
        return os.open(root / rel if rel else root, os.O_RDONLY | _CLOEXEC)
    return _walk_down(root_fd, [part for part in rel.split("/") if part])


def _walk_down(root_fd: int, parts: list[str]) -> int:
    fd = os.dup(root_fd)
    try:
        for part in parts:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _describe_open_error(exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
        return "it (or a folder above it) was replaced by a symbolic link or another file"
    if exc.errno == errno.ENXIO:
        return "it was replaced by a named pipe or device"
    return exc.strerror or str(exc)


def read_beneath(
    root_fd: int, root: Path, rel: str, expected: FileIdentity | None, cap: int
) -> bytes:
    """The bytes of the KB-relative file ``rel``; :class:`Skipped` says why not.

    ``expected`` is the identity the walk recorded (``None``: accept any regular
    file).  At most ``cap`` bytes are accepted, checked on the descriptor.
    """
    parts = [part for part in rel.split("/") if part]
    try:
        if _HAS_DIR_FD:
            folder = _walk_down(root_fd, parts[:-1])
            try:
                fd = os.open(parts[-1], NO_FOLLOW_READ_FLAGS, dir_fd=folder)
            finally:
                os.close(folder)
        else:
            fd = os.open(root / rel, NO_FOLLOW_READ_FLAGS)
    except OSError as exc:
        if exc.errno in RESOURCE_ERRNOS:
            raise  # out of open files or memory: nothing wrong with the file
        raise Skipped(_describe_open_error(exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Skipped("it was replaced by something that is not a regular file (a named pipe?)")
        # without dir_fd support the walk's inode numbers may not be the real ones
        if _HAS_DIR_FD and expected is not None and FileIdentity.of(info) != expected:
            raise Skipped("it was replaced by another file while indexing; index again")
        if info.st_nlink > 1:
            raise Skipped(
                f"it is a hard link ({info.st_nlink} names for one file); copy it instead",
                lasting=True,
            )
        if info.st_size > cap:
            raise Skipped(f"{info.st_size} bytes, over the {cap} byte limit", lasting=True)
        data = read_at_most(fd, cap + 1, first=info.st_size + 1)
    except OSError as exc:
        if exc.errno in RESOURCE_ERRNOS:
            raise
        raise Skipped(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
    if len(data) > cap:
        raise Skipped(f"grew past the {cap} byte limit while being read")
    return data


def read_at_most(fd: int, limit: int, *, first: int | None = None) -> bytes:
    """Read from ``fd`` until EOF or ``limit`` bytes, whichever comes first; ``first``
    is the size ``fstat`` promised (+1), when the caller has it.

    Asking for the promised size first keeps a small note from allocating a
    cap-sized buffer.
    """
    parts: list[bytes] = []
    remaining = limit
    want = limit if first is None else min(first, limit)
    while remaining > 0:
        chunk = os.read(fd, min(remaining, max(want, 1), _READ_CHUNK))
        if not chunk:
            break
        parts.append(chunk)
        remaining -= len(chunk)
        want = remaining
    return b"".join(parts)


def index_folder_beneath(kb: Path, index_dir: Path, *, create: bool) -> None:
    """Make sure the index folder, when it lies inside the KB, is reached without a link.

    ``kb`` is the resolved KB folder.  An index folder inside it (the default
    ``.groove/<model>``, or an ``index_dir`` a KB's ``groove.toml`` names) is walked
    one component at a time below the KB with ``O_NOFOLLOW``, creating what is
    missing when ``create``: a component that is a symbolic link (``.groove`` planted
    as a link to ``/home/you``) or a file is one :class:`GrooveError`, so the index is
    never written or read outside the KB through one.  An index folder outside the
    KB (a flag's choice) is created as named.  A missing folder with ``create`` off
    is left for the caller to report.
    """
    relative = _relative_inside(kb, index_dir)
    if relative is None or not _HAS_DIR_FD:
        if create:
            index_dir.mkdir(parents=True, exist_ok=True)
        return
    fd = open_root(kb)
    try:
        for at, part in enumerate(relative):
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=fd)
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                return
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
                    raise
                place = "/".join(relative[: at + 1])
                if _is_plain_file(fd, part):
                    # a note or the config itself: a wrong setting, never a file to remove
                    raise GrooveError(
                        f"refusing the index folder {clip_path(index_dir)}: {place} inside "
                        "the knowledge base is a file, not a folder; point index_dir (or "
                        f"{flag('index-dir')}) at a folder"
                    ) from None
                raise GrooveError(
                    f"refusing the index folder {clip_path(index_dir)}: "
                    f"{'/'.join(relative[: at + 1])} "
                    "inside the knowledge base is a symbolic link or not a folder, and the "
                    "index is never kept outside the KB through one; remove it, or pass "
                    f"{flag('index-dir')} to keep the index elsewhere"
                ) from None
            os.close(fd)
            fd = child
    finally:
        os.close(fd)


def _is_plain_file(dir_fd: int, name: str) -> bool:
    """``name`` in the folder ``dir_fd`` is a regular file (not followed if a link)."""
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _relative_inside(kb: Path, path: Path) -> list[str] | None:
    """``path``'s components below ``kb`` (compared as written), None when outside."""
    try:
        relative = Path(os.path.abspath(path)).relative_to(os.path.abspath(kb))
    except ValueError:
        return None
    parts = [part for part in relative.parts if part not in ("", ".")]
    return None if ".." in parts else parts
