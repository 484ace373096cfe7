"""The ``groove`` command line: ``index``, ``search``, ``eval``, ``tune``, ``history``, ``init``.

Every subcommand is a thin door onto the same engine the pytest plugin uses: this
package holds ``main``, the one error boundary, and nothing it must import first: a
Ctrl-C while the rest loads is an interruption, not a traceback.  ``index``,
``search`` and the parser are in :mod:`.commands`; ``eval``, ``tune`` and the others
have their own modules, and the arguments the subcommands share are in :mod:`.args`.  Input
problems end as one ``Error: ...`` line on stderr and a non-zero exit status, a bad
flag value as one ``groove <command>: error: ...`` line and status 2 (whoever finds
it: argparse or the plan), never a traceback.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import sys

from pytest_groove import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import TracebackType

#: as :data:`pytest_groove.cli.ending.EXIT_INTERRUPTED` (a shell's status for SIGINT),
#: spelt here so that nothing is imported before the hook below is in place
_INTERRUPTED = 130


def _interrupted_while_loading(
    kind: type[BaseException], value: BaseException, traceback: TracebackType | None
) -> None:
    """``sys.excepthook`` from the first line of this package on: a Ctrl-C that
    reaches the top while the console script is still importing ``main`` (before its
    ``try``) is "interrupted" and status 130, as everywhere after; anything else is
    Python's own report."""
    if not issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, value, traceback)
        return
    import os

    try:
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
    finally:
        os._exit(_INTERRUPTED)  # an excepthook cannot choose the exit status otherwise


if sys.excepthook is sys.__excepthook__:  # a host's own hook (IPython, a test) stays
    sys.excepthook = _interrupted_while_loading


def main(argv: Sequence[str] | None = None) -> int:
    """The one error boundary of ``groove``: every fault ends as one line and a status.

    Standard output and error are guarded streams for the run (see
    :mod:`pytest_groove.text.console`): characters the terminal's encoding lacks degrade to
    ASCII, and a closed, full or broken output is one ``Error:`` line, not a traceback.
    """
    try:
        from pytest_groove.cli.commands import run_command_line
        from pytest_groove.cli.ending import EXIT_ERROR
        from pytest_groove.text.console import guarded_stdio

        with guarded_stdio() as stdout_open:
            if not stdout_open:
                print(
                    "Error: standard output is closed; redirect it to a file or /dev/null "
                    "instead of closing it",
                    file=sys.stderr,
                )
                return EXIT_ERROR
            return run_command_line(argv)
    except KeyboardInterrupt:
        # Ctrl-C before the command started (while its modules load, the parser is
        # built or the arguments are read) is an interruption too, not a traceback:
        # which is why this module imports nothing of the commands at its top
        from pytest_groove.cli.ending import EXIT_INTERRUPTED, report_line

        report_line("interrupted")
        return EXIT_INTERRUPTED
