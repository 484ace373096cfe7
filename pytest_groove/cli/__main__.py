"""``python -m pytest_groove.cli``: the ``groove`` command.

PYTEST_DONT_REWRITE
"""

import sys

from pytest_groove.cli import main

sys.exit(main())
