"""The run log, ``.groove-eval-history.json``: its file layout and codec, reading the
runs their digests vouch for without their queries, reading a damaged or merged file,
and saving it under its lock.

May import: ``evaluation.gate``, ``evaluation.runs``, ``evaluation.golden`` and below.

PYTEST_DONT_REWRITE
"""
