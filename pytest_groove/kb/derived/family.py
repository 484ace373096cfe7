"""What one family of derived files beside ``index.db`` is: the record each module
that writes such files declares, and the table (:mod:`.families`) gathers.

A module that writes files beside the index names them in ``DERIVED_FILES``, a tuple
of :class:`DerivedFamily` built from its own constants (prefix, format version, how
many it keeps), so a name, a layout version and a clean-up rule are spelled once, by
their writer.  The indexer's look at the index folder (:mod:`.cache_check`) knows the
files only through these records.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from pytest_groove.files.seal import SEAL_SUFFIX

__all__ = ["Check", "DerivedFamily", "Retention"]


class Retention(enum.Enum):
    """Which files of a family stay in the index folder; the family's writer removes
    the others when it writes one."""

    #: those of the index state last written (database id and write generation in
    #: the name)
    CURRENT_STATE = "the current index state's"
    #: those the current index state's manifest names (carried from state to state;
    #: the manifest itself is a row of ``index_meta``)
    NAMED_BY_MANIFEST = "named by the current manifest"
    #: the ``keep`` most recently used (one per golden set)
    NEWEST = "the newest"
    #: one file, replaced (the index state it answers for is inside it)
    ONE_FILE = "one file"


class Check(enum.Enum):
    """How the indexer's check treats a file of the family (:mod:`.cache_check`)."""

    #: its seal decides; a damaged file is removed (with its seal) alone
    SEAL = "seal"
    #: its seal decides; a damaged file is removed with every file sharing its stem,
    #: which were made with it (a vector cache, its means and state)
    SEAL_WITH_STEM = "seal, with its stem"


@dataclass(frozen=True)
class DerivedFamily:
    """Files derived from ``index.db`` and kept beside it, written by one module."""

    #: what the files are, in words
    name: str
    #: every file of the family is named ``<prefix>...<suffix>`` (and its seal
    #: ``<prefix>...<suffix>.seal``)
    prefix: str
    suffixes: tuple[str, ...]
    #: which files of the family stay (see :class:`Retention`)
    retention: Retention
    #: how many :attr:`Retention.NEWEST` keeps
    keep: int | None = None
    #: the layout version written inside each file; None: faiss's or numpy's own
    #: layout, the index state named in the file name
    format: int | None = None
    #: how the indexer's check treats one (see :class:`Check`)
    check: Check = Check.SEAL

    def owns(self, name: str) -> bool:
        """Whether a file named ``name`` in an index folder is one of the family or its
        seal (not a temporary file of a write in progress, nor anything else)."""
        return name.startswith(self.prefix) and name.removesuffix(SEAL_SUFFIX).endswith(
            self.suffixes
        )
