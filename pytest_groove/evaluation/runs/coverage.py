"""What a golden set covers of its knowledge base (``groove coverage``).

Like a code-coverage report, for retrieval:

- **expected** -- the share of documents, and of sections, that at least one golden
  query expects, per folder.  A document counts when an expected entry (grade 1 or
  more) names its path; a section -- a distinct heading of the document's chunks, as
  the index has it -- when an entry names its path *and* that heading (a heading-less
  entry expects the document, not each of its sections);
- **never returned** -- the documents no golden query's top k returned in this run:
  what the set never exercises retrieval on;
- **frequent displacers** -- documents in the top k of many queries (a fifth of them,
  and at least 2) that none of those queries expects (no entry names the document):
  what crowds answers out.

The searches are the evaluation's own (:func:`~pytest_groove.evaluation.lifecycle.
begin_evaluation` and ``run_query``): the same searcher, depth and k as ``groove eval``,
and nothing recorded.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_groove.errors import clip
from pytest_groove.evaluation.runs.record import QueryResult
from pytest_groove.scoring.metrics import normalise_heading
from pytest_groove.scoring.records import GoldenSet

#: a document is a frequent displacer when this share of the queries (at least 2)
#: return it in their top k without expecting it
DISPLACER_SHARE = 0.2
#: the root folder's name in the per-folder table
ROOT_FOLDER = "."


@dataclass(frozen=True)
class FolderCoverage:
    folder: str
    documents: int
    documents_expected: int
    sections: int
    sections_expected: int

    def to_json(self) -> dict[str, Any]:
        return {
            "folder": self.folder,
            "documents": self.documents,
            "documents_expected": self.documents_expected,
            "sections": self.sections,
            "sections_expected": self.sections_expected,
        }


@dataclass(frozen=True)
class Displacer:
    path: str
    #: queries that returned it in their top k without expecting it
    queries: int


@dataclass(frozen=True)
class Coverage:
    #: the largest k: "returned" means within it
    k: int
    query_count: int
    folders: tuple[FolderCoverage, ...]
    #: documents no golden query returned within k, sorted
    never_returned: tuple[str, ...]
    #: most queries first
    displacers: tuple[Displacer, ...]

    @property
    def total(self) -> FolderCoverage:
        """Every folder added up (``folder`` is empty)."""
        return FolderCoverage(
            "",
            sum(f.documents for f in self.folders),
            sum(f.documents_expected for f in self.folders),
            sum(f.sections for f in self.folders),
            sum(f.sections_expected for f in self.folders),
        )

    def to_json(self) -> dict[str, Any]:
        total = self.total
        return {
            "k": self.k,
            "queries": self.query_count,
            "documents": total.documents,
            "documents_expected": total.documents_expected,
            "sections": total.sections,
            "sections_expected": total.sections_expected,
            "folders": [folder.to_json() for folder in self.folders],
            "never_returned": list(self.never_returned),
            "displacers": [{"path": d.path, "queries": d.queries} for d in self.displacers],
        }


def _folder(path: str) -> str:
    return posixpath.dirname(path) or ROOT_FOLDER


def _sections(headings: Collection[str | None]) -> set[str]:
    return {normalise_heading(h) for h in headings if h is not None}


def golden_coverage(
    golden: GoldenSet,
    indexed: Mapping[str, Collection[str | None]],
    results: Sequence[QueryResult],
    k: int,
) -> Coverage:
    """The coverage of ``indexed`` (path -> its chunks' headings) by ``golden``, with
    the top ``k`` of each query's ``results`` (in golden order)."""
    entries = [e for q in golden.queries for e in q.expected if e.relevant]
    expected_docs = {e.path for e in entries}
    pinned = {(e.path, normalise_heading(e.heading)) for e in entries if e.heading is not None}
    rows: dict[str, list[int]] = {}
    for path in sorted(indexed):
        sections = _sections(indexed[path])
        row = rows.setdefault(_folder(path), [0, 0, 0, 0])
        row[0] += 1
        row[1] += path in expected_docs
        row[2] += len(sections)
        row[3] += sum((path, section) in pinned for section in sections)
    returned: set[str] = set()
    unexpected: Counter[str] = Counter()
    for result in results:
        top = [hit for hit in result.top_k if hit.rank <= k]
        returned.update(hit.path for hit in top)
        wanted = {entry.path for entry in result.expected if entry.relevant}
        unexpected.update({hit.path for hit in top} - wanted)
    floor = max(2, round(DISPLACER_SHARE * len(results)))
    return Coverage(
        k=k,
        query_count=len(golden.queries),
        folders=tuple(FolderCoverage(name, *row) for name, row in sorted(rows.items())),
        never_returned=tuple(path for path in sorted(indexed) if path not in returned),
        displacers=tuple(
            Displacer(path, count)
            for path, count in sorted(unexpected.items(), key=lambda item: (-item[1], item[0]))
            if count >= floor
        ),
    )


def share_text(part: int, whole: int) -> str:
    """``3/4 (75%)``, for people (``0/0`` of nothing)."""
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "0/0"


def coverage_text(coverage: Coverage, shown: int = 20) -> str:
    """The text report: per folder, then never returned and frequent displacers."""
    total = coverage.total
    lines = [
        f"groove coverage — {coverage.query_count} golden queries, top {coverage.k}",
        f"  documents expected: {share_text(total.documents_expected, total.documents)}",
        f"  sections expected:  {share_text(total.sections_expected, total.sections)}",
        "",
        f"  {'folder':<32} {'documents':>14} {'sections':>14}",
    ]
    for folder in coverage.folders:
        lines.append(
            f"  {clip(folder.folder, 32):<32} "
            f"{share_text(folder.documents_expected, folder.documents):>14} "
            f"{share_text(folder.sections_expected, folder.sections):>14}"
        )
    never = coverage.never_returned
    lines += ["", f"Never returned in any query's top {coverage.k} ({len(never)}):"]
    lines += [f"  {clip(path, 200)}" for path in never[:shown]] or ["  (none)"]
    if len(never) > shown:
        lines.append(f"  … and {len(never) - shown} more (--format json lists every one)")
    lines += ["", "Frequent displacers (in the top k of many queries, expected by none of them):"]
    shown_displacers = coverage.displacers[:shown]
    lines += [f"  {clip(d.path, 200)}  ({d.queries} queries)" for d in shown_displacers] or [
        "  (none)"
    ]
    return "\n".join(lines) + "\n"
