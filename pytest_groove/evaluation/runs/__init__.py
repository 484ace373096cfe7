"""The record of one run: per-query results, the fingerprint, the corpus's documents,
the gate it was held to, timestamps, each stored run's trust digest, the
golden-quote findings, and what the golden set covers of the KB (:mod:`.coverage`).

May import: ``evaluation.golden`` and everything below ``evaluation``.

PYTEST_DONT_REWRITE
"""
