"""The golden file: where it is, its YAML layer with line numbers, what it may hold,
the check that every expected path and heading exists before any search, and a query
appended to the file with every byte already in it kept.

May import: ``engine`` and everything below it.

PYTEST_DONT_REWRITE
"""
