"""``groove tune``: measure whether the fusion parameters can move retrieval quality.

The decision rule is a pure function of a metric table, :func:`decide`, so it can
be tested, simulated and reused without a database.

May import: ``evaluation`` and everything below it.

PYTEST_DONT_REWRITE
"""

from pytest_groove.tune.decide import Verdict, decide

__all__ = ["Verdict", "decide"]
