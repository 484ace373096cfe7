"""The effective settings of one evaluation: k list, limit, depth and their notes.

spec-eval §3.2: when no limit is given, the default limit is the largest k *as
requested* (before capping), so a k over the retrieval cap alone produces the
limit-cap note -- the reference tool does exactly that, and so do both doors here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_groove.config import SEARCH_LIMIT_MAX
from pytest_groove.evaluation.setup import EvalRequest, resolve_eval_setup

NOTE = f"note: limit 2000 exceeds the retrieval cap; using {SEARCH_LIMIT_MAX}"


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    (root / ".groove-eval.yml").write_text(
        'queries:\n  - query: "q"\n    expected:\n      - path: "a.md"\n', encoding="utf-8"
    )
    return root


def test_a_k_over_the_cap_alone_gives_the_limit_note(kb: Path) -> None:
    setup = resolve_eval_setup(EvalRequest(kb=kb, k_values=(2000,)))
    assert setup.notes == (NOTE,)
    assert (setup.k_values, setup.limit, setup.depth) == ((1000,), 1000, 1000)


def test_a_k_over_the_cap_in_the_config_gives_the_same_note(kb: Path) -> None:
    (kb / "groove.toml").write_text("[eval]\nk_values = [1, 2000]\n", encoding="utf-8")
    setup = resolve_eval_setup(EvalRequest(kb=kb))
    assert setup.notes == (NOTE,)
    assert (setup.k_values, setup.limit) == ((1, 1000), 1000)


def test_an_explicit_limit_within_the_cap_silences_the_note(kb: Path) -> None:
    setup = resolve_eval_setup(EvalRequest(kb=kb, k_values=(2000,), limit=5))
    assert setup.notes == ()
    assert (setup.k_values, setup.limit, setup.depth) == ((1000,), 5, 1000)


def test_a_limit_over_the_cap_gives_the_note(kb: Path) -> None:
    setup = resolve_eval_setup(EvalRequest(kb=kb, k_values=(1, 5), limit=2000))
    assert setup.notes == (NOTE,)
    assert (setup.limit, setup.depth) == (1000, 1000)
