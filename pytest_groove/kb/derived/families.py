"""The table of the derived files kept beside ``index.db``: one record per family.

Each module that writes derived files declares them in its ``DERIVED_FILES``
(:class:`~.family.DerivedFamily` records, :mod:`.family`); this table registers
those modules by name, the way datasette registers its built-in plugins, and
gathers their records the first time it is asked (:func:`derived_families`).  The
indexer's check (:mod:`.cache_check`) iterates the table and nothing else.

Why by name: the modules carry faiss, numpy and SQLite with them, and only the
indexer's look at the index folder reads the table, so nothing is imported before
then -- importing this module, or the package, costs nothing.  (By the time the
indexer looks, its own imports have loaded every one of them.)  The names point
downwards: a registered module imports :mod:`.family`, never this table.

A new derived file: a module that writes it and declares ``DERIVED_FILES``, and its
line in :data:`REGISTERED`.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import functools
import importlib

from pytest_groove.kb.derived.family import DerivedFamily

__all__ = ["REGISTERED", "RETIRED_FILES", "derived_families", "family_of"]

#: the modules declaring the index folder's derived files (``DERIVED_FILES``)
REGISTERED: tuple[str, ...] = (
    "pytest_groove.kb.derived.vector_cache",
    "pytest_groove.kb.derived.word_index",
    "pytest_groove.kb.derived.phrase_scores",
)

#: files an earlier version kept beside ``index.db`` that nothing reads any more (the
#: corpus snapshot, the quote scans and the note rows now live in ``index.db``), as shell
#: patterns (:func:`fnmatch.fnmatchcase`): the indexer removes them, seals included
RETIRED_FILES: tuple[str, ...] = (
    "corpus-snapshot.json",
    "quote-scan-*.json",
    "notevectors-*.rows.npz",
)


@functools.cache
def derived_families() -> tuple[DerivedFamily, ...]:
    """Every registered family, in :data:`REGISTERED` order (the modules are imported
    here, once)."""
    families: list[DerivedFamily] = []
    for module_name in REGISTERED:
        declared = getattr(importlib.import_module(module_name), "DERIVED_FILES", None)
        if not isinstance(declared, tuple) or not all(
            isinstance(family, DerivedFamily) for family in declared
        ):
            raise TypeError(f"{module_name}.DERIVED_FILES is not a tuple of DerivedFamily")
        families.extend(declared)
    return tuple(families)


def family_of(name: str) -> DerivedFamily | None:
    """The family the file ``name`` of an index folder belongs to (a seal: its file's),
    None when it is no derived file."""
    for family in derived_families():
        if family.owns(name):
            return family
    return None
