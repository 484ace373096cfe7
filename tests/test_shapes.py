"""The typed readers and field-driven codecs of pytest_groove.shapes.

The records that use them (run, history, config) are tested through their own
doors; here: the paths and the expected shapes the readers report, and the rules
a :func:`json_key` field is written and read by.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_groove.evaluation.runs.fingerprint import FINGERPRINT_KEYS, Fingerprint
from pytest_groove.evaluation.runs.record import RecordFormatError, RunRecord
from pytest_groove.shapes import (
    ShapeError,
    json_key,
    json_keys,
    list_of,
    read_int,
    read_k_map,
    read_number,
    read_object,
    read_opt_str,
    read_stored_float,
    read_str,
    record_fields_from_json,
    record_to_json,
    require,
    where,
)


def test_paths_compose_like_the_history_names_them() -> None:
    path = where(where(where("runs", 3), "fingerprint"), "limit")
    assert path == "runs[3].fingerprint.limit"
    assert where("", "runs") == "runs"
    with pytest.raises(ShapeError) as info:
        read_int("10", path)
    assert str(info.value) == "runs[3].fingerprint.limit: expected a whole number"
    assert info.value.path == path and info.value.expected == "a whole number"
    assert info.value.value == "10"


def test_the_top_level_is_named_as_such() -> None:
    with pytest.raises(ShapeError, match=r"^top level: expected an object$"):
        read_object([], "")
    with pytest.raises(ShapeError, match=r"^top level: missing key 'runs'$"):
        require({}, "runs", "")


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, "a whole number in [1, 8]"), (0, "a whole number in [1, 8]"), (2.0, "a whole")],
)
def test_whole_numbers_refuse_bools_floats_and_out_of_range(value: Any, expected: str) -> None:
    with pytest.raises(ShapeError) as info:
        read_int(value, "k", lo=1, hi=8)
    assert (info.value.expected or "").startswith(expected)


def test_numbers_with_a_range_must_be_finite() -> None:
    assert read_number(3, "x", lo=0.0, hi=1e6) == 3.0
    with pytest.raises(ShapeError) as wrong_type:
        read_number("3", "x", lo=0.0, hi=1e6)
    assert wrong_type.value.expected == "a number in [0, 1e+06]"
    with pytest.raises(ShapeError) as infinite:
        read_number(math.inf, "x", lo=0.0, hi=1e6)
    assert infinite.value.expected == "a finite number in [0, 1e+06]"
    assert math.isnan(read_stored_float(None, "x"))


def test_a_list_reader_reports_the_whole_list() -> None:
    strings = list_of(read_str, "a list of strings")
    assert strings(["a", "b"], "dirs") == ("a", "b")
    with pytest.raises(ShapeError) as info:
        strings(["a", 1], "dirs")
    assert info.value.path == "dirs" and info.value.expected == "a list of strings"


def test_k_maps_take_only_decimal_keys() -> None:
    assert read_k_map({"10": 0.5, "1": None}, "recall")[10] == 0.5
    with pytest.raises(ShapeError, match=r"^recall: 'k1' is not a k value$"):
        read_k_map({"k1": 0.5}, "recall")
    with pytest.raises(ShapeError, match=r"^recall\.5: expected a number$"):
        read_k_map({"5": "half"}, "recall")


@dataclass(frozen=True)
class _Record:
    name: str = field(metadata=json_key(read_str, required=True))
    note: str | None = field(default=None, metadata=json_key(read_opt_str, omit_none=True))
    size: int = field(default=1, metadata=json_key(read_int, absent=1, name="n"))
    tags: tuple[str, ...] = field(
        default=(),
        metadata=json_key(list_of(read_str, "a list of strings"), absent=(), omit_empty=True),
    )
    checked: str = field(default="", metadata=json_key(read_str, early=True))
    #: no metadata: never stored
    cache: int = 0


def _read(raw: Any) -> _Record:
    return _Record(**record_fields_from_json(_Record, read_object(raw, "r"), "r"))


def test_a_record_is_written_in_field_order_with_its_omission_rules() -> None:
    record = _Record(name="a", checked="y", cache=5)
    assert list(record_to_json(record).items()) == [("name", "a"), ("n", 1), ("checked", "y")]
    full = _Record(name="a", note="b", size=2, tags=("t",), checked="c")
    expected = {"name": "a", "note": "b", "n": 2, "tags": ("t",), "checked": "c"}
    assert record_to_json(full) == expected
    assert json_keys(_Record) == {"name", "note", "n", "tags", "checked"}


def test_a_record_reads_back_with_absent_keys_and_early_keys_first() -> None:
    assert _read({"name": "a", "checked": "y"}) == _Record(name="a", checked="y")
    assert _read({"name": "a", "n": 3, "tags": ["x"]}).tags == ("x",)
    with pytest.raises(ShapeError, match=r"^r: missing key 'name'$"):
        _read({})
    # of two problems, the early key's is the one reported
    with pytest.raises(ShapeError, match=r"^r\.checked: expected a string$"):
        _read({"checked": 1})
    with pytest.raises(ShapeError, match=r"^r\.n: expected a whole number$"):
        _read({"name": "a", "n": None})


def test_every_fingerprint_field_but_extra_is_a_stored_key() -> None:
    fields = set(Fingerprint.__dataclass_fields__) - {"extra"}
    assert fields == FINGERPRINT_KEYS
    # the history's format error is the shape readers' one type
    assert RecordFormatError is ShapeError
    with pytest.raises(RecordFormatError, match=r"^run\.fingerprint: expected an object$"):
        RunRecord.from_json({"timestamp": "2026-01-01T00:00:00Z", "fingerprint": []})
