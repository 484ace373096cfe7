"""The golden file: where it is, how it is read, what it may contain.

A golden file is YAML::

    queries:
      - id: rrf-basics                 # optional row key
        query: "What does the k parameter in RRF do?"
        expected:
          - path: docs/ARCHITECTURE.md
            heading: Data flow         # optional
            grade: 2                   # optional graded relevance, 0 or more (default 1)
        tags: [smoke]                  # optional
    defaults: {limit: 10, rerank: false}   # optional, parsed and ignored

It is read through the guarded reader (no symlink, hard link or non-regular file;
at most 1 MiB), parsed with a *safe* YAML loader, and validated strictly: every
problem becomes one ``GrooveError`` line of the form
``failed to parse golden file: {path}: {where}: {cause} at line {n}``.

Beyond what the reference implementation checks, this loader also refuses (each
marked "Deliberate addition" below, because each is a silent wrong result there):

- an empty ``queries`` list, and a query with an empty ``expected`` list;
- empty (or whitespace-only) query text, and a query whose positive part is empty
  once ``-term`` exclusions are taken out (it could never retrieve anything);
- two queries with the same explicit ``id`` (ids key the diff rows);
- the same expected entry twice in one query (path equal, heading equal after
  trim + lowercase), which caps nDCG below 1 for no reason;
- an expected path that is not a plain KB-relative ``/`` path: absolute, with a
  ``..``, ``.`` or empty segment, or with backslashes -- such a path can never
  equal an indexed path, so the query would be a permanent miss;
- non-string scalars where a string is expected (``query: 42``, ``path: 2024-01-01``),
  instead of coercing them;
- a key written twice in one mapping (YAML loaders otherwise keep the last one).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import hashlib
import re
import shlex
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from pytest_groove.errors import GrooveError, clip_path, flag
from pytest_groove.evaluation.golden.yaml_loader import (
    GoldenLoader,
    LineDict,
    SchemaError,
    check_fields,
    clip,
    describe,
    fail,
    join,
    key_line,
    kind,
    line_of_item,
    one_line,
    require,
    want,
    want_list,
    want_mapping,
    want_optional_string,
    want_string,
    yaml_cause,
)
from pytest_groove.files.guarded_io import GOLDEN_CAP, read_guarded
from pytest_groove.files.merge_conflicts import conflict_marker_lines, has_conflict, line_list
from pytest_groove.files.path_limits import locale_refusal, path_refusal
from pytest_groove.scoring.metrics import normalise_heading
from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery, GoldenSet
from pytest_groove.shapes import optional, read_bool, read_int

DEFAULT_GOLDEN_NAME = ".groove-eval.yml"
#: a derived query id is this many code points of the query text
QUERY_ID_CODE_POINTS = 32


def _missing_hint(kb: Path) -> str:
    """Where a golden file comes from: ``groove init`` writes a starter one in the KB."""
    init = shlex.join(["groove", "init", "--kb-path", clip_path(kb)])
    return (
        f"(hint: `{init}` writes a starter {DEFAULT_GOLDEN_NAME} listing the KB's notes; "
        f"or pass {flag('golden')})"
    )


_TOP_FIELDS = ("queries", "defaults")
_DEFAULTS_FIELDS = ("limit", "rerank")
_QUERY_FIELDS = ("query", "expected", "id", "tags")
_ENTRY_FIELDS = ("path", "heading", "grade")

#: the largest grade an expected entry may have (a 32-bit unsigned integer)
MAX_GRADE = 2**32 - 1

#: pytest's built-in markers that change a test's outcome; a tag naming one is refused
#: (markers other plugins register are checked by the plugin, which can see them)
PYTEST_BEHAVIOUR_MARKERS = frozenset(
    {"skip", "skipif", "xfail", "usefixtures", "parametrize", "filterwarnings"}
)
_NOT_MARKER_CHAR = re.compile(r"\W+")
#: a `queries` key written as a YAML key (block or flow style, quoted or not)
_LOOKS_GOLDEN = re.compile(r"""(?m)(?:^|[{,\s\ufeff])["']?queries["']?\s*:""")
#: characters that can never be part of an indexed path as written in YAML
_PATH_FORBIDDEN = {"\x00": "NUL", "\n": "newline", "\r": "carriage return"}


# --------------------------------------------------------------------------- locating


class GoldenMissing(GrooveError):
    """Nothing at the golden file's path."""


def resolve_golden_path(kb: Path, cli: Path | None, config: Path | None) -> Path:
    """Which golden file to read: ``--golden``, else ``[eval].golden``, else the default.

    ``cli`` is used as given (relative to the working directory, like any CLI path);
    ``config`` must already be resolved against the config file's directory (the
    settings loader does that); the default is ``<kb>/.groove-eval.yml``.
    """
    if cli is not None:
        return cli
    if config is not None:
        return config
    return kb / DEFAULT_GOLDEN_NAME


# --------------------------------------------------------------------------- ids and hash


def derive_query_id(query: str) -> str:
    """The default row key: the first 32 code points of the raw query text.

    Not bytes and not grapheme clusters; no trimming or normalisation.
    """
    return query[:QUERY_ID_CODE_POINTS]


def golden_hash(data: bytes) -> str:
    """SHA-256 of the exact file bytes, as 64 lowercase hex digits.

    Hashing the bytes rather than the parsed content means any edit -- even a
    comment -- changes the fingerprint, so runs are never compared across edits.
    """
    return hashlib.sha256(data).hexdigest()


#: what a pytest node id cannot hold in one name: ``[`` and ``]`` (parametrisation),
#: ``::`` (the node separator), whitespace (``-k`` and shells split there) and control,
#: format or lone surrogate characters (invisible in a terminal, refused by JUnit XML)
_NODE_FORBIDDEN_CHARS = frozenset("[]")
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})
#: in a slug of query text, ASCII punctuation other than ``_ . -`` goes too (``?``, ``'``)
_SLUG_FORBIDDEN_CHARS = frozenset(chr(c) for c in range(128) if not chr(c).isalnum()) - set("_.-")
_SEPARATOR_RUN = re.compile(r":{2,}")
#: explicit ids longer than this are shortened, to keep node ids readable
_NODE_ID_MAX_KEEP = 64
_SLUG_MAX = 40
_NODE_HASH_CHARS = 8


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_NODE_HASH_CHARS]


