"""Evaluation: golden files, metrics, run records, history, diff, gate, reports.

PYTEST_DONT_REWRITE
"""
