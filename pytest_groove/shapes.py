"""Typed readers for parsed JSON and TOML data, and field-driven JSON codecs.

Every reader takes the value and the *path* it was found at (``runs[3].fingerprint.
limit``, ``search.fusion.rrf_k``) and either returns it with its Python type or raises
:class:`ShapeError`, which carries that path, the shape that was expected (a noun
phrase such as ``"a whole number in [1, 8192]"``) and the value found.  Each caller
words the error its own way: the history says ``runs[3].limit: expected a whole
number``, the settings loader ``invalid config groove.toml: eval.history_size must be
a whole number in [1, 10000] (got 0)``.

:class:`JsonKey` metadata on a dataclass field says how that field is stored (its
key, reader, writer, and what a missing key or a ``None`` value means), so that
:func:`record_to_json` and :func:`record_fields_from_json` read and write a record in
field order without a hand-written method per record.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

#: a reader: (value, path) -> the value with its type, or ShapeError
Reader = Callable[[Any, str], T]


class ShapeError(ValueError):
    """A parsed value does not have the shape asked for; the message names where.

    ``path`` is where the value was found ("" = the top level), ``expected`` the
    shape asked for when the problem is a wrong type or range (None for other
    problems, e.g. a missing key) and ``value`` what was found there.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str = "",
        expected: str | None = None,
        value: Any = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.expected = expected
        self.value = value


def shape_error(path: str, problem: str) -> ShapeError:
    """``{path}: {problem}``, the top level named as such."""
    return ShapeError(f"{path or 'top level'}: {problem}", path=path)


def _wrong(path: str, expected: str, value: Any) -> ShapeError:
    return ShapeError(f"{path}: expected {expected}", path=path, expected=expected, value=value)


def where(path: str, key: str | int) -> str:
    """The path of ``key`` inside ``path``: ``a.b``, ``a[3]``, or ``b`` at the top."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


# --------------------------------------------------------------------------- scalars


def read_str(value: Any, path: str, *, non_empty: bool = False) -> str:
    if not isinstance(value, str) or (non_empty and not value):
        raise _wrong(path, "a non-empty string" if non_empty else "a string", value)
    return value


def read_opt_str(value: Any, path: str) -> str | None:
    return None if value is None else read_str(value, path)


def read_bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise _wrong(path, "true or false", value)
    return value


def read_opt_bool(value: Any, path: str) -> bool | None:
    return None if value is None else read_bool(value, path)


def _range(lo: float | None, hi: float | None, number: Callable[[float], str]) -> str:
    return "" if lo is None or hi is None else f" in [{number(lo)}, {number(hi)}]"


def read_int(value: Any, path: str, *, lo: int | None = None, hi: int | None = None) -> int:
    """A whole number (never a bool), within ``[lo, hi]`` when both are given."""
    in_range = lo is None or hi is None or (isinstance(value, int) and lo <= value <= hi)
    if isinstance(value, bool) or not isinstance(value, int) or not in_range:
        raise _wrong(path, "a whole number" + _range(lo, hi, str), value)
    return value


def read_number(
    value: Any, path: str, *, lo: float | None = None, hi: float | None = None
) -> float:
    """A number (int or float, never a bool); with a range it must also be finite."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _wrong(path, "a number" + _range(lo, hi, "{:g}".format), value)
    try:
        number = float(value)
    except OverflowError:  # an integer past the float range (YAML/TOML hex, ...)
        raise _wrong(path, "a number" + _range(lo, hi, "{:g}".format), value) from None
    if lo is not None and hi is not None and not (math.isfinite(number) and lo <= number <= hi):
        raise _wrong(path, "a finite number" + _range(lo, hi, "{:g}".format), value)
    return number


def read_stored_float(value: Any, path: str) -> float:
    """A number as the history stores it: ``null`` stands for a non-finite value (NaN)."""
    return math.nan if value is None else read_number(value, path)


def finite_or_none(value: float) -> float | None:
    """Strict JSON has no NaN/Infinity: they are written as null."""
    return value if math.isfinite(value) else None


# --------------------------------------------------------------------------- containers


def read_object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ShapeError(
            f"{path or 'top level'}: expected an object",
            path=path,
            expected="an object",
            value=value,
        )
    return value


def read_list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise _wrong(path, "a list", value)
    return value


def require(obj: Mapping[str, Any], key: str, path: str) -> Any:
    """``obj[key]``; a missing key is a :class:`ShapeError` naming the object."""
    if key not in obj:
        raise shape_error(path, f"missing key {key!r}")
    return obj[key]


def read_items(value: Any, path: str, item: Reader[T]) -> list[T]:
    """A list, each item read at ``path[i]``."""
    return [item(entry, where(path, i)) for i, entry in enumerate(read_list(value, path))]


def read_values(value: Any, path: str, item: Reader[T]) -> dict[str, T]:
    """An object, each value read at ``path.key``."""
    return {key: item(entry, where(path, key)) for key, entry in read_object(value, path).items()}


def list_of(item: Reader[T], expected: str) -> Reader[tuple[T, ...]]:
    """A reader of a list whose every item ``item`` reads; any misfit is reported for
    the whole list, as ``expected`` (``"a list of strings"``)."""

    def read(value: Any, path: str) -> tuple[T, ...]:
        try:
            return tuple(read_items(value, path, item))
        except ShapeError:
            raise _wrong(path, expected, value) from None

    return read


def optional(reader: Reader[T]) -> Reader[T | None]:
    """``reader``, with ``null`` read as None."""

    def read(value: Any, path: str) -> T | None:
        return None if value is None else reader(value, path)

    return read


