"""Judging a run against its baseline: the comparison and deltas, which stored run is
the baseline, the gate's policy (thresholds, significance, floors, loosening), one
verdict per golden query, and the names reports give queries.

May import: ``evaluation.runs``, ``evaluation.golden`` and everything below.

PYTEST_DONT_REWRITE
"""
