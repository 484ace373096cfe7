"""Reading a history whose numbers Python will not convert (more than 4,300 digits).

``int`` and ``json`` refuse such a literal with a ``ValueError`` that names an
interpreter setting; wherever one stands in the history file -- the format header, a
run's counts, its metrics -- reading ends as the file's own account (too new, damaged
and read line by line), never as that error.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.history.format import encode_history, read_history
from pytest_groove.evaluation.history.lines import format_number
from pytest_groove.evaluation.runs.record import RecordFormatError
from tests.helpers.eval_factories import big_run

HISTORY = encode_history([big_run(minutes=1, queries=3), big_run(minutes=2, queries=3)]).decode()
#: every number of the file, by where it starts
NUMBERS = [m.start() for m in re.finditer(r"(?<![\w.\"])\d+(?:\.\d+)?", HISTORY)]


def test_a_format_header_too_long_to_read_is_a_format_this_version_does_not_know() -> None:
    assert format_number("2") == 2
    assert format_number("9" * 5000) == "a number of 5,000 digits"
    data = HISTORY.replace('"format": 2', '"format": ' + "9" * 5000, 1).encode()
    with pytest.raises(GrooveError, match="history format a number of 5,000 digits"):
        read_history(data)


@settings(max_examples=40, deadline=None)
@given(at=st.sampled_from(NUMBERS), digits=st.integers(4301, 20_000))
def test_an_overlong_number_anywhere_is_the_files_damage_never_pythons_error(
    at: int, digits: int
) -> None:
    number = re.match(r"\d+(?:\.\d+)?", HISTORY[at:])
    assert number is not None
    text = HISTORY[:at] + "7" * digits + HISTORY[at + number.end() :]
    try:
        parsed = read_history(text.encode())
    except (GrooveError, RecordFormatError) as exc:
        message = str(exc)
        assert "set_int_max_str_digits" not in message and len(message) < 400, message
    else:
        told = " ".join([*parsed.skipped, parsed.salvaged or ""])
        assert "set_int_max_str_digits" not in told, told
