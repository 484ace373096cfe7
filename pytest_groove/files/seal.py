"""Seals on the index folder's derived files: damage is told from what a writer wrote.

Everything in the index folder but ``index.db`` (the vector caches, their means and
states, the word-posting segments, the phrase scores) is derived
from ``index.db`` and read back by later
processes.  A file whose bytes are no longer what its writer wrote (a torn write after
a crash, a disk error, a stray edit) must never be used: a damaged vector cache gave
wrong metrics and a false regression without a word.  So each one is written through
:func:`write_sealed`, which puts a *seal* beside it (``<name>.seal``, 72 bytes and 12
a piece): the CRC-32 of its bytes, piece by piece (:mod:`~pytest_groove.files.seal_pieces`),
its identity once in place -- device, inode, size, modification and change time -- and
the boot it was written in.

A reader opens the file and asks :func:`vouches`:

- identity as sealed, in the same boot (or written durably, see below): trusted
  without reading a byte -- a write, a truncation, a copy or a restore changes the
  identity (a write sets the modification time, anything that sets that back moves
  the change time, which nothing can set back);
- any other identity (a ``cp -a``, a CI cache restored, the first run after a
  reboot): the CRC of the bytes decides once; a match is sealed again under the new
  identity, so the next run trusts it;
- no seal (an index of an older version, a crash before the seal was written) or a
  seal that does not read back (its own CRC-32 guards it): not vouched for.

The file is then rebuilt from ``index.db``, as a missing one is.  Why a boot: the
bytes of a file written and renamed without ``fsync`` are in the page cache until the
kernel writes them back, and only a crash of the whole machine (a new boot) can lose
them; so on Linux, where ``/proc/sys/kernel/random/boot_id`` names the boot, the
files are written without waiting for the disk and the first run of a new boot checks
each one by its CRC.  Where the boot cannot be named, files are written durably
(``fsync`` before the rename, and of the folder after it) and trusted by identity.

Reading a seal costs one small file; only a changed identity reads the whole file.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import enum
import errno
import functools
import os
import stat
import struct
import tempfile
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pytest_groove.files.atomic import sync_directory, write_atomic_with
from pytest_groove.files.beneath import NO_FOLLOW_READ_FLAGS, read_at_most
from pytest_groove.files.resource_limits import ResourceLimit, raise_if_limit, resource_limit
from pytest_groove.files.seal_pieces import Piece, crc_matches, pieces_of

__all__ = [
    "CACHE_FILE_CAP",
    "SEAL_SUFFIX",
    "Seal",
    "Verdict",
    "current_boot",
    "identity_sealed",
    "is_vouched",
    "open_cache_file",
    "open_regular",
    "open_vouched",
    "read_seal",
    "remove_with_seal",
    "seal_identity",
    "seal_of",
    "seal_path",
    "verdict_of",
    "vouches",
    "write_sealed",
]

#: a cache file larger than this is not read (a flat index of 1M 1024-dim vectors is 4 GiB)
CACHE_FILE_CAP = 16 * 1024**3
SEAL_SUFFIX = ".seal"
_MAGIC = b"GRVSEAL1"
#: magic, device, inode, size, modification ns, change ns, boot, number of pieces
_HEAD = struct.Struct("<8sQQQqq16sI")
#: each piece: length, CRC-32
_PIECE = struct.Struct("<QI")
_TAIL = struct.Struct("<I")
#: pieces are at least a quarter MiB but the last ones (cache_pieces.py): a file under
#: the cache cap has far fewer
_MAX_PIECES = 1 << 17
#: the boot of a file written durably (fsync): trusted by identity in any boot
_DURABLE = bytes(16)
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")

Identity = tuple[int, int, int, int, int]


class Verdict(enum.Enum):
    """What a seal says of its file."""

    #: the bytes are what the writer wrote
    TRUSTED = "trusted"
    #: no seal, or one that does not read back: nothing vouches for the file
    UNSEALED = "unsealed"
    #: the bytes are not what the seal records
    DAMAGED = "damaged"


def seal_path(path: Path) -> Path:
    return path.with_name(path.name + SEAL_SUFFIX)


@functools.cache
def current_boot() -> bytes | None:
    """This machine's boot (16 bytes), None where it cannot be named."""
    try:
        boot = uuid.UUID(_BOOT_ID.read_bytes().decode("ascii").strip()).bytes
    except (OSError, ValueError):
        return None
    return boot if boot != _DURABLE else None


