"""Where an evaluation's report files may go: never over what the run reads.

A report flag (one per entry of :data:`.formats.REPORT_FORMATS`: ``--html``,
``--trec-run``, ``--trec-qrels``, and the plugin's ``--groove-json``) names a file the
run writes at its end, replacing what is there.  Named after the golden file, the
history, the config, a note of the knowledge base or anything in the index folder,
the report would destroy an input (a hand-written golden file has no other copy) or
change the corpus the next run measures. Such a target is refused with the plan,
before any index work; so is one file named by two report flags (the later report
would replace the earlier unseen).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from pytest_groove.errors import UsageError, clip_path, flag
from pytest_groove.evaluation.reports.formats import report_files
from pytest_groove.files.paths import unencodable_name
from pytest_groove.kb.source.walk import file_extension
from pytest_groove.settings.config import Settings
from pytest_groove.settings.options import RunOptions
from pytest_groove.settings.records import CONFIG_FILE_NAME

#: the names our own files begin with at the top of a KB (the golden file, the history
#: and its lock and backups, the index folder, the ignore file)
OWN_PREFIX = ".groove"


def report_targets(options: RunOptions) -> list[tuple[str, Path]]:
    """The report files the options ask for, as ``(option name, path)`` (the table of
    :mod:`.formats`, in its order)."""
    return [(fmt.option, Path(path)) for fmt, path in report_files(options)]


def check_report_targets(
    kb: Path,
    options: RunOptions,
    settings: Settings,
    *,
    golden: Path,
    history: Path,
    baseline: Path | None = None,
) -> None:
    """Refuse a report target that is one of the run's inputs, or another report's."""
    inputs: list[tuple[Path, str]] = [
        (golden, "the golden file this run reads: the report would overwrite it"),
        (history, "the run history: the report would overwrite it"),
    ]
    if baseline is not None:
        inputs.append((baseline, "the accepted baseline: the report would overwrite it"))
    if settings.source is not None:
        inputs.append((settings.source, "the config this run reads: the report would overwrite it"))
    # where a KB's config is looked for, whether or not there is one yet
    inputs.append((kb / CONFIG_FILE_NAME, "where the knowledge base's config is read from"))
    kb_root = _resolved(kb)
    index_dir = None if settings.index.index_dir is None else _resolved(settings.index.index_dir)
    wanted = {p.lower() for p in settings.index.parsers}
    seen: dict[Path, str] = {}
    for name, target in report_targets(options):
        try:
            os.fsencode(target)
        except UnicodeEncodeError:  # a name the locale's encoding has no bytes for
            raise UsageError(
                f"{flag(name)} {clip_path(target)} {unencodable_name()}; name another file "
                "for the report"
            ) from None
        where = _resolved(target)
        why = _input_named(where, target, inputs)
        if why is None and index_dir is not None and where.is_relative_to(index_dir):
            why = "inside the index folder, which holds only what the indexer writes"
        if why is None and where.is_relative_to(kb_root) and where != kb_root:
            inside = where.relative_to(kb_root)
            if inside.parts[0].startswith(OWN_PREFIX):
                why = f"pytest-groove's own file {inside.as_posix()} in the knowledge base"
            elif file_extension(where.name) in wanted:
                why = (
                    f"a note of the knowledge base (a .{file_extension(where.name)} file in it): "
                    "the next run would index the report"
                )
        if why is None and where in seen:
            why = f"also the {flag(seen[where])} file: one report would replace the other"
        if why is not None:
            raise UsageError(
                f"{flag(name)} {clip_path(target)} is {why}; name another file for the report"
            )
        seen[where] = name


def _resolved(path: Path) -> Path:
    # strict=False: a report file need not exist yet (its folder may not either)
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.resolve(strict=False)
    except (UnicodeEncodeError, ValueError):
        # an input path the OS cannot be given (refused, naming it, where it is opened)
        # is no file a report could be written over
        return absolute


def _input_named(where: Path, target: Path, inputs: Iterable[tuple[Path, str]]) -> str | None:
    for path, what in inputs:
        if where == _resolved(path) or _same_file(target, path):
            return what
    return None


def _same_file(a: Path, b: Path) -> bool:
    """Also a hard link or a second name of the same file."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False
