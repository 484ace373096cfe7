"""Everything kept beside ``index.db`` and rebuilt from it: faiss vector caches and
the note index, word postings and phrase scores, and the look at those files before
the indexer trusts them; and the note rows the indexer and the quote scans an eval
keep in ``index.db``.

May import: ``kb.store``, ``kb.source`` and everything below ``kb``.

PYTEST_DONT_REWRITE
"""
