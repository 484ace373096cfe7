"""The golden file's YAML layer: a safe loader whose containers remember their lines.

:class:`GoldenLoader` is PyYAML's safe loader (libyaml's when available) that builds
:class:`LineDict` / :class:`LineList` containers carrying the line of each key and
item, and refuses a key written twice.  The ``want_*`` readers check one value's
type the way the golden file's messages word it (serde-style: ``invalid type:
integer `42`, expected a string``) and raise :class:`SchemaError` with the line, so
:mod:`pytest_groove.evaluation.golden.file` validates the document without handling
lines itself.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

import yaml
import yaml.constructor
import yaml.nodes

from pytest_groove.shapes import Reader, ShapeError, read_str
from pytest_groove.text.echo import conversion_reason, int_text

T = TypeVar("T")
# --------------------------------------------------------------------------- YAML layer


class LineDict(dict[Any, Any]):
    """A YAML mapping that remembers where it and each of its keys were written."""

    line: int = 0
    key_lines: dict[Any, int]


class LineList(list[Any]):
    """A YAML sequence that remembers where it and each of its items were written."""

    line: int = 0
    item_lines: list[int]


# libyaml when available: faster, and it caps nesting depth instead of recursing.
_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class GoldenLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    """Safe loader whose containers carry line numbers and which refuses duplicate keys."""

    def construct_object(self, node: yaml.nodes.Node, deep: bool = False) -> Any:
        # The safe constructors raise plain ValueError/OverflowError for scalars the
        # resolver accepted but cannot build (the timestamp 2024-13-45, the integer
        # 0x_), and KeyError, IndexError, AttributeError... for a tag that does not fit
        # its value (`!!bool maybe`, `!!int ''`, `!!timestamp soon`); turn those into
        # YAML errors that carry the node's position.
        try:
            return super().construct_object(node, deep=deep)
        except (yaml.YAMLError, RecursionError):
            raise
        except Exception as exc:  # any constructor failure is the file's
            raise _unreadable(node, exc) from None

    def construct_document(self, node: yaml.nodes.Node) -> Any:
        # Containers are finished after construct_object returns (PyYAML's generator
        # constructors); a failure there is still the file's, reported at its start.
        try:
            return super().construct_document(node)
        except (yaml.YAMLError, RecursionError):
            raise
        except Exception as exc:
            raise _unreadable(node, exc) from None


def _node_text(node: yaml.nodes.Node) -> str:
    if isinstance(node, yaml.nodes.ScalarNode):
        return f"`{clip(str(node.value))}`"
    return "a mapping" if isinstance(node, yaml.nodes.MappingNode) else "a list"


def _tag_name(tag: str) -> str:
    prefix = "tag:yaml.org,2002:"
    return "!!" + tag[len(prefix) :] if tag.startswith(prefix) else clip(tag)


def _unreadable(node: yaml.nodes.Node, exc: Exception) -> yaml.constructor.ConstructorError:
    """The one-line account of a node the safe constructors could not build."""
    reason = conversion_reason(exc)
    if reason:
        fix = "write a shorter number, or put it in quotes to make it text"
    else:
        if isinstance(exc, ValueError):
            # Python's texts quote the literal whole: keep what comes before it
            reason = clip(one_line(str(exc).split(":", 1)[0]), 60)
        tag = _tag_name(str(node.tag))
        fix = (
            f"not a valid {tag} value; correct it, or remove the tag and put the value "
            "in quotes to make it text"
        )
    detail = f"{reason}; {fix}" if reason else fix
    return yaml.constructor.ConstructorError(
        None, None, f"cannot read {_node_text(node)} ({detail})", node.start_mark
    )


def _construct_map(loader: yaml.SafeLoader, node: yaml.nodes.MappingNode) -> Any:
    if not isinstance(node, yaml.nodes.MappingNode):  # `!!map text`
        raise _wrong_kind(node, "!!map")
    data = LineDict()
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
    if not isinstance(node, yaml.nodes.SequenceNode):  # `!!seq text`
        raise _wrong_kind(node, "!!seq")
    data = LineList()
    data.line = node.start_mark.line + 1
    data.item_lines = [item.start_mark.line + 1 for item in node.value]
    yield data
    data.extend(loader.construct_sequence(node))


def _wrong_kind(node: yaml.nodes.Node, tag: str) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(
        None,
        None,
        f"cannot read {_node_text(node)} (a {tag} tag on something that is not "
        f"{'a mapping' if tag == '!!map' else 'a list'}; remove the tag)",
        node.start_mark,
    )


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
                f"found duplicate key `{clip(key_node.value)}`",
                key_node.start_mark,
            )
        seen.add(ident)


GoldenLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
GoldenLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def one_line(text: str) -> str:
    return " ".join(text.split())


def yaml_cause(exc: yaml.YAMLError) -> str:
    """A one-line account of a YAML syntax/constructor error."""
    if isinstance(exc, yaml.MarkedYAMLError):
        parts = [part for part in (exc.context, exc.problem) if part]
        text = ", ".join(one_line(part) for part in parts) or "invalid YAML"
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            text += f" at line {mark.line + 1} column {mark.column + 1}"
        return f"invalid YAML: {text}"
    return f"invalid YAML: {one_line(str(exc))}"


# ----------------------------------------------------- typed readers that keep the YAML lines


class SchemaError(Exception):
    """One validation failure: where (``queries[2].expected[0]``), what, which line."""

    def __init__(self, where: str, cause: str, line: int) -> None:
        super().__init__(cause)
        self.where = where
        self.cause = cause
        self.line = line

    def render(self) -> str:
        text = f"{self.where}: {self.cause}" if self.where else self.cause
        return f"{text} at line {self.line}" if self.line > 0 else text


def clip(text: str, limit: int = 40) -> str:
    shown = text if len(text) <= limit else text[: limit - 3] + "..."
    return shown.encode("unicode_escape").decode("ascii") if not shown.isprintable() else shown


def describe(value: object) -> str:
    """serde-style name of what was found, for ``invalid type`` messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        text = int_text(value)
        # a long integer is described by its size: Python refuses to print it
        return f"integer `{text}`" if text[-1].isdigit() else text
    if isinstance(value, float):
        return f"floating point `{clip(repr(value))}`"
    if isinstance(value, str):
        return f"string `{clip(value)}`"
    if isinstance(value, bytes):
        return "binary data"
    if isinstance(value, datetime.date):  # also datetime.datetime
        return f"date `{clip(value.isoformat())}`"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, set):
        return "a set"
    return kind(value)  # a list, or any other type by its name


