"""Starter files for a knowledge base: a commented golden file and a ``groove.toml``.

``groove init`` writes them.  The golden file lists the KB's documents and their
headings as comments (so writing the first queries is choosing from a list) and shows
one entry of each kind: single answer, several answers, a heading-level answer and a
tagged one.  The examples point at real documents of the KB when it has any; every
entry is commented out, so the file loads as an empty golden set until the user writes
queries.  ``groove.toml`` holds every key with its default, commented out.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_groove.evaluation.history.accepted import BASELINE_FILE_NAME
from pytest_groove.evaluation.history.format import BACKUP_MARK, HISTORY_FILE_NAME
from pytest_groove.files.beneath import Skipped, open_root, read_beneath
from pytest_groove.kb.source.markdown import (
    MERGE_THRESHOLD_BYTES,
    Section,
    merged_headings,
    parse_markdown,
)
from pytest_groove.kb.source.walk import collect_files
from pytest_groove.settings.config import EvalSettings, IndexSettings, SearchSettings, Settings

#: the most documents listed in the golden file's comments (a big KB gets a note)
MAX_LISTED_DOCUMENTS = 200
#: bytes read from each document to find its headings
HEADING_SCAN_BYTES = 256 * 1024
#: a document larger than this is listed without its headings
HEADING_READ_CAP = 8 * 1024 * 1024
#: ``groove init`` stops listing (one line) past this many files and folders: a KB is
#: a folder of notes, and ``--kb-path /`` must not walk the whole file system
MAX_WALKED_ENTRIES = 100_000


@dataclass(frozen=True)
class DocumentOutline:
    path: str
    headings: tuple[str, ...]
    #: headings whose short section was merged into another chunk: (heading, kept as)
    merged: tuple[tuple[str, str | None], ...] = ()


def outline(kb: Path, settings: Settings) -> tuple[list[DocumentOutline], int]:
    """The KB's indexable Markdown documents and their headings (at most
    :data:`MAX_LISTED_DOCUMENTS`), and how many documents there are in all.

    The walk stops (one :class:`~pytest_groove.kb.source.walk.TooManyEntries` line) after
    :data:`MAX_WALKED_ENTRIES` entries.  Each document is read below the KB without
    following links, as the indexer reads it, so a file swapped for a link to
    something outside never lends its headings to the starter file.
    """
    collected = collect_files(kb, settings.index, max_entries=MAX_WALKED_ENTRIES)
    files = [f for f in collected.files if f.lower().endswith(".md")]
    listed: list[DocumentOutline] = []
    root = kb.resolve()
    root_fd = open_root(root)
    try:
        for rel in files[:MAX_LISTED_DOCUMENTS]:
            headings: tuple[str, ...] = ()
            merged: tuple[tuple[str, str | None], ...] = ()
            try:
                data = read_beneath(
                    root_fd, root, rel, collected.identities.get(rel), HEADING_READ_CAP
                )
                text = data[:HEADING_SCAN_BYTES].decode("utf-8", "replace")
                document = parse_markdown(text, settings.index.exclude_headings)
                headings = _listed_headings(document.sections)
                merged = tuple(merged_headings(text, settings.index.exclude_headings).items())
            except (Skipped, ValueError):
                # listed without headings; the indexer reports the problem
                headings, merged = (), ()
            listed.append(DocumentOutline(rel, headings, merged))
    finally:
        os.close(root_fd)
    return listed, len(files)


def _listed_headings(sections: Sequence[Section]) -> tuple[str, ...]:
    """The sections' headings; the pieces of a section cut for its size share its
    heading, which is listed once."""
    listed: list[str] = []
    previous: str | None = None
    for section in sections:
        if section.heading and section.heading != previous:
            listed.append(section.heading)
        previous = section.heading
    return tuple(listed)


def _quote(text: str) -> str:
    """``text`` as a double-quoted YAML scalar."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _merged_line(heading: str, into: str | None) -> str:
    where = "the opening text" if into is None else _one_line(into)
    return (
        f"#     (merged: {_one_line(heading)} -> {where}; under {MERGE_THRESHOLD_BYTES} "
        "bytes, not a heading to pin)"
    )


