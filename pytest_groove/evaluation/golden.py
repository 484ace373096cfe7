"""The golden file: where it is, how it is read, what it may contain.

A golden file is YAML::

    queries:
      - id: rrf-basics                 # optional row key
        query: "What does the k parameter in RRF do?"
        expected:
          - path: docs/ARCHITECTURE.md
            heading: Data flow         # optional
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
"""

from __future__ import annotations

import datetime
import hashlib
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import yaml
import yaml.constructor
import yaml.nodes

from pytest_groove.errors import GrooveError, clip_path
from pytest_groove.evaluation.guarded_io import GOLDEN_CAP, read_guarded
from pytest_groove.evaluation.metrics import normalise_heading
from pytest_groove.evaluation.records import ExpectedEntry, GoldenQuery, GoldenSet

DEFAULT_GOLDEN_NAME = ".groove-eval.yml"
#: a derived query id is this many code points of the query text
QUERY_ID_CODE_POINTS = 32

_MISSING_HINT = "(hint: pass --golden or create <kb>/.groove-eval.yml)"

_TOP_FIELDS = ("queries", "defaults")
_DEFAULTS_FIELDS = ("limit", "rerank")
_QUERY_FIELDS = ("query", "expected", "id", "tags")
_ENTRY_FIELDS = ("path", "heading")

_U32_MAX = 2**32 - 1

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


_NODE_SAFE = re.compile(r"[A-Za-z0-9_.\-]+")
_NODE_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9_.\-]+")
#: explicit ids longer than this are shortened, to keep node ids readable
_NODE_ID_MAX_KEEP = 64
_SLUG_MAX = 40
_NODE_HASH_CHARS = 8


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_NODE_HASH_CHARS]


def _ascii_slug(text: str) -> str:
    """ASCII letters, digits, ``_ . -`` from ``text``; everything else becomes ``-``."""
    decomposed = unicodedata.normalize("NFKD", text)
    ascii_text = "".join(ch for ch in decomposed if ord(ch) < 128)
    slug = _NODE_UNSAFE_RUN.sub("-", ascii_text).strip("-")
    return slug[:_SLUG_MAX].rstrip("-")


def _slug_with_hash(label: str, hashed: str) -> str:
    slug = _ascii_slug(label)
    digest = _short_hash(hashed)
    return f"{slug}-{digest}" if slug else f"q-{digest}"


def node_id_for(query: GoldenQuery) -> str:
    """An ASCII-safe pytest node-id fragment for ``query``, stable across runs.

    Only ``A-Z a-z 0-9 _ . -`` appear, so there is never a ``[``, ``]``, ``::``,
    space or non-ASCII character for a shell, ``-k`` or a JUnit consumer to trip on.

    - An explicit id already in that alphabet (and at most 64 characters) is kept.
    - Any other explicit id becomes an ASCII slug plus 8 hex digits of its SHA-256.
    - A derived id becomes the slug of its 32 code points plus 8 hex digits of the
      SHA-256 of the *whole* query text, so two queries sharing their first 32 code
      points still get different node ids.

    Two queries can still map to one node id (identical query texts without ids);
    :func:`node_ids` resolves that for a whole golden set.
    """
    if query.explicit_id:
        ident = query.id
        if (
            _NODE_SAFE.fullmatch(ident)
            and len(ident) <= _NODE_ID_MAX_KEEP
            and ident not in (".", "..")
        ):
            return ident
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


# --------------------------------------------------------------------------- YAML layer


class _LineDict(dict[Any, Any]):
    """A YAML mapping that remembers where it and each of its keys were written."""

    line: int = 0
    key_lines: dict[Any, int]


class _LineList(list[Any]):
    """A YAML sequence that remembers where it and each of its items were written."""

    line: int = 0
    item_lines: list[int]


# libyaml when available: faster, and it caps nesting depth instead of recursing.
_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _GoldenLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    """Safe loader whose containers carry line numbers and which refuses duplicate keys."""

    def construct_object(self, node: yaml.nodes.Node, deep: bool = False) -> Any:
        # The safe constructors raise plain ValueError/OverflowError for scalars the
        # resolver accepted but cannot build (the timestamp 2024-13-45, the integer
        # 0x_); turn those into YAML errors that carry the scalar's position.
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read `{_clip(str(node.value))}` ({exc})", node.start_mark
            ) from None