def kind(value: object) -> str:
    """What was found, without the value itself (for content that must not be quoted)."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"


def _is_scalar(value: object) -> bool:
    return not isinstance(value, (dict, list, set, tuple))


def fail(where: str, cause: str, line: int) -> NoReturn:
    raise SchemaError(where, cause, line)


def _expected_list(names: Sequence[str]) -> str:
    quoted = [f"`{name}`" for name in names]
    if len(quoted) == 2:
        return f"{quoted[0]} or {quoted[1]}"
    return "one of " + ", ".join(quoted)


def _key_text(key: object) -> str:
    if isinstance(key, str):
        return clip(key)
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return clip(int_text(key))
    return clip(str(key))


def check_fields(mapping: LineDict, allowed: Sequence[str], where: str) -> None:
    for key in mapping:
        if key not in allowed:
            fail(
                where,
                f"unknown field `{_key_text(key)}`, expected {_expected_list(allowed)}",
                key_line(mapping, key),
            )


def key_line(mapping: LineDict, key: object) -> int:
    try:
        return mapping.key_lines.get(key, mapping.line)
    except TypeError:
        return mapping.line


def require(mapping: LineDict, field: str, where: str) -> Any:
    if field not in mapping:
        fail(where, f"missing field `{field}`", mapping.line)
    return mapping[field]


def join(where: str, field: str) -> str:
    return f"{where}.{field}" if where else field


def want(reader: Reader[T], value: object, where: str, line: int, cause: Callable[[Any], str]) -> T:
    """What the shape ``reader`` reads from ``value``; a misfit is a :class:`SchemaError`
    at ``line``, worded by ``cause(value)`` in the golden file's own terms."""
    try:
        return reader(value, where)
    except ShapeError:
        fail(where, cause(value), line)


def _not_a_string(value: object) -> str:
    hint = " (put it in quotes to make it text)" if value is not None and _is_scalar(value) else ""
    return f"invalid type: {describe(value)}, expected a string{hint}"


def want_string(value: object, where: str, line: int) -> str:
    """A string field; non-strings are refused, not coerced (deliberate addition)."""
    return want(read_str, value, where, line, _not_a_string)


def want_optional_string(value: object, where: str, line: int) -> str | None:
    """Like :func:`want_string`, but ``null`` (or an absent key) is allowed."""
    return None if value is None else want_string(value, where, line)


def want_mapping(value: object, where: str, line: int, expected: str) -> LineDict:
    if isinstance(value, LineDict):
        return value
    fail(where, f"invalid type: {describe(value)}, expected {expected}", line)


def want_list(value: object, where: str, line: int, expected: str) -> LineList:
    if isinstance(value, LineList):
        return value
    fail(where, f"invalid type: {describe(value)}, expected {expected}", line)


def line_of_item(items: LineList, index: int) -> int:
    return items.item_lines[index] if index < len(items.item_lines) else items.line
