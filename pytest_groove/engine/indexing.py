"""Bringing a KB's index up to date, for ``groove index`` and every door that opens
an engine: where the index is, and what the search configuration needs it to keep.

Apart from :mod:`.builtin` so that ``groove index`` imports the indexer without the
search pipeline.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from pytest_groove.embed.base import Embedder
from pytest_groove.embed.registry import get_embedder, model_slug
from pytest_groove.errors import flag
from pytest_groove.files.paths import check_os_path, resolve_path
from pytest_groove.kb.indexer import IndexReport, VectorCaches, default_index_dir, index_kb
from pytest_groove.kb.progress import ProgressTo
from pytest_groove.search.query.fts_query import TERMS_QUERY_VERSION
from pytest_groove.settings.config import Settings

__all__ = ["index_dir_for", "reads_note_vectors", "reads_term_table", "resolve_kb", "run_indexer"]


def index_dir_for(kb: Path, settings: Settings, embedder_name: str) -> Path:
    """The index folder for ``kb`` (resolved) under ``settings``.

    A path the OS would refuse is one clear line (:func:`check_os_path`).  A folder
    outside the KB (the user's flag) is resolved here, links and all, because the
    index database is then opened refusing any link on its way
    (``SQLITE_OPEN_NOFOLLOW``); one inside the KB is kept as written, its components
    checked below the KB one at a time instead (:func:`index_folder_beneath`).
    """
    flags = f"{flag('index-dir')} / index_dir"
    if settings.index.index_dir is None:
        index_dir = default_index_dir(kb, model_slug(embedder_name))
        check_os_path(index_dir, "index folder", "--kb-path / --groove-kb")
        return index_dir
    index_dir = settings.index.index_dir
    check_os_path(index_dir, "index folder", flags)
    absolute = Path(os.path.abspath(index_dir))
    if absolute == kb or kb in absolute.parents:
        return absolute
    return resolve_path(absolute, "index folder", flags)


def resolve_kb(kb: Path) -> Path:
    """The KB folder as an absolute path; a symlink loop is one clear error."""
    return resolve_path(kb, "knowledge base", "--kb-path / --groove-kb")


def run_indexer(
    kb: Path,
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    force: bool = False,
    progress: ProgressTo = None,
    log: Callable[[str], None] | None = None,
) -> IndexReport:
    """Bring the KB's index up to date (a no-op when nothing changed)."""
    kb = resolve_kb(kb)
    embedder = embedder or get_embedder(settings.index.model)
    return index_kb(
        kb,
        index_dir_for(kb, settings, embedder.name),
        settings.index,
        embedder,
        force=force,
        progress=progress,
        log=log,
        term_table=reads_term_table(settings),
        note_vectors=reads_note_vectors(settings),
        vector_caches=VectorCaches(
            centre=settings.search.vector_centring,
            kind=settings.index.vector_index,
            notes=reads_note_vectors(settings),
        ),
    )


def reads_term_table(settings: Settings) -> bool:
    """Whether searching with ``settings`` reads the word table (``fts_terms``)."""
    return settings.search.fts_query_version == TERMS_QUERY_VERSION


def reads_note_vectors(settings: Settings) -> bool:
    """Whether searching with ``settings`` reads the note vectors (note order)."""
    return settings.search.note_order
