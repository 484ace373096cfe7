"""Quoting a value back: capped, escaped, and never failing, whatever the value."""

from __future__ import annotations

from pytest_groove.text.echo import echo_list, echo_value


class _Raises:
    def __repr__(self) -> str:
        raise RuntimeError("no")


class _Loud:
    def __repr__(self) -> str:
        return "\x1b[2J" * 1_000_000


def test_a_short_value_is_its_repr() -> None:
    assert echo_value("ops/a.md") == "'ops/a.md'"
    assert echo_value(None) == "None"
    assert echo_value(3.5) == "3.5"


def test_a_long_or_hostile_value_is_cut_and_escaped() -> None:
    for value in ("\x07" * 10_000_000, _Loud(), ["\x1b"] * 100_000, {"k\r": "v\n" * 1000}):
        text = echo_value(value)
        assert len(text) <= 80 and text.isprintable(), text


def test_a_huge_integer_is_described_and_a_raising_repr_named() -> None:
    assert echo_value(7**30_000) == "an integer of about 25,354 digits"
    assert echo_value(_Raises()).startswith("<_Raises")


def test_a_list_of_values_stays_short_and_counts_the_rest() -> None:
    text = echo_list(["x" * 100] * 50)
    assert len(text) < 300 and text.endswith(" and 48 more"), text
    assert echo_list(["a", "b"]) == "'a', 'b'"
