"""The doors' facade over the KB and search: the built-in engine (index brought up
to date, searches inside one read snapshot), the ``Searcher`` protocol every answerer
satisfies and its two implementations (which also satisfy the evaluation's
protocols), the model and reranker name checks, bringing an index up to date
(``indexing.py``: ``groove index`` imports it without the search pipeline), and the
``groove index`` command a missing index names.

May import: ``search``, ``kb`` and everything below them.

PYTEST_DONT_REWRITE
"""
