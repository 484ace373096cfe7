"""Reading a file the user named themselves (``--config``): a plain file, of bounded size.

A flag may point anywhere, links included -- the file is the user's own -- but not at
something that never ends or never answers: ``/dev/zero`` would be read without
bound and a named pipe would block for ever.  So the name is opened once with
``O_NONBLOCK`` (a pipe returns at once) and everything is decided from ``fstat`` of
that descriptor: a regular file of at most ``cap`` bytes, read from the descriptor.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from pytest_groove.files.beneath import read_at_most

_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def read_regular_file(path: Path, cap: int) -> bytes:
    """The bytes of ``path`` (links followed), which must be a regular file <= ``cap`` bytes.

    Raises :class:`OSError` (``FileNotFoundError`` when absent); a device, a named pipe,
    a folder or a file over ``cap`` bytes is an ``OSError`` whose ``strerror`` says so.
    """
    fd = os.open(path, _FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(
                errno.EINVAL,
                "not a regular file (a device, a named pipe or a folder is in its place)",
                str(path),
            )
        if info.st_size > cap:
            raise OSError(errno.EFBIG, f"{info.st_size:,} bytes, over the {cap:,} byte limit")
        data = read_at_most(fd, cap + 1)
    finally:
        os.close(fd)
    if len(data) > cap:
        raise OSError(errno.EFBIG, f"grew past the {cap:,} byte limit while being read")
    return data