def _construct_map(loader: yaml.SafeLoader, node: yaml.nodes.MappingNode) -> Any:
    data = _LineDict()
    data.line = node.start_mark.line + 1
    data.key_lines = {}
    yield data
    _refuse_duplicate_keys(node)
    data.update(loader.construct_mapping(node))
    # construct_mapping flattened merge keys (<<) into node.value, merged pairs first,
    # so assigning in order leaves the line of the key that took effect.
    for key_node, _value_node in node.value:
        if isinstance(key_node, yaml.nodes.ScalarNode):
            key = loader.construct_object(key_node)
            try:
                data.key_lines[key] = key_node.start_mark.line + 1
            except TypeError:  # unhashable keys were already refused by construct_mapping
                continue


def _construct_seq(loader: yaml.SafeLoader, node: yaml.nodes.SequenceNode) -> Any:
    data = _LineList()
    data.line = node.start_mark.line + 1
    data.item_lines = [item.start_mark.line + 1 for item in node.value]
    yield data
    data.extend(loader.construct_sequence(node))


def _refuse_duplicate_keys(node: yaml.nodes.MappingNode) -> None:
    """Deliberate addition: a key written twice in one mapping is an error."""
    seen: set[tuple[str, str]] = set()
    for key_node, _value_node in node.value:
        if not isinstance(key_node, yaml.nodes.ScalarNode):
            continue
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        ident = (key_node.tag, key_node.value)
        if ident in seen:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping",
                node.start_mark,
                f"found duplicate key `{_clip(key_node.value)}`",
                key_node.start_mark,
            )
        seen.add(ident)


_GoldenLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_GoldenLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _yaml_cause(exc: yaml.YAMLError) -> str:
    """A one-line account of a YAML syntax/constructor error."""
    if isinstance(exc, yaml.MarkedYAMLError):
        parts = [part for part in (exc.context, exc.problem) if part]
        text = ", ".join(_one_line(part) for part in parts) or "invalid YAML"
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            text += f" at line {mark.line + 1} column {mark.column + 1}"
        return f"invalid YAML: {text}"
    return f"invalid YAML: {_one_line(str(exc))}"


# --------------------------------------------------------------------------- validation


class _SchemaError(Exception):
    """One validation failure: where (``queries[2].expected[0]``), what, which line."""

    def __init__(self, where: str, cause: str, line: int) -> None:
        super().__init__(cause)
        self.where = where
        self.cause = cause
        self.line = line

    def render(self) -> str:
        text = f"{self.where}: {self.cause}" if self.where else self.cause
        return f"{text} at line {self.line}" if self.line > 0 else text


def _clip(text: str, limit: int = 40) -> str:
    shown = text if len(text) <= limit else text[: limit - 3] + "..."
    return shown.encode("unicode_escape").decode("ascii") if not shown.isprintable() else shown


def _describe(value: object) -> str:
    """serde-style name of what was found, for ``invalid type`` messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        return f"integer `{_clip(str(value))}`"
    if isinstance(value, float):
        return f"floating point `{_clip(repr(value))}`"
    if isinstance(value, str):
        return f"string `{_clip(value)}`"
    if isinstance(value, bytes):
        return "binary data"
    if isinstance(value, datetime.date):  # also datetime.datetime
        return f"date `{_clip(value.isoformat())}`"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, set):
        return "a set"
    return f"a {type(value).__name__}"


def _kind(value: object) -> str:
    """What was found, without the value itself (for content that must not be quoted)."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"


def _is_scalar(value: object) -> bool:
    return not isinstance(value, (dict, list, set, tuple))


def _fail(where: str, cause: str, line: int) -> NoReturn:
    raise _SchemaError(where, cause, line)


def _expected_list(names: Sequence[str]) -> str:
    quoted = [f"`{name}`" for name in names]
    if len(quoted) == 2:
        return f"{quoted[0]} or {quoted[1]}"
    return "one of " + ", ".join(quoted)


