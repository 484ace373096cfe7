"""``groove baseline accept``: its lines are worded by its own name, whichever way it
accepts (running the golden set, or a run of the log)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli_invoke import Groove


def test_both_ways_of_accepting_say_groove_baseline_accept(
    example_kb_copy: Path, groove: Groove
) -> None:
    args = ("--kb-path", example_kb_copy, "--model", "hash")
    ran = groove("baseline", "accept", *args)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.splitlines()[-1].startswith("groove baseline accept: accepted baseline: "), (
        ran.stderr
    )
    assert "groove eval:" not in ran.stderr
    logged = json.loads(groove("history", "--kb-path", example_kb_copy, "--format", "json").stdout)
    stamp = logged[0]["run"]
    again = groove("baseline", "accept", *args, "--run", stamp)
    assert again.returncode == 0, again.stderr
    assert again.stderr.startswith("groove baseline accept: accepted baseline: "), again.stderr
