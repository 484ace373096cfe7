"""The record of one run: per-query results, the fingerprint, the corpus's documents,
the gate it was held to, timestamps, each stored run's trust digest, and the
golden-quote findings.

May import: ``evaluation.golden`` and everything below ``evaluation``.

PYTEST_DONT_REWRITE
"""
