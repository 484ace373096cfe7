"""The one exception type users see.

Every problem caused by input (a golden file, a config value, a KB file, a query,
a history file, a flag) is raised as :class:`GrooveError` carrying a single line
that names the file or value and the fix.  The CLI prints it as ``Error: ...`` and
exits with :attr:`GrooveError.exit_code`; the pytest plugin turns it into a usage
error.  Anything else escaping is a bug.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from typing import Any, Literal

#: brackets an option's name inside a message (see :func:`flag`); not printable, so a
#: value quoted through :func:`clip` can never forge one
_FLAG_MARK = "\u2063"

#: which door a message is spelled for
Door = Literal["cli", "pytest"]


def flag(name: str) -> str:
    """A reference to the shared option ``name`` inside a message.

    The library does not know which door it was opened through, so it names an option
    by this token and the door that prints the message spells it: ``--name`` for the
    ``groove`` command, ``--groove-name`` under pytest (:func:`spell_flags`).
    """
    return f"{_FLAG_MARK}{name}{_FLAG_MARK}"


def spell_flags(message: str, door: Door = "cli") -> str:
    """``message`` with every :func:`flag` token spelled the way ``door`` spells options."""
    if _FLAG_MARK not in message:
        return message
    prefix = "--" if door == "cli" else "--groove-"
    parts = message.split(_FLAG_MARK)
    # tokens stand at the odd places of the split (text, name, text, name, ...)
    return "".join(prefix + part if at % 2 else part for at, part in enumerate(parts))


def spell_flags_within(value: Any, door: Door = "cli") -> Any:
    """``value`` (a JSON-shaped object) with every string in it passed through
    :func:`spell_flags`: a report object names options the way its door spells them."""
    if isinstance(value, str):
        return spell_flags(value, door)
    if isinstance(value, dict):
        return {key: spell_flags_within(item, door) for key, item in value.items()}
    if isinstance(value, list):
        return [spell_flags_within(item, door) for item in value]
    return value


#: the indexing commands the library names where it knows neither the KB as the user
#: typed it nor the run's flags; each door puts its own in their place
#: (:func:`pytest_groove.engine.index_command.with_index_commands`)
GENERIC_INDEX_COMMAND = "groove index --kb-path <kb>"
GENERIC_REBUILD_COMMAND = "groove index --force --kb-path <kb>"


class GrooveError(Exception):
    """A user-facing error: one clear line, no traceback."""

    #: process exit status the CLI uses for this error
    exit_code: int = 1

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code

    @property
    def raw_message(self) -> str:
        """The message with its option tokens unspelled (see :func:`flag`)."""
        return str(self.args[0]) if self.args else ""

    @property
    def message(self) -> str:
        """The message as the ``groove`` command spells options."""
        return spell_flags(self.raw_message, "cli")

    def message_for(self, door: Door) -> str:
        """The message as ``door`` spells options."""
        return spell_flags(self.raw_message, door)

    def __str__(self) -> str:
        return self.message


class UsageError(GrooveError):
    """Bad flag or option value (exit status 2, like argparse)."""

    exit_code = 2


class StopsTheRun(GrooveError):
    """An error every later query would repeat (a service down, hits no KB file holds):
    the run stops at the first, with one line, rather than failing each query."""


class IndexUnwritable(GrooveError):
    """The index folder cannot be written: read-only, no permission, disk full, size limit."""

    def __init__(self, message: str, *, reason: str = "") -> None:
        super().__init__(message)
        #: what went wrong and the fix, without the file name (for callers that rephrase)
        self.reason = reason


class IndexMissing(GrooveError):
    """No index where one is looked for (``groove search``, ``--no-reindex``).

    ``command`` is the ``groove index`` line that builds it, as the door that knows the
    flags spells it (:func:`pytest_groove.engine.index_command.index_command`); ``no_reindex``
    says the flag of that name is why nothing was built.
    """

    def __init__(
        self,
        db_path: object,
        command: str = GENERIC_INDEX_COMMAND,
        *,
        no_reindex: bool = False,
    ) -> None:
        hint = f" (or drop {flag('no-reindex')} so the index is built)" if no_reindex else ""
        super().__init__(f"No index found at {clip_path(db_path)}. Run `{command}` first{hint}.")
        self.db_path = db_path
        self.command = command
        self.no_reindex = no_reindex


class IndexCorrupt(GrooveError):
    """The index database is damaged.  It is a cache of the KB, so rebuilding it is safe."""


class LockFailed(GrooveError):
    """The index lock could not be taken for a reason other than another holder."""


class OutputFailed(GrooveError):
    """Standard output is closed, full or gone: the report could not be written."""


#: most characters of a value (a query, a key, a field) quoted back in a message
ECHO_LIMIT = 80
_ELLIPSIS = "..."


def _escaped(ch: str) -> str:
    return (
        ch if ch.isprintable() else ch.encode("unicode_escape", "backslashreplace").decode("ascii")
    )


def one_line(text: str) -> str:
    """``text`` with control characters, line breaks and lone surrogates escaped (not
    cut): a name shown on a line of output stays on that line."""
    return text if text.isprintable() else "".join(_escaped(ch) for ch in text)


def _fit(text: str, budget: int) -> tuple[str, bool]:
    """The escaped start of ``text`` that fits in ``budget`` characters, and whether
    that is all of it (an escape is never cut in half)."""
    shown: list[str] = []
    used = 0
    # each character escapes to at least one, so only the first ``budget + 1`` matter
    for ch in text[: budget + 1]:
        piece = _escaped(ch)
        if used + len(piece) > budget:
            return "".join(shown), False
        shown.append(piece)
        used += len(piece)
    return "".join(shown), len(text) <= budget


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` made fit to quote in a one-line message.

    Control characters, line breaks and lone surrogates are escaped so the message
    stays one line, and anything past ``limit`` characters *of the escaped text*
    becomes ``...``: a refused 100 KB query must not come back as 100 KB of error,
    and 80 characters that each escape to ten (``\\U0010ffff``) must not come back
    as 800.
    """
    if len(text) <= limit and text.isprintable():
        return text
    shown, whole = _fit(text, limit)
    return shown if whole else shown + _ELLIPSIS


