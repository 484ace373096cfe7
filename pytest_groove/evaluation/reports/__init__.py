"""Where a run's results go: the text, JSON and HTML reports (with their verdict
columns and plots), the Markdown summary and the badge (both leading with the verdict
of ``headline.py``, as the HTML does), the TREC run file, the table of the report
files a run writes (``formats.py``), and where report files may be written.

May import: ``evaluation.history``, ``evaluation.gate``, ``evaluation.runs``,
``evaluation.golden`` and everything below ``evaluation``.

PYTEST_DONT_REWRITE
"""
