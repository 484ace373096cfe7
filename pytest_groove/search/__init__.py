"""Query side: the records a search returns (root), the query compiler (``query``),
the built-in hybrid pipeline (``pipeline``) and a team's own retrievers
(``retrievers``).

May import: ``kb`` and everything below it.

PYTEST_DONT_REWRITE
"""
