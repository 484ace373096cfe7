"""Records shared by the golden loader, the metrics and the reports.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ExpectedEntry:
    """One ground-truth answer: a KB-relative path, optionally pinned to a heading."""

    path: str
    heading: str | None = None
    #: 1-based line of the entry in the golden file (for messages), 0 if unknown;
    #: not part of equality: two entries naming the same answer are the same entry
    line: int = field(default=0, compare=False)
    #: graded relevance (``grade: N`` in the golden file): the gain nDCG credits; 0 is
    #: "judged not relevant" (exported to qrels, never counted as expected)
    grade: int = 1

    @property
    def relevant(self) -> bool:
        """Counted as expected by every metric: a grade of 1 or more."""
        return self.grade >= 1


@dataclass(frozen=True)
class GoldenQuery:
    #: row key for diffs and reports: the explicit ``id`` or the first 32 code points
    id: str
    #: the query text exactly as written
    query: str
    expected: tuple[ExpectedEntry, ...]
    tags: tuple[str, ...] = ()
    #: 1-based line of this query in the YAML file (for reportinfo), 0 if unknown
    line: int = 0
    #: True when ``id`` was written in the file, False when derived from the text
    explicit_id: bool = False
    #: documents or sections that must not be in the top k (``not_expected:``); no grade
    not_expected: tuple[ExpectedEntry, ...] = ()
    #: the first expected hit must rank at this rank or better (``within: N``); None: any
    within: int | None = None

    @property
    def named_entries(self) -> tuple[ExpectedEntry, ...]:
        """Every entry that names KB content: the expected ones, then the not-expected
        ones (the check against the index reads both)."""
        return (*self.expected, *self.not_expected)


@dataclass(frozen=True)
class GoldenSet:
    path: str
    #: SHA-256 hex of the exact file bytes
    hash: str
    queries: tuple[GoldenQuery, ...] = field(default_factory=tuple)


def question_key(text: str) -> str:
    """What two golden queries must share to ask the same question: the text in
    Unicode NFKC, case folded, runs of whitespace as one space.  Copies are one
    observation to a statistic over queries (the sign-flip test, tune's folds)."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())
