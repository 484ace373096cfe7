"""Everything kept beside ``index.db`` and rebuilt from it: faiss vector caches and
the note index (whose rows it keeps in ``index.db`` itself), word postings and phrase
scores, quote scans, and the look at those files before the indexer trusts them.

May import: ``kb.store``, ``kb.source`` and everything below ``kb``.

PYTEST_DONT_REWRITE
"""