def _escaped(text: str, forbidden: frozenset[str]) -> str:
    """``text`` with each run of forbidden characters (and of ``::``) turned into one
    ``-``; such runs at either end are dropped rather than left as a dangling ``-``.
    """
    spaced = _SEPARATOR_RUN.sub(" ", text)
    kept = "".join(
        " " if ch in forbidden or unicodedata.category(ch) in _INVISIBLE_CATEGORIES else ch
        for ch in spaced
    )
    return "-".join(kept.split())


def _slug(text: str) -> str:
    """``text`` in the user's own script, ASCII punctuation but ``_ . -`` escaped too."""
    return _escaped(text, _SLUG_FORBIDDEN_CHARS).strip("-")[:_SLUG_MAX].rstrip("-")


def _slug_with_hash(label: str, hashed: str) -> str:
    slug = _slug(label)
    digest = _short_hash(hashed)
    return f"{slug}-{digest}" if slug else f"q-{digest}"


def node_id_for(query: GoldenQuery) -> str:
    """A pytest node-id fragment for ``query`` that reads as the id was written.

    Never a ``[``, ``]``, ``::``, whitespace or control character, the characters
    pytest's node-id syntax, ``-k`` or a JUnit consumer trip on; every other
    character, Japanese or accented, is kept, so ``pytest -k 入社初日`` selects the
    query whose id is ``入社初日``.

    - An explicit id becomes itself with each run of those characters replaced by
      ``-`` (``billing [EU]`` -> ``billing-EU``), when that leaves 1 to 64 characters
      and is not ``.`` or ``..``; otherwise its slug plus 8 hex digits of its SHA-256.
    - A derived id becomes the slug of its 32 code points (ASCII punctuation other than
      ``_ . -`` also replaced) plus 8 hex digits of the SHA-256 of the *whole* query
      text, so two queries sharing their first 32 code points get different node ids.

    Node ids only name pytest items; a run's stored queries keep their ``id`` and are
    paired with earlier runs by id, text and expected entries, never by node id.
    Two queries can still map to one node id; :func:`node_ids` resolves that for a
    whole golden set.
    """
    if query.explicit_id:
        ident = query.id
        escaped = _escaped(ident, _NODE_FORBIDDEN_CHARS)
        if 0 < len(escaped) <= _NODE_ID_MAX_KEEP and escaped not in (".", ".."):
            return escaped
        return _slug_with_hash(ident, ident)
    return _slug_with_hash(query.id, query.query)


