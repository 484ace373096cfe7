"""Evaluation: one run of the golden set, owned by the library for both doors.

Its root modules are the run's life -- :mod:`.searched` (what it asks of a searcher
beyond hits), :mod:`.plan` (check every input once),
:mod:`.lifecycle` (open it over a searcher, score each query), :mod:`.finish`
(judge, deliver, spell) -- and the starter files and the floor ratchet built on it;
the
sub-packages, from the bottom up: ``golden``, ``runs``, ``gate``, ``history``,
``reports``.

May import: ``engine`` and everything below it.

PYTEST_DONT_REWRITE
"""
