"""A run's rankings as a TREC run file and the golden set as TREC qrels.

The two files let ``trec_eval``, ``pytrec_eval`` or ``ranx`` recompute the numbers
``groove eval`` reports.  The formats (whitespace-separated, one line each)::

    run:    qid Q0 docid rank score tag
    qrels:  qid 0 docid grade

Identifiers (documented in ``docs/interop.md``):

- ``qid`` is the golden query's id (``@2``, ``@3``... on a repeated derived id,
  numbered in golden-file order so a subset run's files use the whole run's qids;
  the empty id, which the golden file allows, is ``@1``: a field is never empty);
- a document id is the KB-relative path (``docs/a.md``) for a path-only expected
  entry, and ``path#heading`` (the heading trimmed and lowercased, as the hit rule
  compares it) for an entry pinned to a heading;
- inside an id, whitespace, unprintable characters and ``%``, ``#``, ``@`` are
  percent-encoded (UTF-8 bytes), so an id is one field and ``#`` / ``@`` only ever
  separate its parts.  Other characters, non-ASCII ones included, are kept.

A hit's document id follows the one-to-one rule behind our nDCG
(:func:`pytest_groove.scoring.metrics.ndcg_at_k`): walking the ranking in order,
a hit credited to an expected entry gets that entry's id (a heading entry before a
path-only one, then golden order); a hit credited to nothing gets its own
``path`` / ``path#heading``, with ``@rank`` appended when a hit above already used
that id (a TREC run names each document once per query).  Hence trec_eval's
``ndcg_cut_k``, ``recip_rank`` and ``recall_k`` equal our nDCG, RR and recall at k --
except recall in one case: one hit satisfying both a path-only entry and a heading
entry of the same file counts twice for us and once for trec_eval (see
:func:`recall_may_differ`).

Scores are synthetic: the hit at rank ``r`` of ``n`` gets ``n - r + 1``.  The tools
sort by score, and the engine's own scores are not monotone in rank (document-first
ordering moves hits), so exporting them would re-rank the list.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pytest_groove.errors import GrooveError, flag
from pytest_groove.scoring.metrics import RankedHit, credited_entry, normalise_heading
from pytest_groove.scoring.records import ExpectedEntry

if TYPE_CHECKING:
    from pytest_groove.evaluation.reports.formats import ReportInputs

#: the run file's literal second column, and the qrels file's
RUN_ITERATION = "Q0"
QRELS_ITERATION = "0"
#: the run file's last column when none is given
DEFAULT_TAG = "groove"

_RESERVED = frozenset("%#@")


class JudgedQuery(Protocol):
    """What the qrels need from a query (GoldenQuery and QueryResult satisfy it)."""

    @property
    def id(self) -> str: ...

    @property
    def query(self) -> str: ...

    @property
    def expected(self) -> Sequence[ExpectedEntry]: ...


class RankedQuery(JudgedQuery, Protocol):
    """What the run file needs: the query and its whole ranking (QueryResult)."""

    @property
    def top_k(self) -> Sequence[RankedHit]: ...


def encode_id(text: str) -> str:
    """``text`` as one TREC field: whitespace, unprintables and ``% # @`` as ``%XX``."""
    out: list[str] = []
    for char in text:
        if char in _RESERVED or char.isspace() or not char.isprintable():
            out.append("".join(f"%{byte:02X}" for byte in char.encode("utf-8")))
        else:
            out.append(char)
    return "".join(out)


def _document_id(path: str, heading: str | None) -> str:
    if heading is None:
        return encode_id(path)
    return f"{encode_id(path)}#{encode_id(normalise_heading(heading))}"


def entry_id(entry: ExpectedEntry) -> str:
    """The document id of an expected entry: ``path`` or ``path#heading``."""
    return _document_id(entry.path, entry.heading)


def hit_ids(expected: Sequence[ExpectedEntry], hits: Sequence[RankedHit]) -> list[str]:
    """One distinct document id per hit, in ranking order (see the module docstring)."""
    consumed = [False] * len(expected)
    used: set[str] = set()
    ids: list[str] = []
    for position, hit in enumerate(hits, start=1):
        index = credited_entry(expected, consumed, hit)
        if index is not None:
            consumed[index] = True
            doc = entry_id(expected[index])
        else:
            doc = _document_id(hit.path, hit.heading)
            if doc in used:
                doc = f"{doc}@{position}"
        used.add(doc)
        ids.append(doc)
    return ids