#: what ``groove init`` adds to the KB's ``.gitignore``: the index, the local run log
#: with its lock, backups and a killed save's temporary files, and a killed accept's
#: temporary file -- everything an ordinary run writes, so it never modifies a tracked
#: file (the accepted baseline itself is committed)
GITIGNORE_LINES = (
    ".groove/",  # kb.indexer.GROOVE_DIR_NAME; not imported: init needs no numpy or SQLite
    HISTORY_FILE_NAME,
    f"{HISTORY_FILE_NAME}.lock",
    f"{HISTORY_FILE_NAME}{BACKUP_MARK}*",
    f"{HISTORY_FILE_NAME}.*.tmp",
    f"{BASELINE_FILE_NAME}.*.tmp",
)


def missing_gitignore_lines(existing: str | None) -> list[str]:
    """The :data:`GITIGNORE_LINES` not already in ``existing`` (a .gitignore's text)."""
    present = set() if existing is None else {line.strip() for line in existing.splitlines()}
    return [line for line in GITIGNORE_LINES if line not in present]


def golden_starter(documents: Sequence[DocumentOutline], total: int) -> str:
    """The commented starter golden file for these documents."""
    first = documents[0] if documents else DocumentOutline("guide/setup.md", ("Installing",))
    second = documents[1] if len(documents) > 1 else DocumentOutline("guide/faq.md", ())
    heading = next((h for d in documents for h in d.headings), "Installing")
    heading_doc = next((d.path for d in documents if heading in d.headings), first.path)
    lines = [
        "# Golden queries: questions whose answers you know, and where the answers are.",
        "# Each query becomes one pytest test (`pytest --groove-kb KB`) and one row of",
        "# `groove eval --kb-path KB`. Write questions the way your users ask them, not",
        "# copied from the headings. Uncomment an example below, edit it, add more.",
        "#",
        "# expected: the documents (KB-relative paths) that answer the query; a `heading`",
        "# narrows an answer to one section. `tags` become pytest markers (-m smoke).",
        "",
        "queries: []",
        "",
        "# To start, replace `queries: []` above with these examples, uncommented and edited:",
        "",
        "# queries:",
        "#   # one document answers it",
        "#   - id: first-question",
        f"#     query: {_quote('how do I ...')}",
        "#     expected:",
        f"#       - path: {_quote(first.path)}",
        "#",
        "#   # any of several documents is a right answer",
        "#   - id: second-question",
        f"#     query: {_quote('where is ... explained')}",
        "#     expected:",
        f"#       - path: {_quote(first.path)}",
        f"#       - path: {_quote(second.path)}",
        "#",
        "#   # the answer is one section of a document",
        "#   - id: heading-level",
        f"#     query: {_quote('what happens when ...')}",
        "#     expected:",
        f"#       - path: {_quote(heading_doc)}",
        f"#         heading: {_quote(_one_line(heading))}",
        "#",
        "#   # tags become pytest markers: pytest --groove-kb KB -m smoke",
        "#   - id: smoke-question",
        f"#     query: {_quote('which ... should I use')}",
        "#     tags: [smoke]",
        "#     expected:",
        f"#       - path: {_quote(first.path)}",
        "",
        f"# The documents of this knowledge base ({total}) and their headings:",
    ]
    for document in documents:
        lines.append(f"#   {document.path}")
        lines += [f"#     - {_one_line(h)}" for h in document.headings]
        lines += [_merged_line(heading, into) for heading, into in document.merged]
    if total > len(documents):
        lines.append(f"#   ... and {total - len(documents)} more")
    if not documents:
        lines.append("#   (none yet: groove indexes *.md files)")
    return "\n".join(lines) + "\n"


def toml_starter(defaults: Settings) -> str:
    """``groove.toml`` with every key at its default, commented out.

    Every key the config reader accepts is here (a test compares the two), each with
    its default; a key whose default is "not set" (an optional gate, a retriever's
    name) shows an example, and its comment starts with ``example``.
    """
    body = [
        "# groove.toml: settings of this knowledge base (docs/configuration.md).",
        "# Every key is shown with its default, commented out: uncomment what you change.",
        "",
        *_index_lines(defaults.index, defaults.search),
        "",
        *_search_lines(defaults.search),
        "",
        *_eval_lines(defaults.eval),
        "",
        *_RETRIEVER_LINES,
    ]
    return "\n".join(body) + "\n"


