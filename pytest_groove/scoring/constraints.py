"""A golden query's two constraints beside its metrics: ``not_expected`` and ``within``.

- ``not_expected: [{path, heading?}]`` -- no hit within the largest k may satisfy such
  an entry (the hit rule of an expected entry: the same path, and the heading when one
  is given); a deprecated page, a draft, a confidential note.
- ``within: N`` -- the first hit that satisfies an expected entry must rank at N or
  better.  A query with no expected hit within the largest k is a miss, not a
  ``within`` failure.

Each broken constraint is one :class:`Violation`; the pytest item fails naming it, and
the verdicts, reports and gate read the same records.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_groove.scoring.metrics import RankedHit, expected_ranks
from pytest_groove.scoring.records import ExpectedEntry

ViolationKind = Literal["not_expected", "within"]


@dataclass(frozen=True)
class Violation:
    """One broken constraint of a golden query."""

    kind: ViolationKind
    #: the rank of the not-expected hit, or of the first expected hit
    rank: int
    #: the not-expected entry that was returned (None for ``within``)
    entry: ExpectedEntry | None = None
    #: the query's ``within`` (None for ``not_expected``)
    within: int | None = None

    @property
    def key(self) -> tuple[str, str, str | None]:
        """What stays the same when only the rank moves (new against a baseline?)."""
        if self.entry is None:
            return (self.kind, "", None)
        return (self.kind, self.entry.path, self.entry.heading)

    def text(self, k: int) -> str:
        """``not expected `a.md # H` at rank 3 in the top 10`` / ``rank 2, within 1``."""
        if self.entry is None:
            return f"first expected hit at rank {self.rank}, within {self.within}"
        label = self.entry.path
        if self.entry.heading is not None:
            label += f" # {self.entry.heading}"
        return f"not expected `{label}` at rank {self.rank} in the top {k}"


def violations(
    expected: Sequence[ExpectedEntry],
    not_expected: Sequence[ExpectedEntry],
    within: int | None,
    hits: Sequence[RankedHit],
    k: int,
) -> tuple[Violation, ...]:
    """The constraints ``hits`` break within the largest ``k``: each not-expected entry
    a hit satisfies (at its first rank), in golden order, then ``within``."""
    top = [hit for hit in hits if hit.rank <= k]
    found: list[Violation] = []
    for entry, rank in zip(not_expected, expected_ranks(not_expected, top), strict=True):
        if rank is not None:
            found.append(Violation("not_expected", rank, entry=entry))
    if within is not None:
        ranks = [
            rank
            for entry, rank in zip(expected, expected_ranks(expected, top), strict=True)
            if rank is not None and entry.relevant
        ]
        if ranks and min(ranks) > within:
            found.append(Violation("within", min(ranks), within=within))
    return tuple(found)
