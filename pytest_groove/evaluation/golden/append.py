"""``groove golden add``'s library half: one query appended to a golden file, every
byte already in it kept.

The new entry is generated as YAML by ruamel.yaml (quoting whatever the text needs)
and inserted as text right after the last item of the ``queries`` list, indented like
that list's own items; the bytes before it and after it are the file's own bytes,
unchanged -- comments, blank lines, quoting, key order.  The result is parsed again
with the golden loader, with all its checks, and must read as the old queries plus the
new one before it replaces the file (atomically: :mod:`pytest_groove.files.atomic`).

A ``queries`` list written in flow style (``queries: [...]``) is refused: there is no
place to add a block item without rewriting the line.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml
import yaml.nodes

from pytest_groove.errors import GrooveError, clip, clip_path
from pytest_groove.evaluation.golden.file import GoldenMissing, golden_from_bytes
from pytest_groove.files.atomic import write_atomic
from pytest_groove.files.guarded_io import GOLDEN_CAP, read_guarded
from pytest_groove.scoring.records import ExpectedEntry, GoldenSet


@dataclass(frozen=True)
class NewQuery:
    """What ``groove golden add`` appends: the text, its answers, an optional id and tags."""

    query: str
    expected: tuple[ExpectedEntry, ...]
    id: str | None = None
    tags: tuple[str, ...] = ()


def entry_yaml(new: NewQuery, indent: int) -> str:
    """The new query as one block item of a YAML list, each line ``indent`` spaces in."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    item = CommentedMap()
    if new.id is not None:
        item["id"] = new.id
    item["query"] = new.query
    if new.tags:
        tags = CommentedSeq(new.tags)
        tags.fa.set_flow_style()
        item["tags"] = tags
    expected = CommentedSeq()
    for entry in new.expected:
        answer = CommentedMap(path=entry.path)
        if entry.heading is not None:
            answer["heading"] = entry.heading
        expected.append(answer)
    item["expected"] = expected
    dumper = YAML()
    dumper.indent(mapping=2, sequence=4, offset=2)
    dumper.width = 4096  # one line per value, as people write them
    dumper.allow_unicode = True
    out = io.StringIO()
    dumper.dump(CommentedSeq([item]), out)
    # ruamel indents a top-level list by its offset: take that off, put the file's on
    lines = [line[2:] if line.startswith("  ") else line for line in out.getvalue().splitlines()]
    return "".join(" " * indent + line + "\n" for line in lines)


def _queries_node(text: str, where: str) -> yaml.nodes.SequenceNode:
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if isinstance(root, yaml.nodes.MappingNode):
        for key, value in root.value:
            named = isinstance(key, yaml.nodes.ScalarNode) and key.value == "queries"
            if named and isinstance(value, yaml.nodes.SequenceNode) and value.value:
                if value.flow_style:
                    raise GrooveError(
                        f"{where}: its `queries` list is written in flow style "
                        "(`queries: [...]`); write it as a block list (`- query: ...` "
                        "items) to add queries to it"
                    )
                return value
    raise GrooveError(f"{where}: no `queries` list to add to")  # the loader said why


def _last_leaf(node: yaml.nodes.Node) -> yaml.nodes.Node:
    while isinstance(node, (yaml.nodes.SequenceNode, yaml.nodes.MappingNode)) and node.value:
        last = node.value[-1]
        node = last[1] if isinstance(last, tuple) else last
    return node


@dataclass(frozen=True)
class Insertion:
    """Where a new item of ``queries`` goes, and how it is laid out."""

    #: the offset just past the line that ends the last item
    offset: int
    #: the column of the list's ``-``
    column: int
    #: the items are separated by a blank line (the new one gets one too)
    spaced: bool


def insertion_point(text: str, where: str) -> Insertion:
    """Where a new item of the ``queries`` list of ``text`` goes."""
    queries = _queries_node(text, where)
    last = queries.value[-1]
    end = _last_leaf(last).end_mark
    if end.column == 0:
        offset = end.index  # a block scalar ends with its line break
    else:
        newline = text.find("\n", end.index)
        offset = len(text) if newline < 0 else newline + 1
    line_start = text.rfind("\n", 0, last.start_mark.index) + 1
    spaced = len(queries.value) > 1 and text[:line_start].endswith("\n\n")
    return Insertion(offset, queries.start_mark.column, spaced)


def appended_text(text: str, new: NewQuery, where: str) -> str:
    """``text`` with ``new`` inserted after the last golden query, nothing else changed."""
    at = insertion_point(text, where)
    head, tail = text[: at.offset], text[at.offset :]
    joint = "" if not head or head.endswith("\n") else "\n"
    if at.spaced:
        joint += "\n"
    return head + joint + entry_yaml(new, at.column) + tail


def _check_same_plus_one(old: GoldenSet, new: GoldenSet, query: NewQuery, where: str) -> None:
    added = new.queries[-1] if len(new.queries) == len(old.queries) + 1 else None
    if (
        added is None
        or new.queries[:-1] != old.queries
        or added.query != query.query
        or added.expected != query.expected
        or added.tags != query.tags
        or (query.id is not None and added.id != query.id)
    ):
        # never expected: the text was inserted where YAML ends the list
        raise GrooveError(
            f"{where}: the new query would not read back as the last of its queries; "
            "the file was left unchanged (add it by hand)"
        )


def refuse_taken_id(golden: GoldenSet, ident: str | None) -> None:
    """An ``--id`` another query already has (written or derived) is refused."""
    if ident is None:
        return
    for query in golden.queries:
        if query.id == ident:
            raise GrooveError(
                f"golden file {clip_path(Path(golden.path))}: id `{clip(ident)}` is already "
                f"used by the query at line {query.line}; pick another --id"
            )


def append_query(
    path: Path, kb: Path, new: NewQuery, check: Callable[[GoldenSet], None] | None = None
) -> GoldenSet:
    """Append ``new`` to the golden file at ``path`` (validated, atomically); the new
    golden set.  Every byte before the new entry, and after it, is the file's own.
    ``check`` is asked about the new golden set before it is written (the door checks
    the new entries against the index)."""
    data = read_guarded(path, "golden file", GOLDEN_CAP, within=kb)
    if data is None:
        raise GoldenMissing(
            f"no golden file at {clip_path(path)} (hint: `groove init` writes a starter "
            "one, or pass --golden)"
        )
    old = golden_from_bytes(data, path, kb)
    refuse_taken_id(old, new.id)
    where = f"golden file {clip_path(path)}"
    text = appended_text(data.decode("utf-8"), new, where)
    written = text.encode("utf-8")
    golden = golden_from_bytes(written, path, kb)
    _check_same_plus_one(old, golden, new, where)
    if check is not None:
        check(golden)
    write_atomic(path, written)
    return golden


def entries_for(hits: Sequence[tuple[str, str | None]]) -> tuple[ExpectedEntry, ...]:
    """Expected entries for the picked hits (path and heading), the same answer once."""
    return tuple(dict.fromkeys(ExpectedEntry(path, heading) for path, heading in hits))
