"""Scoring one run's answers: the golden records, the metrics (one function each),
the metric table with every metric's names, significance, absolute floors and
regression thresholds, and a golden query's constraints (``not_expected``, ``within``).

May import: ``errors``, ``shapes``, ``text``.

PYTEST_DONT_REWRITE
"""