def node_ids(queries: Sequence[GoldenQuery]) -> list[str]:
    """:func:`node_id_for` for each query, made unique within the set.

    A node id already taken by an earlier query gets ``-2``, ``-3``, ... appended
    (the first suffix not taken), so the result depends only on the file's content
    and order.
    """
    taken: set[str] = set()
    result: list[str] = []
    for query in queries:
        base = node_id_for(query)
        candidate = base
        suffix = 2
        while candidate in taken:
            candidate = f"{base}-{suffix}"
            suffix += 1
        taken.add(candidate)
        result.append(candidate)
    return result


def _check_defaults(value: object, line: int) -> None:
    """``defaults`` is reserved: its fields are type-checked, then ignored."""
    if value is None:
        return
    defaults = want_mapping(value, "defaults", line, "a mapping with `limit` and/or `rerank`")
    check_fields(defaults, _DEFAULTS_FIELDS, "defaults")
    if "limit" in defaults:
        want(
            optional(_u32),
            defaults["limit"],
            "defaults.limit",
            key_line(defaults, "limit"),
            lambda limit: f"invalid value: {describe(limit)}, expected a non-negative integer",
        )
    if "rerank" in defaults:
        want(
            optional(read_bool),
            defaults["rerank"],
            "defaults.rerank",
            key_line(defaults, "rerank"),
            lambda rerank: f"invalid type: {describe(rerank)}, expected a boolean",
        )


def _u32(value: Any, path: str) -> int:
    return read_int(value, path, lo=0, hi=MAX_GRADE)


def _check_path(path: str, where: str, line: int, kb: Path) -> None:
    """Deliberate addition: an expected path must be a plain KB-relative ``/`` path.

    The index stores paths relative to the KB with ``/`` separators and no ``.``
    segments, and the hit rule compares byte for byte; any other spelling is a
    query that can never pass, so it is refused with the fix.
    """
    if path == "":
        fail(where, "the path is empty; write it relative to the knowledge base", line)
    for char, name in _PATH_FORBIDDEN.items():
        if char in path:
            # Deliberate addition: such a path can never equal an indexed one.
            fail(where, f"path `{clip(path)}` contains a {name} character; remove it", line)
    _check_os_limits(path, where, line)
    if "\\" in path:
        # the fix must itself be accepted: runs of separators are one, `.` segments none
        fixed = "/".join(s for s in re.split(r"[\\/]+", path) if s not in ("", "."))
        fail(
            where,
            f"path `{clip(path)}` uses backslashes; write it with `/` (`{clip(fixed)}`)",
            line,
        )
    if path.startswith("/") or re.match(r"[A-Za-z]:/", path):
        hint = "write it relative to the knowledge base"
        try:
            inside = Path(path).relative_to(kb.resolve()).as_posix()
        except ValueError:
            inside = ""
        if inside and inside != ".":
            hint += f" (`{clip(inside)}`)"
        fail(where, f"path `{clip(path)}` is absolute; {hint}", line)
    segments = path.split("/")
    if ".." in segments:
        fail(
            where,
            f"path `{clip(path)}` contains `..`; expected paths must stay inside the "
            "knowledge base",
            line,
        )
    if "." in segments or "" in segments:
        fail(
            where,
            f"path `{clip(path)}` has an empty or `.` segment; write it the way the index "
            "does, e.g. `docs/a.md`",
            line,
        )