def _key_text(key: object) -> str:
    if isinstance(key, str):
        return _clip(key)
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return _clip(str(key))


def _check_fields(mapping: _LineDict, allowed: Sequence[str], where: str) -> None:
    for key in mapping:
        if key not in allowed:
            _fail(
                where,
                f"unknown field `{_key_text(key)}`, expected {_expected_list(allowed)}",
                _key_line(mapping, key),
            )


def _key_line(mapping: _LineDict, key: object) -> int:
    try:
        return mapping.key_lines.get(key, mapping.line)
    except TypeError:
        return mapping.line


def _require(mapping: _LineDict, field: str, where: str) -> Any:
    if field not in mapping:
        _fail(where, f"missing field `{field}`", mapping.line)
    return mapping[field]


def _join(where: str, field: str) -> str:
    return f"{where}.{field}" if where else field


def _want_string(value: object, where: str, line: int) -> str:
    """A string field; non-strings are refused, not coerced (deliberate addition)."""
    if isinstance(value, str):
        return value
    hint = " (put it in quotes to make it text)" if value is not None and _is_scalar(value) else ""
    _fail(where, f"invalid type: {_describe(value)}, expected a string{hint}", line)


def _want_optional_string(value: object, where: str, line: int) -> str | None:
    """Like :func:`_want_string`, but ``null`` (or an absent key) is allowed."""
    return None if value is None else _want_string(value, where, line)


def _want_mapping(value: object, where: str, line: int, expected: str) -> _LineDict:
    if isinstance(value, _LineDict):
        return value
    _fail(where, f"invalid type: {_describe(value)}, expected {expected}", line)


def _want_list(value: object, where: str, line: int, expected: str) -> _LineList:
    if isinstance(value, _LineList):
        return value
    _fail(where, f"invalid type: {_describe(value)}, expected {expected}", line)


def _item_line(items: _LineList, index: int) -> int:
    return items.item_lines[index] if index < len(items.item_lines) else items.line


def _check_defaults(value: object, line: int) -> None:
    """``defaults`` is reserved: its fields are type-checked, then ignored."""
    if value is None:
        return
    defaults = _want_mapping(value, "defaults", line, "a mapping with `limit` and/or `rerank`")
    _check_fields(defaults, _DEFAULTS_FIELDS, "defaults")
    if "limit" in defaults:
        limit = defaults["limit"]
        ok = limit is None or (
            isinstance(limit, int) and not isinstance(limit, bool) and 0 <= limit <= _U32_MAX
        )
        if not ok:
            _fail(
                "defaults.limit",
                f"invalid value: {_describe(limit)}, expected a non-negative integer",
                _key_line(defaults, "limit"),
            )
    if "rerank" in defaults:
        rerank = defaults["rerank"]
        if rerank is not None and not isinstance(rerank, bool):
            _fail(
                "defaults.rerank",
                f"invalid type: {_describe(rerank)}, expected a boolean",
                _key_line(defaults, "rerank"),
            )


def _check_path(path: str, where: str, line: int, kb: Path) -> None:
    """Deliberate addition: an expected path must be a plain KB-relative ``/`` path.

    The index stores paths relative to the KB with ``/`` separators and no ``.``
    segments, and the hit rule compares byte for byte; any other spelling is a
    query that can never pass, so it is refused with the fix.
    """
    if path == "":
        _fail(where, "the path is empty; write it relative to the knowledge base", line)
    for char, name in _PATH_FORBIDDEN.items():
        if char in path:
            # Deliberate addition: such a path can never equal an indexed one.
            _fail(where, f"path `{_clip(path)}` contains a {name} character; remove it", line)
    if "\\" in path:
        fixed = path.replace("\\", "/")
        _fail(
            where,
            f"path `{_clip(path)}` uses backslashes; write it with `/` (`{_clip(fixed)}`)",
            line,
        )
    if path.startswith("/") or re.match(r"[A-Za-z]:/", path):
        hint = "write it relative to the knowledge base"
        try:
            inside = Path(path).relative_to(kb.resolve()).as_posix()
        except ValueError:
            inside = ""
        if inside and inside != ".":
            hint += f" (`{_clip(inside)}`)"
        _fail(where, f"path `{_clip(path)}` is absolute; {hint}", line)
    segments = path.split("/")
    if ".." in segments:
        _fail(
            where,
            f"path `{_clip(path)}` contains `..`; expected paths must stay inside the "
            "knowledge base",
            line,
        )
    if "." in segments or "" in segments:
        _fail(
            where,
            f"path `{_clip(path)}` has an empty or `.` segment; write it the way the index "
            "does, e.g. `docs/a.md`",
            line,
        )


