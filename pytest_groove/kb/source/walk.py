"""Find the files of a knowledge base that should be indexed.

One exclusion predicate (:meth:`ExclusionRules.is_excluded`) serves the walk
and any later "is this path indexed?" question.  It is the union of three
layers:

1. fail-safe directory names that are never indexed, whatever the config says:
   ``.git``, ``.svn``, ``node_modules`` and our own index folder ``.groove``
   (ASCII-case-insensitive);
2. ``exclude_dirs`` from the settings: directory basenames, compared with
   Unicode lower-casing (plus final-sigma folding);
3. ``<kb>/.grooveignore`` patterns (:mod:`pytest_groove.kb.source.ignore`).

A path is excluded when it, or any directory above it, is excluded by any
layer; so ``!`` in ``.grooveignore`` cannot re-include anything below an
excluded directory, nor undo layers 1 and 2.

The walk never follows symbolic links (a linked file is skipped, a linked
directory is not entered), skips office lock files, and refuses hard-linked
files with a warning: a hard link could pull content from outside the KB into
the index.

Names are UTF-8 text, whatever the locale: a name whose bytes are not UTF-8 is
skipped with a warning.  A process that decodes file names in another encoding
(a Latin-1 or EUC-JP locale) would read a UTF-8 name as other characters -- the
note ``café.md`` indexed as ``cafÃ©.md``, an expected answer lost, a regression
recorded -- and could not open the name stored in the index; so a file to index or
a folder to enter whose name is not ASCII stops the walk with one line naming the
locale and the fix (:func:`pytest_groove.files.paths.locale_advice`).  ASCII names read
alike under every such locale.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_groove.errors import GrooveError, clip, clip_path
from pytest_groove.files.beneath import FileIdentity, open_folder, open_root
from pytest_groove.files.paths import foreign_name_encoding, locale_advice
from pytest_groove.files.resource_limits import raise_if_limit
from pytest_groove.kb.source.ignore import IGNORE_FILE_NAME, IgnoreRules, load_ignore_rules
from pytest_groove.settings.config import IndexSettings

_SCANDIR_FD = os.scandir in os.supports_fd

#: directory names excluded in every configuration (compared ASCII-case-insensitively)
FAILSAFE_DIRS = frozenset({".git", ".svn", "node_modules", ".groove"})


def _ascii_lower(text: str) -> str:
    return "".join(c.lower() if c.isascii() else c for c in text)


def fold_dir_name(name: str) -> str:
    """Case key for ``exclude_dirs``: Unicode lower-case with final sigma as sigma.

    Not full case folding (``straße`` and ``STRASSE`` stay different).
    """
    return name.lower().replace("\u03c2", "\u03c3")


def file_extension(path: str) -> str | None:
    """ASCII-lower-cased extension of the last path segment, or None.

    A leading dot does not start an extension: ``.md`` has none, while
    ``.notes.md`` has ``md``.
    """
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    dot = name.rfind(".")
    if dot <= 0:
        return None
    return _ascii_lower(name[dot + 1 :])


def is_office_lock_file(name: str) -> bool:
    """Lock files editors leave beside open documents (``~$x.md``, ``.~lock.x.md#``)."""
    return name.startswith("~$") or (name.startswith(".~lock.") and name.endswith("#"))


@dataclass(frozen=True)
class ExclusionRules:
    """The three exclusion layers, ready to test KB-relative paths."""

    #: ``exclude_dirs`` entries, already passed through :func:`fold_dir_name`
    exclude_dirs: frozenset[str] = frozenset()
    ignore: IgnoreRules = field(default_factory=IgnoreRules)
    #: exact KB-relative directories never indexed (an index dir placed inside the KB)
    excluded_paths: frozenset[str] = frozenset()

    @classmethod
    def build(
        cls,
        exclude_dirs: Iterable[str],
        ignore: IgnoreRules | None = None,
        excluded_paths: Iterable[str] = (),
    ) -> ExclusionRules:
        return cls(
            exclude_dirs=frozenset(fold_dir_name(d) for d in exclude_dirs),
            ignore=ignore if ignore is not None else IgnoreRules(),
            excluded_paths=frozenset(excluded_paths),
        )

    def excludes_entry(self, rel: str, is_dir: bool) -> bool:
        """Whether this path itself is excluded by a layer (ancestors not checked)."""
        return self.entry_reason(rel, is_dir) is not None

    def entry_reason(self, rel: str, is_dir: bool) -> str | None:
        """Which layer excludes this path itself (ancestors not checked), in words:
        ``excluded by `.grooveignore` line 3 (`drafts/`)``; None when none does."""
        if is_dir:
            name = rel.rsplit("/", 1)[-1]
            if _ascii_lower(name) in FAILSAFE_DIRS:
                return f"in `{clip(rel)}/`, a folder that is never indexed"
            if fold_dir_name(name) in self.exclude_dirs:
                return f"in `{clip(rel)}/`, excluded by `exclude_dirs` (groove.toml)"
            if rel in self.excluded_paths:
                return f"in `{clip(rel)}/`, the index folder"
        pattern = self.ignore.deciding(rel, is_dir)
        if pattern is None or pattern.negated:
            return None
        rule = f"excluded by `{IGNORE_FILE_NAME}` line {pattern.line} (`{clip(pattern.text)}`)"
        return f"in `{clip(rel)}/`, {rule}" if is_dir else rule

    def exclusion_reason(self, rel: str, is_dir: bool) -> str | None:
        """Why :meth:`is_excluded` leaves this path out (the layer and, for an ignore
        rule, the file, line and pattern), None when it does not."""
        rel = rel.strip("/")
        if not rel:
            return None
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            why = self.entry_reason("/".join(parts[:depth]), True)
            if why is not None:
                return why
        return self.entry_reason(rel, is_dir)

    def is_excluded(self, rel: str, is_dir: bool) -> bool:
        """Whether a KB-relative, forward-slash path is left out of the index.

        Every proper ancestor is tested as a directory first; the KB root itself
        (empty path) is never excluded.
        """
        return self.exclusion_reason(rel, is_dir) is not None


def is_excluded(rel: str, is_dir: bool, rules: ExclusionRules) -> bool:
    """Function form of :meth:`ExclusionRules.is_excluded`."""
    return rules.is_excluded(rel, is_dir)


def _index_dir_rel(kb_root: Path, index_dir: Path | None) -> list[str]:
    """The index directory's KB-relative path when it lies inside the KB."""
    if index_dir is None:
        return []
    try:
        rel = index_dir.resolve().relative_to(kb_root)
    except (OSError, ValueError):
        return []
    text = rel.as_posix()
    return [] if text in ("", ".") else [text]


def load_exclusion_rules(
    kb_root: Path, settings: IndexSettings
) -> tuple[ExclusionRules, tuple[str, ...]]:
    """All three layers for ``kb_root`` (re-reads ``.grooveignore``), plus warnings."""
    ignore, warnings = load_ignore_rules(kb_root)
    rules = ExclusionRules.build(
        settings.exclude_dirs, ignore, _index_dir_rel(kb_root.resolve(), settings.index_dir)
    )
    return rules, warnings


@dataclass(frozen=True)
class CollectResult:
    #: KB-relative forward-slash paths, sorted component by component
    files: tuple[str, ...]
    #: one line per refused file or unreadable directory / ignore file
    warnings: tuple[str, ...]
    #: KB-relative prefixes ("" for the root, else "dir/") of folders that could not be
    #: listed: what was indexed below them must be kept, not pruned as deleted
    unlisted: tuple[str, ...] = ()
    #: device and inode the walk saw for each file: reading must find the same file
    identities: Mapping[str, FileIdentity] = field(default_factory=dict)


def _path_key(rel: str) -> tuple[str, ...]:
    # component-wise order: "a/b" sorts before "a-b/c", as path comparison does
    return tuple(rel.split("/"))


@dataclass(frozen=True)
class _EntryName:
    """A listed name as UTF-8 text, and whether the locale read it otherwise."""

    #: the name as its bytes say in UTF-8 (as listed when they cannot be had back)
    text: str
    #: the bytes are not UTF-8: the file is skipped under every locale
    undecodable: bool = False
    #: the process read the name in another encoding than UTF-8 and it is not ASCII:
    #: the name cannot be opened as the index stores it
    misread_as: str | None = None
    #: the UTF-8 text could not be had back (``text`` is the name as listed): not even
    #: whether a rule excludes it can be told
    lost: bool = False


def _entry_name(name: str, encoding: str | None) -> _EntryName:
    """``name`` as listed, read as UTF-8 (``encoding``: the locale's, when not UTF-8)."""
    if encoding is None:
        # os.scandir smuggles non-UTF-8 bytes in as lone surrogates
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            return _EntryName(name, undecodable=True)
        return _EntryName(name)
    if name.isascii():
        return _EntryName(name)
    try:
        raw = os.fsencode(name)
    except UnicodeEncodeError:  # the locale's codec does not give these bytes back
        return _EntryName(name, misread_as=encoding, lost=True)
    try:
        return _EntryName(raw.decode("utf-8"), misread_as=encoding)
    except UnicodeDecodeError:
        return _EntryName(name, undecodable=True)


def _misread(folder: Path, name: _EntryName) -> GrooveError:
    """The walk stops: the locale reads a name that is not ASCII as other characters."""
    encoding = name.misread_as or sys.getfilesystemencoding()
    return GrooveError(
        f"cannot read the name of {clip_path(folder / name.text)} as UTF-8 text: "
        f"{locale_advice(encoding)}"
    )


class TooManyEntries(GrooveError):
    """The walk met more entries than its bound: the folder is not a knowledge base."""


def _too_many(kb_root: Path, limit: int) -> TooManyEntries:
    return TooManyEntries(
        f"{clip_path(kb_root)} holds more than {limit:,} files and folders (the listing "
        "stopped there), which is not a knowledge base but something around one; point "
        "--kb-path at the folder of your notes"
    )


@dataclass
class _Walk:
    """What the walk found so far, and the folders it has still to list."""

    rules: ExclusionRules
    #: the parsers' extensions, ASCII-lower-cased
    wanted: set[str]
    warnings: list[str]
    #: KB-relative prefixes ("" for the root, else "dir/") of folders still to list
    pending: list[str] = field(default_factory=lambda: [""])
    files: list[str] = field(default_factory=list)
    identities: dict[str, FileIdentity] = field(default_factory=dict)
    unlisted: list[str] = field(default_factory=list)

    def cannot_list(self, folder: Path, prefix: str, exc: OSError) -> None:
        """The folder at ``prefix`` could not be listed: warned of, nothing below it pruned."""
        raise_if_limit(exc, folder)  # a folder left out would look emptied
        self.warnings.append(f"skipped folder {clip_path(folder)}: cannot list it ({exc.strerror})")
        self.unlisted.append(prefix)


def collect_files(
    kb_root: Path, settings: IndexSettings, *, max_entries: int | None = None
) -> CollectResult:
    """Every indexable file under ``kb_root``, sorted, plus warnings.

    Raises :class:`GrooveError` when ``kb_root`` is not a directory, and
    :class:`TooManyEntries` as soon as more than ``max_entries`` entries (files and
    folders, indexable or not) were listed (``groove init --kb-path /`` stops at once
    rather than walking the whole file system); problems with single entries
    become warnings.
    """
    root = _kb_folder(kb_root)
    rules, ignore_warnings = load_exclusion_rules(root, settings)
    walk = _Walk(rules, {_ascii_lower(p) for p in settings.parsers}, list(ignore_warnings))
    # folders are listed through descriptors opened below the root without following
    # links, so a folder swapped for a link mid-walk is never listed (kb.beneath)
    try:
        root_fd = open_root(root)
    except OSError as exc:
        raise_if_limit(exc, kb_root)  # not the folder's permissions
        raise GrooveError(
            f"cannot read the knowledge base folder {clip_path(kb_root)} ({exc.strerror}); "
            "check its permissions"
        ) from None
    try:
        _walk_folders(walk, root_fd, root, kb_root, max_entries)
    finally:
        os.close(root_fd)
    walk.files.sort(key=_path_key)
    return CollectResult(
        tuple(walk.files), tuple(walk.warnings), tuple(sorted(walk.unlisted)), walk.identities
    )


def _kb_folder(kb_root: Path) -> Path:
    """``kb_root`` resolved; a :class:`GrooveError` when it is missing or not a folder."""
    try:
        root = kb_root.resolve(strict=True)
    except OSError:
        raise GrooveError(
            f"knowledge base folder not found: {clip_path(kb_root)} (check the path you gave)"
        ) from None
    if not root.is_dir():
        raise GrooveError(f"knowledge base path is not a folder: {clip_path(kb_root)}")
    return root


def _walk_folders(
    walk: _Walk, root_fd: int, root: Path, kb_root: Path, max_entries: int | None
) -> None:
    """List every pending folder below ``root_fd`` (more are added as they are met)."""
    listed = 0
    while walk.pending:
        prefix = walk.pending.pop()
        folder = root / prefix if prefix else root
        try:
            folder_fd = open_folder(root_fd, root, prefix)
        except OSError as exc:
            walk.cannot_list(folder, prefix, exc)
            continue
        try:
            listed += _list_folder(walk, folder_fd, folder, prefix)
        finally:
            os.close(folder_fd)
        if max_entries is not None and listed > max_entries:
            raise _too_many(kb_root, max_entries)


def _list_folder(walk: _Walk, folder_fd: int, folder: Path, prefix: str) -> int:
    """Sort the entries of one folder into files to index and folders to visit; returns
    how many entries the folder held."""
    try:
        # entries' stat() calls go through folder_fd, which stays open meanwhile
        with os.scandir(folder_fd if _SCANDIR_FD else folder) as entries:
            listing = list(entries)
    except OSError as exc:
        walk.cannot_list(folder, prefix, exc)
        return 0
    rules, wanted, warnings = walk.rules, walk.wanted, walk.warnings
    pending, files, identities = walk.pending, walk.files, walk.identities
    encoding = foreign_name_encoding()
    for entry in listing:
        name = _entry_name(entry.name, encoding)
        if name.undecodable:
            warnings.append(f"skipped {folder / entry.name!s}: its name is not valid UTF-8")
            continue
        rel = prefix + name.text
        try:
            if entry.is_symlink():
                continue  # never followed, whatever its name
            if name.lost:
                raise _misread(folder, name)
            if entry.is_dir(follow_symlinks=False):
                if not rules.excludes_entry(rel, True):
                    if name.misread_as is not None:
                        raise _misread(folder, name)
                    pending.append(rel + "/")
                continue
            if not entry.is_file(follow_symlinks=False):
                continue  # sockets, FIFOs, devices
        except OSError:
            continue  # vanished or unreadable while we looked
        if is_office_lock_file(name.text) or file_extension(name.text) not in wanted:
            continue
        if rules.excludes_entry(rel, False):
            continue
        if name.misread_as is not None:
            raise _misread(folder, name)
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue  # vanished while we looked
        if info.st_nlink > 1:
            warnings.append(
                f"skipped {rel}: it is a hard link ({info.st_nlink} names for one file); "
                "copy it instead"
            )
            continue
        files.append(rel)
        identities[rel] = FileIdentity.of(info)
    return len(listing)