def _check_os_limits(path: str, where: str, line: int) -> None:
    """Deliberate addition: a path no file can have would fail later where it is
    looked at (``ENAMETOOLONG``, ``UnicodeEncodeError``), as a traceback."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        fail(
            where,
            f"path `{clip(path)}` holds a lone surrogate (`\\ud800`-`\\udfff`), which no "
            "indexed file name can; remove it",
            line,
        )
    locale = locale_refusal(path)
    if locale is not None:
        fail(where, f"path `{clip(path)}` {locale}", line)
    problem = path_refusal(path)
    if problem is not None:
        fail(where, f"path `{clip(path)}` {problem}, so no file can have it; shorten it", line)


def _parse_entry(value: object, where: str, line: int, kb: Path) -> ExpectedEntry:
    entry = want_mapping(value, where, line, "a mapping with `path` (and optional `heading`)")
    check_fields(entry, _ENTRY_FIELDS, where)
    raw_path = require(entry, "path", where)
    path_line = key_line(entry, "path")
    path = want_string(raw_path, join(where, "path"), path_line)
    _check_path(path, join(where, "path"), path_line, kb)
    heading = want_optional_string(
        entry.get("heading"), join(where, "heading"), key_line(entry, "heading")
    )
    grade = 1
    if "grade" in entry:
        grade = want(
            _u32,
            entry["grade"],
            join(where, "grade"),
            key_line(entry, "grade"),
            lambda value: (
                f"invalid value: {describe(value)}, expected a whole number from 0 to "
                f"{MAX_GRADE} (1 = relevant, the default; 0 = judged not relevant)"
            ),
        )
    return ExpectedEntry(path=path, heading=heading, line=path_line, grade=grade)


def _parse_expected(query_map: LineDict, where: str, kb: Path) -> tuple[ExpectedEntry, ...]:
    raw = require(query_map, "expected", where)
    here = join(where, "expected")
    line = key_line(query_map, "expected")
    items = want_list(raw, here, line, "a list of expected entries (`path`, optional `heading`)")
    if not items:
        # Deliberate addition: the reference searches such a query and leaves it out
        # of the averages; a query that cannot be scored is a mistake in the file.
        fail(here, "the list is empty; name at least one `path` this query should find", line)
    entries: list[ExpectedEntry] = []
    seen: dict[tuple[str, str | None], int] = {}
    for index, item in enumerate(items):
        item_where = f"{here}[{index}]"
        item_line = line_of_item(items, index)
        entry = _parse_entry(item, item_where, item_line, kb)
        key = (
            entry.path,
            None if entry.heading is None else normalise_heading(entry.heading),
        )
        if key in seen:
            # Deliberate addition: a duplicate needs a second distinct hit to be
            # credited, so it silently caps nDCG below 1.
            fail(
                item_where,
                f"repeats {here}[{seen[key]}] (same path and heading); remove one",
                item_line,
            )
        seen[key] = index
        entries.append(entry)
    if not any(entry.relevant for entry in entries):
        # a query judged only "not relevant" has nothing to find: it cannot be scored
        fail(here, "every entry has grade 0; give at least one a grade of 1 or more", line)
    return tuple(entries)


def marker_name_for_tag(tag: str) -> str | None:
    """The pytest marker a golden ``tags`` entry becomes (None when nothing usable is left).

    Markers must be usable in ``-m`` expressions, so runs of characters other than
    letters, digits and ``_`` become ``_`` ("needs review" -> ``needs_review``); a
    leading ``_`` or digit is not allowed by pytest's mark generator and is dropped.
    """
    name = _NOT_MARKER_CHAR.sub("_", tag.strip()).strip("_")
    name = name.lstrip("0123456789_")
    return name or None


def _parse_tags(query_map: LineDict, where: str) -> tuple[str, ...]:
    raw = query_map.get("tags")
    if raw is None:
        return ()
    here = join(where, "tags")
    items = want_list(raw, here, key_line(query_map, "tags"), "a list of strings")
    tags: list[str] = []
    for index, item in enumerate(items):
        item_where = f"{here}[{index}]"
        item_line = line_of_item(items, index)
        tag = want_string(item, item_where, item_line)
        marker = marker_name_for_tag(tag)
        if marker in PYTEST_BEHAVIOUR_MARKERS:
            # Deliberate addition: tags become pytest markers, and these markers act:
            # `skip` would turn every run into a subset run (nothing recorded, the
            # gate silently off), `xfail` would turn a miss into an expected failure.
            fail(
                item_where,
                f"tag `{clip(tag)}` would become pytest's `{marker}` marker and change "
                f"this query's outcome; rename it (for example `needs-{marker}`)",
                item_line,
            )
        tags.append(tag)
    return tuple(tags)


def query_text_problem(text: str) -> str | None:
    """Why a golden file refuses ``text`` as a query's text, or None when it takes it
    (also asked by ``groove import beir``, so it never writes a query eval refuses)."""
    if not text.strip():
        # Deliberate addition: an empty query retrieves nothing meaningful.
        return "the query text is empty"
    if not text.replace("\x00", " ").strip():
        # Deliberate addition: NUL is dropped before searching, so this is empty too.
        return "the query text holds nothing but NUL characters and whitespace"
    # Deliberate addition (the seed's v1.1.0 rule): a query that only excludes
    # terms has nothing positive to search for.  The query compiler says why.
    # The query compiler is the authority on what a query means; it is imported on
    # use so that importing this module (ids, hashing) stays cheap.
    from pytest_groove.search.query.fts_query import parse_query

    try:
        parse_query(text)
    except GrooveError as exc:
        return one_line(exc.message)
    return None


def _check_query_text(text: str, where: str, line: int) -> None:
    problem = query_text_problem(text)
    if problem is not None:
        fail(where, problem, line)


def _parse_query(value: object, where: str, line: int, kb: Path) -> GoldenQuery:
    query_map = want_mapping(value, where, line, "a mapping with `query` and `expected`")
    check_fields(query_map, _QUERY_FIELDS, where)
    raw_text = require(query_map, "query", where)
    text_line = key_line(query_map, "query")
    text = want_string(raw_text, join(where, "query"), text_line)
    explicit = want_optional_string(
        query_map.get("id"), join(where, "id"), key_line(query_map, "id")
    )
    expected = _parse_expected(query_map, where, kb)
    tags = _parse_tags(query_map, where)
    _check_query_text(text, join(where, "query"), text_line)
    return GoldenQuery(
        id=explicit if explicit is not None else derive_query_id(text),
        query=text,
        expected=expected,
        tags=tags,
        line=query_map.line,
        explicit_id=explicit is not None,
    )


def _parse_document(doc: object, kb: Path) -> tuple[GoldenQuery, ...]:
    if doc is None:
        fail("", "the file holds no YAML document; expected a mapping with a `queries` list", 0)
    top = want_mapping(
        doc, "", getattr(doc, "line", 1), "a mapping with a `queries` list at the top level"
    )
    # `queries` first: a file that is not a golden file gets "missing field", never
    # an "unknown field" message quoting its first key (its content)
    raw_queries = require(top, "queries", "")
    check_fields(top, _TOP_FIELDS, "")
    _check_defaults(top.get("defaults"), key_line(top, "defaults"))
    queries_line = key_line(top, "queries")
    items = want_list(raw_queries, "queries", queries_line, "a list of queries")
    if not items:
        # Deliberate addition: a golden set with no queries measures nothing, and a
        # run of it would record an all-zero baseline.
        fail("queries", "the list is empty; add at least one query", queries_line)
    queries: list[GoldenQuery] = []
    explicit_ids: dict[str, int] = {}
    for index, item in enumerate(items):
        where = f"queries[{index}]"
        query = _parse_query(item, where, line_of_item(items, index), kb)
        if query.explicit_id:
            if query.id in explicit_ids:
                # Deliberate addition: ids key the per-query diff rows; a repeated
                # id would silently compare against the wrong query.
                first = explicit_ids[query.id]
                fail(
                    f"{where}.id",
                    f"duplicate id `{clip(query.id)}` (already used by queries[{first}] at "
                    f"line {queries[first].line}); ids must be unique",
                    query.line,
                )
            explicit_ids[query.id] = index
        queries.append(query)
    return tuple(queries)


# --------------------------------------------------------------------------- loading


def load_golden(path: Path, kb: Path) -> GoldenSet:
    """Read, parse and validate the golden file at ``path``.

    ``kb`` is the knowledge base the expected paths are relative to (used to suggest
    the relative spelling of an absolute path).  Raises :class:`GrooveError` with a
    single line for a missing, refused, unreadable or invalid file.
    """
    data = read_guarded(path, "golden file", GOLDEN_CAP, within=kb)
    if data is None:
        raise GoldenMissing(f"no golden file at {clip_path(path)} {_missing_hint(kb)}")
    prefix = f"failed to parse golden file: {clip_path(path)}"
    doc = _yaml_document(_utf8_text(data, prefix), prefix)
    try:
        queries = _parse_document(doc, kb)
    except SchemaError as exc:
        raise GrooveError(f"{prefix}: {exc.render()}") from None
    return GoldenSet(path=str(path), hash=golden_hash(data), queries=queries)


def _utf8_text(data: bytes, prefix: str) -> str:
    nul = data.find(b"\x00")
    if nul >= 0 and data.count(b"\x00") * 4 >= len(data):
        # UTF-16/32 without a byte-order mark decodes as UTF-8 full of NULs: say so
        # rather than "not a golden file" (a quarter of the bytes: never a stray NUL)
        raise GrooveError(
            f"{prefix}: a quarter or more of its bytes are NUL (first at offset "
            f"{nul}): saved as UTF-16 or UTF-32? save the file as UTF-8"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        utf16 = (
            " (it starts with a UTF-16 byte-order mark)"
            if data.startswith((b"\xff\xfe", b"\xfe\xff"))
            else ""
        )
        raise GrooveError(
            f"{prefix}: not valid UTF-8 (first bad byte at offset {exc.start}, line {line})"
            f"{utf16}; save the file as UTF-8"
        ) from None


def _yaml_document(text: str, prefix: str) -> object:
    # A file with no `queries` key is not a golden file at all (a wrong path,
    # `golden = "/etc/shadow"`): its messages never quote any of its content.
    looks_golden = _LOOKS_GOLDEN.search(text) is not None
    not_golden = (
        f"{prefix}: this is not a golden file (no top-level `queries:` key); point "
        f"{flag('golden')} or [eval].golden at the YAML file with your queries"
    )
    try:
        # GoldenLoader is a SafeLoader: no arbitrary Python objects are built.
        doc = yaml.load(text, Loader=GoldenLoader)
    except yaml.YAMLError as exc:
        if has_conflict(text):
            # the parser names the line after a marker; the cause is the merge
            raise GrooveError(
                f"{prefix}: merge conflict markers at "
                f"{line_list(conflict_marker_lines(text))}: resolve the conflict, keeping "
                "the queries of both sides you want"
            ) from None
        raise GrooveError(f"{prefix}: {yaml_cause(exc)}" if looks_golden else not_golden) from None
    except RecursionError:
        raise GrooveError(f"{prefix}: invalid YAML: nested too deeply") from None
    if not looks_golden and doc is not None and not isinstance(doc, LineDict):
        raise GrooveError(
            f"{prefix}: invalid type: {kind(doc)}, expected a mapping with a `queries` list "
            "at the top level"
        )
    return doc
