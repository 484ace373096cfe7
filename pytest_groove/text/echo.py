"""Quoting parsed values back in messages, whatever numbers they hold.

YAML and TOML can spell integers far longer than Python will print (``str`` and
``repr`` refuse more than 4,300 decimal digits; hex, octal, binary and YAML's
sexagesimal integers are read without that limit), and converting them to a
float overflows.  A message must never fail while naming the value it refuses,
so :func:`int_text` and :func:`quote_value` describe such an integer by its size
instead of printing it.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
import reprlib
from typing import Any

from pytest_groove.errors import ECHO_LIMIT, clip_repr, one_line

#: integers at most this long (in decimal digits) are printed as they are; a longer
#: one would be cut by the 80-character echo cap anyway
_PRINTED_DIGITS = 60
#: decimal digits per bit
_DIGITS_PER_BIT = math.log10(2)
#: what Python says when it refuses to print an integer (``sys.set_int_max_str_digits``)
_PRINT_LIMIT_MARK = "integer string conversion"


def decimal_digits(value: int) -> int:
    """About how many decimal digits ``abs(value)`` has (exact to within one)."""
    return max(1, math.floor(abs(value).bit_length() * _DIGITS_PER_BIT) + 1)


def int_text(value: int) -> str:
    """``value`` in decimal, or ``an integer of about N digits`` when it is too long.

    Never converts a long integer to text, so it cannot raise.
    """
    if abs(value).bit_length() <= _PRINTED_DIGITS * 3:  # under 10**54: always printable
        return str(value)
    sign = "a negative" if value < 0 else "an"
    return f"{sign} integer of about {decimal_digits(value):,} digits"


class _Sized:
    """Stands in for a long integer inside a container being quoted."""

    def __init__(self, value: int) -> None:
        self.text = f"<{int_text(value)}>"

    def __repr__(self) -> str:
        return self.text


def _printable(value: Any, depth: int = 0) -> Any:
    """``value`` with every long integer in it replaced by its size (containers copied)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return _Sized(value) if abs(value).bit_length() > _PRINTED_DIGITS * 3 else value
    if depth > 20:
        return value if not isinstance(value, (list, tuple, dict, set)) else _Nested()
    if isinstance(value, list):
        return [_printable(item, depth + 1) for item in value]
    if isinstance(value, tuple):
        return tuple(_printable(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return {_printable(k, depth + 1): _printable(v, depth + 1) for k, v in value.items()}
    return value


class _Nested:
    def __repr__(self) -> str:
        return "[...]"


def quote_value(value: Any) -> str:
    """:func:`~pytest_groove.errors.clip_repr` of ``value``, long integers described.

    ``repr`` of a parsed value (or of a list or table holding one) raises for an
    integer of more than 4,300 digits; this never does.
    """
    try:
        return clip_repr(value)
    except (ValueError, OverflowError, RecursionError):
        return clip_repr(_printable(value))


def conversion_reason(exc: BaseException) -> str:
    """A short account of why a number could not be read, for a one-line message.

    Python's own texts quote the whole literal (``invalid literal for int() with
    base 10: '...'``) or name interpreter settings; this names the problem only.
    """
    text = str(exc)
    if _PRINT_LIMIT_MARK in text:
        return "an integer of more than 4,300 digits, which cannot be used as a number"
    if isinstance(exc, OverflowError):
        return "a number too large to use"
    return ""


_REPR = reprlib.Repr()
_REPR.maxstring = ECHO_LIMIT + 2
_REPR.maxother = ECHO_LIMIT + 2
_REPR.maxlevel = 3
for _attribute in ("maxlist", "maxtuple", "maxdict", "maxset", "maxfrozenset", "maxdeque"):
    setattr(_REPR, _attribute, 8)


def echo_value(value: object) -> str:
    """``repr(value)`` fit for a one-line message, for a value a retriever returned:
    at most 80 characters (then ``…``), control characters escaped, never a huge value
    copied whole, and never an exception (a ``__repr__`` that raises is named by its
    type)."""
    try:
        if isinstance(value, str):
            text = repr(value[: ECHO_LIMIT + 1])
        elif isinstance(value, int) and not isinstance(value, bool):
            text = int_text(value)
        else:
            text = _REPR.repr(value)
    except Exception:  # a user's __repr__ may raise anything
        text = f"<{type(value).__name__}>"
    text = one_line(text[: 4 * ECHO_LIMIT])
    return text if len(text) <= ECHO_LIMIT else text[: ECHO_LIMIT - 1] + "…"


#: most characters a list of echoed values takes in one message
_LISTED = 240


def echo_list(values: list[Any], most: int = 12) -> str:
    """``'a', 'b' and 3 more``: each value :func:`echo_value` d, as many as fit in about
    240 characters (and at most ``most``), the rest counted."""
    shown: list[str] = []
    used = 0
    for value in values[:most]:
        text = echo_value(value)
        if shown and used + len(text) > _LISTED:
            break
        shown.append(text)
        used += len(text) + 2
    rest = len(values) - len(shown)
    return ", ".join(shown) + (f" and {rest} more" if rest else "")
