"""The IR ecosystem's file formats: a BEIR dataset read into a KB and its golden
file.  (The TREC run file and qrels are a report format:
:mod:`pytest_groove.evaluation.reports.trec`; graded nDCG is a metric:
:mod:`pytest_groove.scoring.graded`.)

May import: ``evaluation`` and everything below it.

PYTEST_DONT_REWRITE
"""
