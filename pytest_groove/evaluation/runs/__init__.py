"""The record of one run: per-query results, the fingerprint, the corpus's documents,
the gate it was held to, timestamps, each stored run's trust digest, the
golden-quote findings, what the golden set covers of the KB (:mod:`.coverage`), and a
stored run's text with its queries read at their first use (:mod:`.stored`).

May import: ``evaluation.golden`` and everything below ``evaluation``.

PYTEST_DONT_REWRITE
"""
