"""Durable file plumbing shared by the index, the eval history and ``groove init``.

- :mod:`.atomic` -- replace a file all at once (temporary file beside it, fsync,
  rename, directory fsync), create a file only when it is new, keep an exclusive
  backup copy, and remove the temporary files an interrupted write left behind;
- :mod:`.lock` -- the :class:`filelock.FileLock` concurrent writers serialise on;
- :mod:`.beneath` -- open and read files below a root folder without following links;
- :mod:`.regular` -- read a file a flag names (links followed) only if it is a regular
  file of bounded size.

These modules raise :class:`OSError` (and :class:`filelock.Timeout`) as they are:
each caller words its own one-line error, naming its own file and remedy.

PYTEST_DONT_REWRITE
"""
