"""Knowledge-base side: walking, parsing, storing and indexing.

PYTEST_DONT_REWRITE
"""
