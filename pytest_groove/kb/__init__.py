"""Knowledge-base side: the files (``source``), the index database (``store``), what
is kept beside it (``derived``), and at the root the indexer that brings them all up
to date in groups of documents, finding each text's vector in the index before it
embeds it (``reuse``).

May import: ``settings`` and everything below it.

PYTEST_DONT_REWRITE
"""
