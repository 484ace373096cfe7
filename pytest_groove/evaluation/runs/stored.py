"""A stored run as the history file holds it: its text, and its queries read on demand.

Every ``groove eval``, ``groove history`` and pytest session reads the whole history,
yet the listing needs no run's per-query results and the gate only its baseline's.
So the history reader keeps a run this version wrote, and whose digest vouches for
its text, as that text (:mod:`pytest_groove.evaluation.history.vouch`):

- :class:`LazyTuple` stands in for the run's ``per_query`` and reads the queries
  the first time anything asks for them (then keeps them);
- :class:`StoredText` remembers the text and what it was read into, so that a save
  writes an unchanged run back byte for byte (its digest and any key this version
  does not know with it) instead of encoding it again
  (:meth:`~pytest_groove.evaluation.runs.record.RunRecord.stored_text`).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

T = TypeVar("T")


class LazyTuple(Sequence[T]):
    """A tuple read at its first use (a stored run's per-query results).

    Behaves as the tuple it reads (equal to it, same hash; a pickle holds the tuple).
    ``load`` raises what reading raises: the history reader words it for the file.
    """

    __slots__ = ("_items", "_load")

    def __init__(self, load: Callable[[], Sequence[T]]) -> None:
        self._load: Callable[[], Sequence[T]] | None = load
        self._items: tuple[T, ...] | None = None

    @property
    def loaded(self) -> bool:
        """Whether the queries have been read yet."""
        return self._items is not None

    def _read(self) -> tuple[T, ...]:
        if self._items is None:
            assert self._load is not None
            self._items = tuple(self._load())
            self._load = None
        return self._items

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        return self._read()[index]

    def __len__(self) -> int:
        return len(self._read())

    def __iter__(self) -> Iterator[T]:
        return iter(self._read())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyTuple):
            return self._read() == other._read()
        if isinstance(other, tuple):
            return self._read() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._read())

    def __repr__(self) -> str:
        return repr(self._read()) if self._items is not None else "LazyTuple(<unread>)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (self._read(),))


@dataclass(frozen=True, eq=False)
class StoredText:
    """The JSON text a stored run was read from, and the values it was read into.

    ``read_as`` holds the run's content fields as read; the text still describes the
    run only while each field is that very object (a ``replace`` of any of them
    makes a run that must be encoded again).
    """

    text: str
    read_as: tuple[object, ...]

    def describes(self, content: Sequence[object]) -> bool:
        """Whether ``content`` (the run's fields now) is still what was read."""
        return len(content) == len(self.read_as) and all(
            now is then for now, then in zip(content, self.read_as, strict=True)
        )
