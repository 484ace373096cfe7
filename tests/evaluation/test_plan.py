"""Planning an evaluation: the k list, limit, depth, their notes, and the refusals.

spec-eval §3.2: when no limit is given, the default limit is the largest k *as
requested* (before capping), so a k over the retrieval cap alone produces the
cap note -- as the reference tool does, and both doors here; the note then names the
k, where the number came from, rather than a limit nobody gave.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_groove.errors import GrooveError, UsageError
from pytest_groove.evaluation.plan import plan_evaluation
from pytest_groove.settings.config import SEARCH_LIMIT_MAX
from pytest_groove.settings.options import RunOptions

NOTE = f"note: limit 2000 exceeds the retrieval cap; using {SEARCH_LIMIT_MAX}"
K_NOTE = (
    f"note: k 2000 exceeds the retrieval cap; using {SEARCH_LIMIT_MAX} (for that k and for "
    "the limit, which defaults to the largest k)"
)


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    (root / ".groove-eval.yml").write_text(
        'queries:\n  - query: "q"\n    expected:\n      - path: "a.md"\n', encoding="utf-8"
    )
    return root


def test_a_k_over_the_cap_alone_gives_the_limit_note(kb: Path) -> None:
    setup = plan_evaluation(kb, RunOptions(k=(2000,)))
    assert setup.notes == (K_NOTE,)
    assert (setup.k_values, setup.limit, setup.depth) == ((1000,), 1000, 1000)


def test_a_k_over_the_cap_in_the_config_gives_the_same_note(kb: Path) -> None:
    (kb / "groove.toml").write_text("[eval]\nk_values = [1, 2000]\n", encoding="utf-8")
    setup = plan_evaluation(kb, RunOptions())
    assert setup.notes == (K_NOTE,)
    assert (setup.k_values, setup.limit) == ((1, 1000), 1000)


def test_an_explicit_limit_within_the_cap_silences_the_note(kb: Path) -> None:
    setup = plan_evaluation(kb, RunOptions(k=(2000,), limit=5))
    assert setup.notes == ()
    assert (setup.k_values, setup.limit, setup.depth) == ((1000,), 5, 1000)


def test_a_limit_over_the_cap_gives_the_note(kb: Path) -> None:
    setup = plan_evaluation(kb, RunOptions(k=(1, 5), limit=2000))
    assert setup.notes == (NOTE,)
    assert (setup.limit, setup.depth) == (1000, 1000)


# --------------------------------------------------------------------------- from options


def test_every_option_that_shapes_the_settings_reaches_them(kb: Path) -> None:
    """Both doors plan from RunOptions; a field left behind fails here."""
    (kb / "c.toml").write_text("", encoding="utf-8")
    (kb / "g.yml").write_text((kb / ".groove-eval.yml").read_text("utf-8"), encoding="utf-8")
    run = RunOptions(
        golden=kb / "g.yml", config=kb / "c.toml", k=(1, 3), limit=7, model="hash",
        reranker="none", mmr=True, mmr_lambda=0.3, mmr_same_doc_penalty=0.2,
        parent_retriever=False, index_dir=kb / "idx", vector_index="hnsw",
    )  # fmt: skip
    plan = plan_evaluation(kb, run)
    search = plan.settings.search
    assert (plan.k_values, plan.limit, plan.depth) == ((1, 3), 7, 7)
    assert plan.golden.path == str(kb / "g.yml")
    assert plan.settings.index.model == "hash"
    assert plan.settings.index.index_dir == kb / "idx"
    assert plan.settings.index.vector_index == "hnsw"
    assert search.reranker == "none" and search.mmr.enabled
    assert (search.mmr.lambda_, search.mmr.same_doc_penalty) == (0.3, 0.2)
    assert not search.parent_retriever.enabled
    assert plan.options == run


def test_freeze_without_history_is_refused_in_both_spellings(kb: Path) -> None:
    run = RunOptions(no_history=True, freeze_baseline=True)
    with pytest.raises(UsageError) as caught:
        plan_evaluation(kb, run)
    assert caught.value.message == "--freeze-baseline needs the history: drop --no-history"
    assert caught.value.message_for("pytest") == (
        "--groove-freeze-baseline needs the history: drop --groove-no-history"
    )


def test_the_history_is_read_at_plan_time_only_when_asked(kb: Path) -> None:
    (kb / ".groove-eval-history.json").mkdir()  # refused when read
    plan = plan_evaluation(kb, RunOptions())
    assert plan.stored is None
    with pytest.raises(GrooveError, match="refusing to read the eval history"):
        plan_evaluation(kb, RunOptions(), read_history=True)


def test_the_retriever_table_fills_the_retriever_options_it_does_not_override(
    kb: Path,
) -> None:
    (kb / "groove.toml").write_text(
        '[retriever]\nname = "team-search-v2"\ntimeout = 2.5\ntoken_env = "SEARCH_TOKEN"\n',
        encoding="utf-8",
    )
    plan = plan_evaluation(kb, RunOptions(retriever="http://localhost:9/s"))
    assert (plan.options.retriever_name, plan.options.retriever_timeout) == ("team-search-v2", 2.5)
    assert plan.options.retriever_token_env == "SEARCH_TOKEN"
    typed = plan_evaluation(
        kb,
        RunOptions(retriever="http://localhost:9/s", retriever_name="typed", retriever_timeout=9.0),
    )
    assert (typed.options.retriever_name, typed.options.retriever_timeout) == ("typed", 9.0)
    # the table alone, with no retriever named, leaves a built-in run as it is
    assert plan_evaluation(kb, RunOptions()).options.retriever is None


@pytest.mark.parametrize(
    "given",
    [
        {"retriever_name": "team-search"},
        {"retriever_timeout": 5.0},
        {"retriever_token_env": "TOKEN"},
        {"retriever_path_key": "source"},
        {"retriever_heading_key": "title", "retriever_name": "x"},
    ],
)
def test_retriever_options_with_no_retriever_are_refused(kb: Path, given: dict[str, Any]) -> None:
    # they would have described a retriever while the built-in search was measured
    with pytest.raises(UsageError) as caught:
        plan_evaluation(kb, RunOptions(**given))
    message = caught.value.message
    assert "a retriever of your own, but this run measures none" in message
    assert message.count("--retriever-") == len(given)
    # a pytest_groove_retriever hook may be what they describe (its retriever is a
    # Python object: the options of an http:// retriever are refused for it)
    if "retriever_timeout" in given or "retriever_token_env" in given:
        with pytest.raises(UsageError, match="is for http:// retrievers"):
            plan_evaluation(kb, RunOptions(**given), retriever_hook=True)
        return
    hooked = plan_evaluation(kb, RunOptions(**given), retriever_hook=True).options
    assert {name: getattr(hooked, name) for name in given} == given


def test_a_bad_retriever_table_is_one_line_naming_the_file(kb: Path) -> None:
    (kb / "groove.toml").write_text("[retriever]\ntimeout = -1\nnmae = 'x'\n", "utf-8")
    with pytest.raises(GrooveError) as caught:
        plan_evaluation(kb, RunOptions())
    assert caught.value.message.startswith(f"invalid config {kb / 'groove.toml'}: retriever.")
