"""``python -m pytest_groove.cli``: the ``groove`` command."""

import sys

from pytest_groove.cli import main

sys.exit(main())
