"""The golden file: where it is, its YAML layer with line numbers, what it may hold,
and the check that every expected path and heading exists before any search.

May import: ``engine`` and everything below it.

PYTEST_DONT_REWRITE
"""