def _identity(info: os.stat_result) -> Identity:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


@dataclass(frozen=True)
class Seal:
    """A file's identity and pieces when it was sealed, and the boot it was sealed in."""

    identity: Identity
    boot: bytes
    #: the pieces as stored (read only when the file is checked: see :attr:`pieces`)
    packed: bytes

    @classmethod
    def of(cls, identity: Identity, boot: bytes, pieces: tuple[Piece, ...]) -> Seal:
        return cls(identity, boot, b"".join(_PIECE.pack(*piece) for piece in pieces))

    @property
    def pieces(self) -> tuple[Piece, ...]:
        return tuple(_PIECE.iter_unpack(self.packed))

    def encode(self) -> bytes:
        count = len(self.packed) // _PIECE.size
        body = _HEAD.pack(_MAGIC, *self.identity, self.boot, count) + self.packed
        return body + _TAIL.pack(zlib.crc32(body))

    @classmethod
    def decode(cls, data: bytes) -> Seal | None:
        """The seal in ``data``, None unless it reads back whole (its CRC-32, its
        length; its pieces are unpacked only when its file is checked)."""
        if len(data) < _HEAD.size + _TAIL.size:
            return None
        body, (tail,) = data[: -_TAIL.size], _TAIL.unpack(data[-_TAIL.size :])
        if tail != zlib.crc32(body):
            return None
        magic, dev, ino, size, mtime, ctime, boot, count = _HEAD.unpack_from(body)
        if magic != _MAGIC or len(body) != _HEAD.size + count * _PIECE.size:
            return None
        return cls((dev, ino, size, mtime, ctime), boot, body[_HEAD.size :])

    def trusts(self, info: os.stat_result) -> bool:
        """Whether a file of this identity may be used without reading it."""
        return self.identity == _identity(info) and self.boot in (_DURABLE, current_boot())