#: most characters of a path quoted back: its end (the file's own name) matters most
PATH_ECHO_LIMIT = 2 * ECHO_LIMIT


def clip_path(path: object, limit: int = PATH_ECHO_LIMIT) -> str:
    """A path (``str`` or ``Path``) made fit to quote in a one-line message.

    Escaped like :func:`clip`; one longer than ``limit`` keeps its start and its end
    (where the file's own name is) around ``...``, so a 4,096-byte path echoes as
    about ``limit`` characters and the user still sees which file is meant.
    """
    text = path if isinstance(path, str) else str(path)
    if len(text) <= limit and text.isprintable():
        return text
    shown, whole = _fit(text, limit)
    if whole:
        return shown
    head, _ = _fit(text, limit // 3)
    tail_text = text[len(text) - _count_fitting(text[::-1], limit - limit // 3) :]
    return head + _ELLIPSIS + "".join(_escaped(ch) for ch in tail_text)


def _count_fitting(text: str, budget: int) -> int:
    """How many characters of ``text``, escaped, fit in ``budget`` characters."""
    used = 0
    for count, ch in enumerate(text[: budget + 1]):
        used += len(_escaped(ch))
        if used > budget:
            return count
    return len(text[: budget + 1])


def clip_repr(value: object, limit: int = ECHO_LIMIT) -> str:
    """``repr(value)``, cut to ``limit`` characters with ``...`` (for ``got ...`` parts).

    Strings are cut before ``repr`` so a huge value is never copied whole.
    """
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + _ELLIPSIS
    shown = repr(value)
    return shown if len(shown) <= limit else shown[:limit] + _ELLIPSIS
