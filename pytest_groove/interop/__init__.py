"""The IR ecosystem's file formats: TREC run / qrels export, BEIR import.

PYTEST_DONT_REWRITE
"""