def _parse_entry(value: object, where: str, line: int, kb: Path) -> ExpectedEntry:
    entry = _want_mapping(value, where, line, "a mapping with `path` (and optional `heading`)")
    _check_fields(entry, _ENTRY_FIELDS, where)
    raw_path = _require(entry, "path", where)
    path_line = _key_line(entry, "path")
    path = _want_string(raw_path, _join(where, "path"), path_line)
    _check_path(path, _join(where, "path"), path_line, kb)
    heading = _want_optional_string(
        entry.get("heading"), _join(where, "heading"), _key_line(entry, "heading")
    )
    return ExpectedEntry(path=path, heading=heading, line=path_line)


def _parse_expected(query_map: _LineDict, where: str, kb: Path) -> tuple[ExpectedEntry, ...]:
    raw = _require(query_map, "expected", where)
    here = _join(where, "expected")
    line = _key_line(query_map, "expected")
    items = _want_list(raw, here, line, "a list of expected entries (`path`, optional `heading`)")
    if not items:
        # Deliberate addition: the reference searches such a query and leaves it out
        # of the averages; a query that cannot be scored is a mistake in the file.
        _fail(here, "the list is empty; name at least one `path` this query should find", line)
    entries: list[ExpectedEntry] = []
    seen: dict[tuple[str, str | None], int] = {}
    for index, item in enumerate(items):
        item_where = f"{here}[{index}]"
        item_line = _item_line(items, index)
        entry = _parse_entry(item, item_where, item_line, kb)
        key = (
            entry.path,
            None if entry.heading is None else normalise_heading(entry.heading),
        )
        if key in seen:
            # Deliberate addition: a duplicate needs a second distinct hit to be
            # credited, so it silently caps nDCG below 1.
            _fail(
                item_where,
                f"repeats {here}[{seen[key]}] (same path and heading); remove one",
                item_line,
            )
        seen[key] = index
        entries.append(entry)
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


def _parse_tags(query_map: _LineDict, where: str) -> tuple[str, ...]:
    raw = query_map.get("tags")
    if raw is None:
        return ()
    here = _join(where, "tags")
    items = _want_list(raw, here, _key_line(query_map, "tags"), "a list of strings")
    tags: list[str] = []
    for index, item in enumerate(items):
        item_where = f"{here}[{index}]"
        item_line = _item_line(items, index)
        tag = _want_string(item, item_where, item_line)
        marker = marker_name_for_tag(tag)
        if marker in PYTEST_BEHAVIOUR_MARKERS:
            # Deliberate addition: tags become pytest markers, and these markers act:
            # `skip` would turn every run into a subset run (nothing recorded, the
            # gate silently off), `xfail` would turn a miss into an expected failure.
            _fail(
                item_where,
                f"tag `{_clip(tag)}` would become pytest's `{marker}` marker and change "
                "this query's outcome; rename it (for example `needs-{marker}`)",
                item_line,
            )
        tags.append(tag)
    return tuple(tags)


def _check_query_text(text: str, where: str, line: int) -> None:
    if not text.strip():
        # Deliberate addition: an empty query retrieves nothing meaningful.
        _fail(where, "the query text is empty", line)
    if not text.replace("\x00", " ").strip():
        # Deliberate addition: NUL is dropped before searching, so this is empty too.
        _fail(where, "the query text holds nothing but NUL characters and whitespace", line)
    # Deliberate addition (the seed's v1.1.0 rule): a query that only excludes
    # terms has nothing positive to search for.  The query compiler says why.
    # The query compiler is the authority on what a query means; it is imported on
    # use so that importing this module (ids, hashing) stays cheap.
    from pytest_groove.search.fts_query import parse_query

    try:
        parse_query(text)
    except GrooveError as exc:
        _fail(where, _one_line(exc.message), line)