def _toml_list(values: Sequence[object]) -> str:
    return "[" + ", ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in values) + "]"


def _toml_bool(value: bool) -> str:
    return str(value).lower()


def _index_lines(idx: IndexSettings, search: SearchSettings) -> list[str]:
    """The top-level keys, ``[parsers]`` and ``[contextual]``."""
    return [
        f'# model = "{idx.model}"            # embedding model (hash: fast, lexical)',
        f'# reranker = "{search.reranker or "none"}"',
        f"# exclude_dirs = {_toml_list(idx.exclude_dirs)}",
        f"# exclude_headings = {_toml_list(idx.exclude_headings)}",
        '# index_dir = ".cache/groove"  # example; default <kb>/.groove/<model>/',
        f'# vector_index = "{idx.vector_index}"       # or "hnsw" (approximate)',
        "",
        "# [parsers]",
        f"# enabled = {_toml_list(idx.parsers)}",
        "",
        "# [contextual]",
        f"# enabled = {_toml_bool(idx.contextual)}",
        f"# full_text = {_toml_bool(idx.contextual_full_text)}",
    ]


def _search_lines(search: SearchSettings) -> list[str]:
    """``[search]`` and its fusion, MMR and parent-retriever tables."""
    fusion, mmr, parent = search.fusion, search.mmr, search.parent_retriever
    return [
        "# [search]",
        f"# min_confidence_ratio = {search.min_confidence_ratio}",
        f"# fts_query_version = {search.fts_query_version}",
        f"# vector_centring = {_toml_bool(search.vector_centring)}",
        f"# fts_script_gate = {_toml_bool(search.fts_script_gate)}",
        f"# fts_coverage_vote = {_toml_bool(search.fts_coverage_vote)}",
        f"# document_first = {_toml_bool(search.document_first)}",
        f"# note_order = {_toml_bool(search.note_order)}",
        "",
        "# [search.fusion]",
        f"# rrf_k = {fusion.rrf_k}",
        f"# bm25_heading_weight = {fusion.bm25_heading_weight}",
        f"# bm25_context_weight = {fusion.bm25_context_weight}",
        f"# bm25_content_weight = {fusion.bm25_content_weight}",
        "",
        "# [search.mmr]",
        f"# enabled = {_toml_bool(mmr.enabled)}",
        f"# lambda = {mmr.lambda_}",
        f"# same_doc_penalty = {mmr.same_doc_penalty}",
        "",
        "# [search.parent_retriever]",
        f"# enabled = {_toml_bool(parent.enabled)}",
        f"# whole_doc_threshold_tokens = {parent.whole_doc_threshold_tokens}",
        f"# max_expanded_tokens = {parent.max_expanded_tokens}",
    ]


def _eval_lines(ev: EvalSettings) -> list[str]:
    return [
        "# [eval]",
        '# golden = ".groove-eval.yml"',
        f"# history_size = {ev.history_size}",
        f"# k_values = {_toml_list(ev.k_values)}",
        f"# regression_threshold = {ev.regression_threshold}",
        "# significance = 0.05  # example; default off: a drop counts only with p < this",
        '# fail_under = "mrr=0.8"  # example; default: no floors',
        f"# metrics = {_toml_list(ev.metrics)}  # also: precision, hit_rate, map, r_precision",
        '# baseline_file = ".groove-baseline.json"  # the accepted baseline (committed)',
        f"# strict = {str(ev.strict).lower()}  # true: known misses of the baseline fail too",
    ]


#: ``[retriever]`` has no defaults: every key is an example
_RETRIEVER_LINES = (
    "# [retriever]  # a team's own retriever (docs/retrievers.md); default: none",
    '# name = "team-search-v2"  # example',
    "# timeout = 30.0  # example",
    '# token_env = "SEARCH_TOKEN"  # example',
    '# path_key = "source"  # example',
    '# heading_key = "heading"  # example',
)
