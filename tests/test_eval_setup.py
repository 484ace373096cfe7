"""The effective settings of one evaluation: k list, limit, depth and their notes.

spec-eval §3.2: when no limit is given, the default limit is the largest k *as
requested* (before capping), so a k over the retrieval cap alone produces the
limit-cap note -- the reference tool does exactly that, and so do both doors here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_groove.config import SEARCH_LIMIT_MAX, SearchOverrides
from pytest_groove.evaluation.finish import EvalFlags
from pytest_groove.evaluation.setup import (
    EvalRequest,
    eval_flags,
    eval_request,
    resolve_eval_setup,
)
from pytest_groove.options import RunOptions

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


# --------------------------------------------------------------------------- from options


def test_every_option_that_shapes_the_evaluation_reaches_the_request(kb: Path) -> None:
    """Both doors build the request from RunOptions here; a field left behind fails."""
    run = RunOptions(
        golden=Path("g.yml"), config=Path("c.toml"), k=(1, 3), limit=7, model="hash",
        reranker="none", mmr=True, mmr_lambda=0.3, mmr_same_doc_penalty=0.2,
        parent_retriever=False, index_dir=Path("idx"),
    )  # fmt: skip
    assert eval_request(kb, run) == EvalRequest(
        kb=kb,
        golden=Path("g.yml"),
        config_file=Path("c.toml"),
        k_values=(1, 3),
        limit=7,
        model="hash",
        reranker="none",
        overrides=SearchOverrides(
            mmr=True, mmr_lambda=0.3, mmr_same_doc_penalty=0.2, parent_retriever=False
        ),
        index_dir=Path("idx"),
    )


def test_the_session_end_switches_come_from_the_options() -> None:
    run = RunOptions(
        no_history=True, no_diff=True, fail_on_regression=True, freeze_baseline=True,
        json=Path("r.json"), html=Path("r.html"),
    )  # fmt: skip
    assert eval_flags(run, color=True) == EvalFlags(
        no_history=True,
        no_diff=True,
        fail_on_regression=True,
        freeze_baseline=True,
        color=True,
        json_path=Path("r.json"),
        html_path=Path("r.html"),
    )
