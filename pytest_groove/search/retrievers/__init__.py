"""A team's own retriever in place of the built-in search: Python callables and the
frameworks' retrievers, HTTP services, their answers read as hits, the hits' paths
mapped to KB files, the checks and advice on a whole run of them, and the checks
of the options that describe one (which the evaluation's plan asks before a search).

May import: ``search.pipeline``, ``search.query``, ``search``, ``kb`` and below.

PYTEST_DONT_REWRITE
"""
