"""Where a run's results go: the text, JSON and HTML reports (with their verdict
columns and plots), the TREC run file, and where report files may be written.

May import: ``evaluation.history``, ``evaluation.gate``, ``evaluation.runs``,
``evaluation.golden`` and everything below ``evaluation``.

PYTEST_DONT_REWRITE
"""