def _parse_query(value: object, where: str, line: int, kb: Path) -> GoldenQuery:
    query_map = _want_mapping(value, where, line, "a mapping with `query` and `expected`")
    _check_fields(query_map, _QUERY_FIELDS, where)
    raw_text = _require(query_map, "query", where)
    text_line = _key_line(query_map, "query")
    text = _want_string(raw_text, _join(where, "query"), text_line)
    explicit = _want_optional_string(
        query_map.get("id"), _join(where, "id"), _key_line(query_map, "id")
    )
    expected = _parse_expected(query_map, where, kb)
    tags = _parse_tags(query_map, where)
    _check_query_text(text, _join(where, "query"), text_line)
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
        _fail("", "the file holds no YAML document; expected a mapping with a `queries` list", 0)
    top = _want_mapping(
        doc, "", getattr(doc, "line", 1), "a mapping with a `queries` list at the top level"
    )
    # `queries` first: a file that is not a golden file gets "missing field", never
    # an "unknown field" message quoting its first key (its content)
    raw_queries = _require(top, "queries", "")
    _check_fields(top, _TOP_FIELDS, "")
    _check_defaults(top.get("defaults"), _key_line(top, "defaults"))
    queries_line = _key_line(top, "queries")
    items = _want_list(raw_queries, "queries", queries_line, "a list of queries")
    if not items:
        # Deliberate addition: a golden set with no queries measures nothing, and a
        # run of it would record an all-zero baseline.
        _fail("queries", "the list is empty; add at least one query", queries_line)
    queries: list[GoldenQuery] = []
    explicit_ids: dict[str, int] = {}
    for index, item in enumerate(items):
        where = f"queries[{index}]"
        query = _parse_query(item, where, _item_line(items, index), kb)
        if query.explicit_id:
            if query.id in explicit_ids:
                # Deliberate addition: ids key the per-query diff rows; a repeated
                # id would silently compare against the wrong query.
                first = explicit_ids[query.id]
                _fail(
                    f"{where}.id",
                    f"duplicate id `{_clip(query.id)}` (already used by queries[{first}] at "
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
        raise GrooveError(f"no golden file at {clip_path(path)} {_MISSING_HINT}")
    prefix = f"failed to parse golden file: {clip_path(path)}"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise GrooveError(
            f"{prefix}: not valid UTF-8 (first bad byte at offset {exc.start}, line {line}); "
            "save the file as UTF-8"
        ) from None
    # A file with no `queries` key is not a golden file at all (a wrong path,
    # `golden = "/etc/shadow"`): its messages never quote any of its content.
    looks_golden = _LOOKS_GOLDEN.search(text) is not None
    not_golden = (
        f"{prefix}: this is not a golden file (no top-level `queries:` key); point "
        "--golden or [eval].golden at the YAML file with your queries"
    )
    try:
        # _GoldenLoader is a SafeLoader: no arbitrary Python objects are built.
        doc = yaml.load(text, Loader=_GoldenLoader)
    except yaml.YAMLError as exc:
        raise GrooveError(f"{prefix}: {_yaml_cause(exc)}" if looks_golden else not_golden) from None
    except RecursionError:
        raise GrooveError(f"{prefix}: invalid YAML: nested too deeply") from None
    if not looks_golden and doc is not None and not isinstance(doc, _LineDict):
        raise GrooveError(
            f"{prefix}: invalid type: {_kind(doc)}, expected a mapping with a `queries` list "
            "at the top level"
        )
    try:
        queries = _parse_document(doc, kb)
    except _SchemaError as exc:
        raise GrooveError(f"{prefix}: {exc.render()}") from None
    return GoldenSet(path=str(path), hash=golden_hash(data), queries=queries)