def values_of(item: Reader[T]) -> Reader[dict[str, T]]:
    """A reader of an object whose every value ``item`` reads."""

    def read(value: Any, path: str) -> dict[str, T]:
        return read_values(value, path, item)

    return read


_K_KEY = re.compile(r"[0-9]{1,9}")


def read_k_map(value: Any, path: str) -> dict[int, float]:
    """``{"1": 0.2, "5": 0.5}`` -> ``{1: 0.2, 5: 0.5}`` (stored floats: null is NaN)."""
    out: dict[int, float] = {}
    for key, item in read_object(value, path).items():
        if not _K_KEY.fullmatch(key):
            raise shape_error(path, f"{key!r} is not a k value")
        out[int(key)] = read_stored_float(item, where(path, key))
    return out


def k_map_to_json(values: Mapping[int, float]) -> dict[str, float | None]:
    """``{5: 0.5, 1: 0.2}`` -> ``{"1": 0.2, "5": 0.5}`` (numeric order, string keys)."""
    return {str(k): finite_or_none(values[k]) for k in sorted(values)}


def read_json_value(value: Any, path: str) -> Any:
    """A copy of a parsed JSON value that strict JSON can write back.

    Non-finite numbers (Python's parser accepts ``NaN``) become ``null``; anything
    that is not JSON data is a :class:`ShapeError`.
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return finite_or_none(value)
    if isinstance(value, list):
        return [read_json_value(item, where(path, i)) for i, item in enumerate(value)]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: read_json_value(item, where(path, key)) for key, item in value.items()}
    raise shape_error(path, "not JSON data")


# --------------------------------------------------------------------------- codecs


def _as_is(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class JsonKey:
    """How one dataclass field is stored in a JSON object.

    ``required``: a missing key is an error; otherwise a missing key reads as
    ``absent``.  ``omit_none`` / ``omit_empty``: a None / empty value is not written
    (the key is left out).
    """

    read: Reader[Any]
    write: Callable[[Any], Any] = _as_is
    required: bool = False
    absent: Any = None
    omit_none: bool = False
    omit_empty: bool = False
    #: the JSON key when it differs from the field name
    name: str | None = None
    #: read before the other keys (so that, of several problems, the one this key
    #: has is the one reported, as the hand-written readers before these did)
    early: bool = False


def json_key(
    read: Reader[Any],
    *,
    write: Callable[[Any], Any] = _as_is,
    required: bool = False,
    absent: Any = None,
    omit_none: bool = False,
    omit_empty: bool = False,
    name: str | None = None,
    early: bool = False,
) -> dict[str, JsonKey]:
    """Field metadata: ``field(metadata=json_key(read_int, required=True))``."""
    return {"json": JsonKey(read, write, required, absent, omit_none, omit_empty, name, early)}


#: (field name, JSON key, writer or None for "as is", omit None, omit empty)
_Writer = tuple[str, str, Callable[[Any], Any] | None, bool, bool]


@dataclass(frozen=True)
class _Schema:
    """One record class's stored fields, worked out once (records are read and
    written by the thousand: every hit of a run is one)."""

    #: (field name, JSON key, how), in field order
    fields: tuple[tuple[str, str, JsonKey], ...]
    #: the same, ``early`` ones first
    reading: tuple[tuple[str, str, JsonKey], ...]
    writers: tuple[_Writer, ...]
    keys: frozenset[str]


_SCHEMAS: dict[type[Any], _Schema] = {}


def _writer(how: JsonKey) -> Callable[[Any], Any] | None:
    return None if how.write is _as_is else how.write


def _schema(cls: type[Any]) -> _Schema:
    found = _SCHEMAS.get(cls)
    if found is None:
        stored = tuple(
            (item.name, how.name or item.name, how)
            for item in dataclasses.fields(cls)
            if isinstance(how := item.metadata.get("json"), JsonKey)
        )
        found = _SCHEMAS[cls] = _Schema(
            fields=stored,
            reading=tuple(sorted(stored, key=lambda entry: not entry[2].early)),
            writers=tuple(
                (name, key, _writer(how), how.omit_none, how.omit_empty)
                for name, key, how in stored
            ),
            keys=frozenset(key for _name, key, _how in stored),
        )
    return found


def json_keys(cls: type[Any]) -> frozenset[str]:
    """Every JSON key ``cls`` reads."""
    return _schema(cls).keys


def record_to_json(record: Any) -> dict[str, Any]:
    """The JSON object of a dataclass whose fields carry :func:`json_key` metadata."""
    out: dict[str, Any] = {}
    for name, key, write, omit_none, omit_empty in _schema(type(record)).writers:
        value = getattr(record, name)
        if (omit_none and value is None) or (omit_empty and not value):
            continue
        out[key] = value if write is None else write(value)
    return out


def record_fields_from_json(cls: type[Any], obj: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The constructor arguments of ``cls`` read from its JSON object ``obj``.

    Keys are read in field order, the ``early`` ones first.
    """
    values: dict[str, Any] = {}
    for name, key, how in _schema(cls).reading:
        if key in obj:
            values[name] = how.read(obj[key], where(path, key))
        elif how.required:
            raise shape_error(path, f"missing key {key!r}")
        else:
            values[name] = how.absent
    return values


def write_all(items: Iterable[Any]) -> list[dict[str, Any]]:
    """Each record's JSON object, in order."""
    return [record_to_json(item) for item in items]
