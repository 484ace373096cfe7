"""The index database, ``index.db``: its schema, reader, writer, full-text tables,
the tie order and corpus snapshot kept per state, the headings map read from it, and
bm25 sweep; the lock writers
serialise on, and the index folder's faults and damage as one-line errors.

May import: ``kb.source`` and everything below ``kb``.

PYTEST_DONT_REWRITE
"""
