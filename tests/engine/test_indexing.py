"""``groove index`` brings the index up to date without importing the search pipeline."""

from __future__ import annotations

import subprocess
import sys


def test_the_indexer_s_door_leaves_the_search_pipeline_unimported() -> None:
    code = (
        "import sys\n"
        "from pytest_groove.engine.indexing import run_indexer\n"
        "print(sorted(m for m in sys.modules if m.startswith('pytest_groove.search.pipeline')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
