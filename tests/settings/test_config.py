"""groove.toml validation: one clear error naming the file and key, or valid settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.errors import GrooveError, UsageError
from pytest_groove.settings.config import (
    FusionParams,
    SearchOverrides,
    SearchSettings,
    apply_search_overrides,
    load_settings,
    normalise_k_values,
    parse_k_list,
)


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "groove.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_config(tmp_path: Path) -> None:
    s = load_settings(tmp_path)
    assert s.index.model == "e5-small"
    assert s.search.fusion == FusionParams()
    assert s.eval.k_values == (1, 5, 10)
    assert s.source is None


def test_full_config_round_trip(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
model = "hash"
exclude_headings = ["Changelog"]
[parsers]
enabled = ["md", "txt"]
[contextual]
enabled = true
[search.fusion]
rrf_k = 10
bm25_heading_weight = 4.0
[search.mmr]
enabled = true
lambda = 0.5
[search.parent_retriever]
enabled = true
max_expanded_tokens = 500
[eval]
golden = "golden/set.yml"
history_size = 5
k_values = [1, 3, 10]
regression_threshold = 0.1
""",
    )
    s = load_settings(tmp_path, path)
    assert s.index.model == "hash" and s.index.contextual
    assert s.index.parsers == ("md", "txt")
    assert s.search.fusion.rrf_k == 10.0 and not s.search.fusion.is_default
    assert s.search.mmr.enabled and s.search.mmr.lambda_ == 0.5
    assert s.search.parent_retriever.max_expanded_tokens == 500
    # a relative golden path is resolved against the config file's directory
    assert s.eval.golden == tmp_path.resolve() / "golden" / "set.yml"
    assert s.eval.k_values == (1, 3, 10)


def test_kb_groove_toml_is_found(tmp_path: Path) -> None:
    write_config(tmp_path, 'model = "hash"\n')
    assert load_settings(tmp_path).index.model == "hash"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[search.fusion]\nrrf_k = 0.5\n", "rrf_k"),
        ("[search.fusion]\nbm25_heading_weight = -1\n", "bm25_heading_weight"),
        (
            "[search.fusion]\nbm25_heading_weight = 0\nbm25_context_weight = 0\n"
            "bm25_content_weight = 0\n",
            "cannot all be 0",
        ),
        ("[search.mmr]\nlambda = 2\n", "lambda"),
        (
            "[search.parent_retriever]\nwhole_doc_threshold_tokens = 300\n"
            "max_expanded_tokens = 200\n",
            "max_expanded_tokens",
        ),
        ("[eval]\nk_values = [0, 5]\n", "at least 1"),
        ("[eval]\nk_values = []\n", "at least one k"),
        ("[eval]\nunknown = 1\n", "unknown key"),
        ("mystery = 1\n", "unknown key"),
        ('[parsers]\nenabled = ["pdf"]\n', "unknown parser"),
        ("[parsers]\nenabled = []\n", "cannot be empty"),
        ('[contextual]\nenabled = "yes"\n', "true or false"),
        ("this is = = not toml", "not valid TOML"),
    ],
)
def test_bad_values_name_file_and_key(tmp_path: Path, text: str, needle: str) -> None:
    path = write_config(tmp_path, text)
    with pytest.raises(GrooveError) as info:
        load_settings(tmp_path, path)
    message = info.value.message
    assert "groove.toml" in message and needle in message
    assert "\n" not in message


def test_missing_explicit_config(tmp_path: Path) -> None:
    with pytest.raises(GrooveError, match="config file not found"):
        load_settings(tmp_path, tmp_path / "nope.toml")


def test_overrides_win_and_are_validated() -> None:
    base = SearchSettings()
    out = apply_search_overrides(base, SearchOverrides(mmr=True, mmr_lambda=0.2, reranker="x"))
    assert out.mmr.enabled and out.mmr.lambda_ == 0.2 and out.reranker == "x"
    with pytest.raises(UsageError):
        apply_search_overrides(base, SearchOverrides(mmr_lambda=float("nan")))


def test_k_lists() -> None:
    assert parse_k_list("--k", "10,1,5,5") == (10, 1, 5, 5)
    assert normalise_k_values((10, 1, 5, 5)) == (1, 5, 10)
    assert normalise_k_values((1001, 2000)) == (1000,)
    for bad in ("", "a", "0", "1,-2"):
        with pytest.raises(UsageError):
            parse_k_list("--k", bad)


_scalars = st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(), st.text(max_size=5))


@settings(max_examples=60, deadline=None)
@given(
    section=st.sampled_from(["search.fusion", "search.mmr", "search.parent_retriever", "eval"]),
    key=st.sampled_from(
        [
            "rrf_k",
            "bm25_heading_weight",
            "lambda",
            "enabled",
            "history_size",
            "k_values",
            "max_expanded_tokens",
            "regression_threshold",
            "bogus",
        ]
    ),
    value=_scalars,
)
def test_any_value_gives_settings_or_one_line_error(
    tmp_path_factory: pytest.TempPathFactory, section: str, key: str, value: object
) -> None:
    import json

    tmp = tmp_path_factory.mktemp("cfg")
    rendered = json.dumps(value) if not isinstance(value, bool) else str(value).lower()
    path = tmp / "groove.toml"
    path.write_text(f"[{section}]\n{key} = {rendered}\n", encoding="utf-8")
    try:
        load_settings(tmp, path)
    except GrooveError as exc:
        assert "\n" not in exc.message and "groove.toml" in exc.message


def test_vector_index_kind(tmp_path: Path) -> None:
    assert load_settings(tmp_path).index.vector_index == "flat"
    write_config(tmp_path, 'vector_index = "hnsw"\n')
    assert load_settings(tmp_path).index.vector_index == "hnsw"
    write_config(tmp_path, 'vector_index = "ivf"\n')
    with pytest.raises(GrooveError, match=r"groove\.toml: vector_index must be one of flat, hnsw"):
        load_settings(tmp_path)