def query_ids(
    queries: Sequence[JudgedQuery], golden: Sequence[JudgedQuery] | None = None
) -> list[str]:
    """Each query's ``qid``: its golden id encoded, ``@2``, ``@3``... on a repeat.

    Explicit ids are unique, but two queries whose texts share their first 32
    characters derive the same id; TREC files would merge them into one query.  The
    repeats are numbered in the order of ``golden`` (the whole golden set; default:
    ``queries`` themselves), so the files of a subset run (``pytest -k``) give each
    query the qid the whole run's files give it.  The empty id is ``@1``.
    """
    whole = list(queries if golden is None else golden)
    seen: dict[str, int] = {}
    numbered: list[str] = []
    for query in whole:
        qid = encode_id(query.id)
        seen[qid] = seen.get(qid, 0) + 1
        numbered.append(qid if seen[qid] == 1 and qid else f"{qid}@{seen[qid]}")
    if golden is None:
        return numbered
    # each query takes the qid of the first golden query of its id, text and expected
    # entries not taken yet (a result matching none keeps its own, as if alone)
    waiting: dict[tuple[object, ...], list[str]] = {}
    for query, qid in zip(whole, numbered, strict=True):
        waiting.setdefault(_key(query), []).append(qid)
    ids: list[str] = []
    for query in queries:
        free = waiting.get(_key(query))
        ids.append(free.pop(0) if free else query_ids([query])[0])
    return ids


def _key(query: JudgedQuery) -> tuple[object, ...]:
    return (query.id, query.query, tuple(query.expected))


def _check_tag(tag: str) -> str:
    if not tag or any(char.isspace() or not char.isprintable() for char in tag):
        raise GrooveError(
            f"TREC run tag {tag!r} must be one word (no spaces); e.g. {DEFAULT_TAG!r}"
        )
    return tag


def run_lines(
    queries: Iterable[RankedQuery],
    tag: str = DEFAULT_TAG,
    golden: Sequence[JudgedQuery] | None = None,
) -> list[str]:
    """The run file's lines: ``qid Q0 docid rank score tag``, queries in the given order
    (``golden``: the whole golden set, for the qids: :func:`query_ids`).

    A query without hits has no line; ``trec_eval -c`` (and ranx's
    ``make_comparable=True``) still count it, as 0, like our averages do.
    """
    _check_tag(tag)
    queries = list(queries)
    lines: list[str] = []
    for qid, query in zip(query_ids(queries, golden), queries, strict=True):
        hits = query.top_k
        for position, doc in enumerate(hit_ids(query.expected, hits), start=1):
            score = len(hits) - position + 1
            lines.append(f"{qid} {RUN_ITERATION} {doc} {position} {score} {tag}")
    return lines


def qrels_lines(
    queries: Iterable[JudgedQuery], golden: Sequence[JudgedQuery] | None = None
) -> list[str]:
    """The qrels file's lines: ``qid 0 docid grade``, one per expected entry (grade 0
    included: a judged, not relevant document, as qrels write it); ``golden`` as for
    :func:`run_lines`."""
    queries = list(queries)
    lines: list[str] = []
    for qid, query in zip(query_ids(queries, golden), queries, strict=True):
        for entry in query.expected:
            lines.append(f"{qid} {QRELS_ITERATION} {entry_id(entry)} {entry.grade}")
    return lines


def recall_may_differ(queries: Iterable[JudgedQuery]) -> list[str]:
    """Ids of the queries whose recall trec_eval may count lower than we do.

    Those with a path-only entry and a heading entry for the same file: one hit can
    satisfy both (two for our recall), but a TREC document matches one judgement.
    """
    ids: list[str] = []
    for query in queries:
        plain = {e.path for e in query.expected if e.heading is None}
        if any(e.heading is not None and e.path in plain for e in query.expected):
            ids.append(query.id)
    return ids


def _write(path: Path, lines: Sequence[str], what: str, option: str) -> None:
    text = "".join(f"{line}\n" for line in lines)
    try:
        with contextlib.suppress(OSError):  # as the JSON report: the folder is made
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
    except OSError as exc:
        raise GrooveError(
            f"could not write the TREC {what} {path}: {exc.strerror or exc}; "
            f"pass {option} a path in a writable folder"
        ) from None


def write_trec_run(
    path: Path,
    queries: Iterable[RankedQuery],
    tag: str = DEFAULT_TAG,
    golden: Sequence[JudgedQuery] | None = None,
) -> None:
    """Write ``queries``' rankings (a run's ``per_query``) as a TREC run file."""
    _write(path, run_lines(queries, tag, golden), "run file", f"{flag('trec-run')}")


def write_trec_qrels(
    path: Path, queries: Iterable[JudgedQuery], golden: Sequence[JudgedQuery] | None = None
) -> None:
    """Write ``queries``' expected entries (the golden set) as TREC qrels."""
    _write(path, qrels_lines(queries, golden), "qrels file", f"{flag('trec-qrels')}")


# the report table's hooks (``formats.py``): the qrels come from the run's queries too,
# so a subset run's files judge the same queries our averages do; their qids are the
# whole golden set's


def write_run_report(path: Path, inputs: ReportInputs) -> None:
    write_trec_run(path, inputs.run.per_query, golden=inputs.golden)


def write_qrels_report(path: Path, inputs: ReportInputs) -> None:
    write_trec_qrels(path, inputs.run.per_query, inputs.golden)
