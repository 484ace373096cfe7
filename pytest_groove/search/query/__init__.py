"""The query compiler in one place: a search query to an FTS5 ``MATCH`` expression,
``-term`` exclusion, and where the query's terms occur in a hit.

May import: ``search`` (its root records), ``kb`` and everything below it.

PYTEST_DONT_REWRITE
"""
