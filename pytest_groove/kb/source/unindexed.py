"""Why a file that is on disk in the knowledge base is not in the index.

Asked only on an error or explanation path -- an expected document that the index
does not hold -- so a message can say "excluded by `.grooveignore` line 3" instead of
"removed" or "see the indexing warnings" when the walk left the file out on purpose
and warned about nothing.  The file is looked at from below the KB root one folder at
a time without following links (:mod:`pytest_groove.files.beneath`), and only its
status is read, never its content: nothing outside the KB is touched.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from pytest_groove.errors import clip
from pytest_groove.files.beneath import open_root
from pytest_groove.files.resource_limits import raise_if_limit
from pytest_groove.kb.source.walk import file_extension, is_office_lock_file, load_exclusion_rules
from pytest_groove.settings.records import IndexSettings

#: said when the file is there and nothing the walk decides explains it (a hard link,
#: an unreadable or unparsable file: the indexer warned about each)
SEE_WARNINGS = "the file exists but was not indexed: see the indexing warnings"

_FOLDER_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def _lstat_at(folder: int | None, kb: Path, rel: str, name: str) -> os.stat_result:
    if folder is not None:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    return os.lstat(kb / rel)


def _status(kb: Path, rel: str) -> os.stat_result | str | None:
    """The file's own status (never a link's target), a reason when a folder above it
    is a link the walk does not follow, None when there is no such file."""
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    by_fd = os.stat in os.supports_dir_fd and os.open in os.supports_dir_fd
    try:
        folder: int | None = open_root(kb) if by_fd else None
    except OSError as exc:
        raise_if_limit(exc, kb)
        return None
    except ValueError:
        return None
    # the folder being looked into ("" is the KB itself)
    inside = ""
    try:
        for depth, part in enumerate(parts, 1):
            here = "/".join(parts[:depth])
            info = _lstat_at(folder, kb, here, part)
            if depth == len(parts):
                return info
            if stat.S_ISLNK(info.st_mode):
                return f"it is below `{clip(here)}`, a symbolic link (links are never followed)"
            if not stat.S_ISDIR(info.st_mode):
                return None
            inside = here
            if folder is not None:
                child = os.open(part, _FOLDER_FLAGS, dir_fd=folder)
                os.close(folder)
                folder = child
        return None
    except OSError as exc:
        raise_if_limit(exc, kb / rel)  # out of open files: nothing is known of the file
        if exc.errno in (errno.EACCES, errno.EPERM) and inside:
            # the walk could not list that folder either: nothing below it was indexed
            return (
                f"it is below `{clip(inside)}/`, a folder this process cannot list "
                f"({exc.strerror or 'permission denied'}: check its permissions), so the "
                "indexer skipped it"
            )
        return None  # no such file, or it cannot be looked at
    except ValueError:
        return None
    finally:
        if folder is not None:
            os.close(folder)


def why_not_indexed(kb: Path, rel: str, settings: IndexSettings | None = None) -> str | None:
    """Why the KB-relative file ``rel`` that exists under ``kb`` is left out of the
    index, in words that follow the path (``excluded by `.grooveignore` line 3
    (`drafts/*`)``); None when there is no such file (it was deleted, or never was)."""
    status = _status(kb, rel)
    if status is None:
        return None
    if isinstance(status, str):
        return status
    if stat.S_ISLNK(status.st_mode):
        return "it is a symbolic link (links are never followed)"
    if stat.S_ISDIR(status.st_mode):
        return None
    if not stat.S_ISREG(status.st_mode):
        return "it is not a regular file"
    index = settings if settings is not None else IndexSettings()
    rules, _ = load_exclusion_rules(kb, index)
    excluded = rules.exclusion_reason(rel, False)
    if excluded is not None:
        return f"it is {excluded}"
    name = rel.rsplit("/", 1)[-1]
    if is_office_lock_file(name):
        return "it is an editor's lock file"
    if file_extension(name) not in index.parsers:
        kinds = ", ".join(f".{p}" for p in sorted(index.parsers)) or ".md"
        return f"only {kinds} files are indexed (enable other kinds under [parsers] in groove.toml)"
    return SEE_WARNINGS