def read_seal(path: Path) -> Seal | None:
    """The seal of ``path`` (the file itself, not the seal's name); None when it is
    missing or does not read back.  A link or anything but a regular file there is none."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    limit = _HEAD.size + _MAX_PIECES * _PIECE.size + _TAIL.size
    try:
        fd = os.open(seal_path(path), flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise_if_limit(exc, seal_path(path))  # a seal that cannot be opened now is no damage
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = read_at_most(fd, limit + 1)
        return Seal.decode(data) if len(data) <= limit else None
    except OSError as exc:
        raise_if_limit(exc, seal_path(path))
        return None
    finally:
        os.close(fd)


def seal_of(handle: BinaryIO, path: Path) -> Seal | None:
    """The seal of the file opened from ``path`` as ``handle`` when it is that file's
    (its identity), for a writer that carries its pieces over; None otherwise."""
    seal = read_seal(path)
    try:
        info = os.fstat(handle.fileno())
    except OSError:
        return None
    return seal if seal is not None and seal.identity == _identity(info) else None


def _write_seal(path: Path, seal: Seal, durable: bool) -> None:
    data = seal.encode()
    write_atomic_with(seal_path(path), lambda handle: handle.write(data), mode=0o644, sync=durable)


def verdict_of(handle: BinaryIO, path: Path) -> Verdict:
    """Whether the cache file opened from ``path`` as ``handle`` is what its writer wrote.

    A file whose identity moved but whose bytes still match is sealed again (where the
    folder takes a file) so that the next reader trusts it at once.  Raises only
    :class:`~pytest_groove.files.resource_limits.ResourceLimit`: out of open files or memory,
    nothing can be said of the file.
    """
    try:
        seal = read_seal(path)
        if seal is None:
            return Verdict.UNSEALED
        info = os.fstat(handle.fileno())
        if seal.trusts(info):
            return Verdict.TRUSTED
        if seal.identity[2] != info.st_size or not crc_matches(handle.fileno(), seal.pieces):
            return Verdict.DAMAGED
        boot = current_boot()
        with contextlib.suppress(OSError):  # a read-only folder checks it again next time
            _write_seal(path, Seal(_identity(info), boot or _DURABLE, seal.packed), boot is None)
    except ResourceLimit:
        raise
    except MemoryError:
        raise resource_limit(errno.ENOMEM, path) from None
    except OSError as exc:
        raise_if_limit(exc, path)
        return Verdict.DAMAGED  # a file that cannot be checked is not used
    except Exception:
        return Verdict.DAMAGED
    return Verdict.TRUSTED


def vouches(handle: BinaryIO, path: Path) -> bool:
    """Whether ``handle`` (opened from ``path``) may be read: see :func:`verdict_of`."""
    return verdict_of(handle, path) is Verdict.TRUSTED


def write_sealed(
    path: Path,
    write: Callable[[BinaryIO], object],
    *,
    mode: int = 0o644,
    pieces: Callable[[int], list[Piece]] = pieces_of,
) -> None:
    """Replace ``path`` with what ``write`` puts in a binary handle, and seal it.

    The bytes go to a new temporary file beside ``path`` (created exclusively), whose
    pieces -- ``pieces(fd)``, by default every byte's CRC read from the page cache --
    are taken once it is written; it is synced first where the boot cannot be named
    (see the module doc), renamed over ``path``, and sealed with the identity it has
    once in place (taken from its own descriptor, so a concurrent writer's file is never
    sealed as this one).  Raises the :class:`OSError` met; the temporary file is
    removed, and a file left without its seal is not vouched for.
    """
    durable = current_boot() is None
    fd, name = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp", dir=path.parent)
    tmp: Path | None = Path(name)
    try:
        with os.fdopen(fd, "w+b") as handle:
            write(handle)
            handle.flush()
            made = tuple(pieces(handle.fileno()))
            if durable:
                os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), mode)
            os.replace(name, path)
            tmp = None
            info = os.fstat(handle.fileno())
        if durable:
            sync_directory(path.parent)
        _write_seal(path, Seal.of(_identity(info), current_boot() or _DURABLE, made), durable)
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()


def open_cache_file(path: Path) -> BinaryIO | None:
    """A binary handle on a cache file, opened once and checked; None when absent.

    Opened with ``O_NOFOLLOW`` and ``O_NONBLOCK`` and checked on that descriptor: a
    symbolic link, a named pipe, a folder or a device in the cache's place is never
    read (``OSError``); the cache is then rebuilt and renamed over it.  Everything is
    read from this handle, never by name again.
    """
    try:
        fd = os.open(path, NO_FOLLOW_READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise_if_limit(exc, path)
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > CACHE_FILE_CAP:
            raise OSError(f"{path} is not a regular cache file")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def open_regular(path: Path) -> BinaryIO | None:
    """:func:`open_cache_file`, with None also where it refuses what is in the file's
    place (a link, a pipe, a folder): that is its reader's to rebuild and rename over."""
    try:
        return open_cache_file(path)
    except OSError:
        return None


def open_vouched(path: Path) -> BinaryIO | None:
    """:func:`open_cache_file` for a file its seal vouches for (:func:`verdict_of`);
    None when it is absent, unsealed, damaged or not a regular file.  Never raises:
    the caller builds it again."""
    handle = open_regular(path)
    if handle is None:
        return None
    if not vouches(handle, path):
        handle.close()
        return None
    return handle


def is_vouched(path: Path) -> bool:
    """Whether ``path`` is there and its seal vouches for it (see :func:`open_vouched`)."""
    handle = open_vouched(path)
    if handle is None:
        return False
    handle.close()
    return True


def remove_with_seal(path: Path) -> None:
    """Remove ``path`` and its seal, whichever are there."""
    for name in (path, seal_path(path)):
        with contextlib.suppress(OSError):
            name.unlink()


def seal_identity(path: Path) -> None:
    """Seal the regular file ``path`` by its identity alone, with no pieces: for a file
    another program writes in place (``index.db``, SQLite's), trusted by
    :func:`identity_sealed` while that identity holds in this boot, and otherwise never
    vouched for by this seal.  Raises the :class:`OSError` met."""
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"{path} is not a regular file")
    boot = current_boot()
    _write_seal(path, Seal.of(_identity(info), boot or _DURABLE, ()), boot is None)


def identity_sealed(path: Path) -> bool:
    """Whether ``path`` (never followed) has the identity :func:`seal_identity` sealed,
    in the boot it was sealed in."""
    seal = read_seal(path)
    if seal is None:
        return False
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return seal.trusts(info)
