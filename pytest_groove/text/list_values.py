"""How option values are read: the items of a comma-separated list and plain numbers.

Every list option (``--k``, ``--metrics``, ``--threshold``, ``--fail-under`` and their
ini and ``groove.toml`` string forms) is split by :func:`split_items`, which refuses
an empty item (``1,,5``, ``1,5,``) instead of dropping it; every number a flag or an
ini key spells is read by :func:`ascii_int` / :func:`ascii_float`, which take the
ASCII digits only -- Python's ``int()`` and ``float()`` also read ``٣`` (and ``1_0``),
which nobody means to type into a ``--k``.

Standard library only (the plugin imports the option table in every pytest run).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import re

from pytest_groove.errors import clip_repr

#: a whole number in ASCII digits, with an optional sign (the range is checked after)
_INT = re.compile(r"[+-]?[0-9]+")
#: a decimal number in ASCII digits; ``inf`` and ``nan`` are read (and then refused by
#: each range check with its own message)
_FLOAT = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)",
    re.IGNORECASE,
)


class EmptyItem(ValueError):
    """A comma-separated list with an empty item (the message quotes the list)."""


def split_items(text: str) -> list[str]:
    """The stripped items of the comma-separated ``text``; :class:`EmptyItem` for an
    empty one (two commas in a row, or one at an end).

    The caller refuses an entirely empty ``text`` first, with its own example.
    """
    items = [item.strip() for item in text.split(",")]
    if any(not item for item in items):
        raise EmptyItem(
            f"{clip_repr(text.strip())} has an empty item (two commas in a row, or one at "
            "an end): separate the items with single commas"
        )
    return items


def split_option_list(name: str, text: str, what: str, example: str) -> list[str]:
    """The items of option ``name``'s comma-separated ``text`` (:func:`split_items`);
    a :class:`ValueError` saying it takes a list of ``what``, e.g. ``example``, for an
    empty ``text`` or an empty item."""
    if not text.strip():
        raise ValueError(f"{name} needs a comma-separated list of {what}, e.g. {example}")
    try:
        return split_items(text)
    except EmptyItem as exc:
        raise ValueError(f"{name}: {exc} (e.g. {name} {example})") from None


def ascii_int(text: str) -> int:
    """``text`` as a whole number written in the digits 0-9; ValueError otherwise."""
    stripped = text.strip()
    if _INT.fullmatch(stripped) is None:
        raise ValueError(f"not a whole number in the digits 0-9: {clip_repr(text)}")
    return int(stripped)  # ValueError for more than 4,300 digits too


def ascii_float(text: str) -> float:
    """``text`` as a number written in the digits 0-9 (``0.05``, ``5e-2``); ValueError
    otherwise."""
    stripped = text.strip()
    if _FLOAT.fullmatch(stripped) is None:
        raise ValueError(f"not a number in the digits 0-9: {clip_repr(text)}")
    return float(stripped)
