"""Files and the operating system: durable writes, reading below a root, seals,
paths and resource limits, shared by the index, the eval history and ``groove init``.

- :mod:`.atomic` -- replace a file all at once (temporary file beside it, fsync,
  rename, directory fsync), create a file only when it is new, keep an exclusive
  backup copy, and remove the temporary files an interrupted write left behind;
- :mod:`.lock` -- the :class:`filelock.FileLock` concurrent writers serialise on;
- :mod:`.beneath` -- open and read files below a root folder without following links;
- :mod:`.regular` -- read a file a flag names (links followed) only if it is a regular
  file of bounded size;
- :mod:`.guarded_io` -- read the files eval keeps inside the knowledge base (golden
  file, ``groove.toml``, history) defensively, each fault one line;
- :mod:`.seal` and :mod:`.seal_pieces` -- the seal on every derived file beside the
  index: its identity and a CRC-32 per MiB, so damage is told from a writer's work;
- :mod:`.paths` and :mod:`.path_limits` -- the paths a flag gives, and why the OS
  would refuse a path read from a file; :mod:`.resource_limits` -- running out of
  open files or memory said as such;
- :mod:`.merge_conflicts` -- git's conflict markers in a file left mid-merge.

These modules raise :class:`OSError` (and :class:`filelock.Timeout`) as they are:
each caller words its own one-line error, naming its own file and remedy.

May import: ``errors`` and the standard library.

PYTEST_DONT_REWRITE
"""
