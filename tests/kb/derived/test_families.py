"""The table of the index folder's derived files (``kb/derived/families.py``).

Every registered module declares its families, the table names each file the indexer
and a search leave beside ``index.db`` (and nothing of the database's own), and the
modules it names lazily point downwards: none of them imports the table.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

from pytest_groove.kb.derived.cache_check import is_derived
from pytest_groove.kb.derived.families import REGISTERED, derived_families, family_of
from pytest_groove.kb.derived.family import DerivedFamily, Retention
from pytest_groove.kb.derived.vector_cache import DERIVED_FILES
from tests.helpers.cache_damage import evaluated_example, index_dir

PACKAGE = Path(__file__).resolve().parents[3] / "pytest_groove"


def test_every_registered_module_declares_its_families() -> None:
    declared = [
        family for name in REGISTERED for family in importlib.import_module(name).DERIVED_FILES
    ]
    assert derived_families() == tuple(declared)
    assert all(isinstance(family, DerivedFamily) for family in declared)
    assert len({family.name for family in declared}) == len(declared)
    for family in declared:
        assert (family.keep is not None) == (family.retention is Retention.NEWEST), family


def test_the_registered_modules_never_import_the_table() -> None:
    for name in REGISTERED:
        assert name.startswith("pytest_groove.kb.derived.")
        path = PACKAGE.parent / (name.replace(".", "/") + ".py")
        imported = {
            node.module
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom)
        }
        assert "pytest_groove.kb.derived.families" not in imported, name
        assert "pytest_groove.kb.derived.cache_check" not in imported, name


def test_importing_the_check_imports_no_registered_module() -> None:
    code = (
        f"import sys; sys.path.insert(0, {str(PACKAGE.parent)!r}); "
        "import pytest_groove.kb.derived.cache_check; "
        f"print([m for m in {list(REGISTERED)!r} if m in sys.modules])"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"


def test_each_file_of_an_index_folder_is_one_familys(tmp_path: Path) -> None:
    kb, _ = evaluated_example(tmp_path)
    names = sorted(path.name for path in index_dir(kb).iterdir())
    # index.db, its seal and index.lock are the database's own
    assert [name for name in names if not is_derived(name)] == [
        name for name in names if name.startswith("index.")
    ], names
    owned: set[str] = set()
    for name in names:
        owners = [family.name for family in derived_families() if family.owns(name)]
        assert len(owners) <= 1, (name, owners)
        family = family_of(name)
        assert owners == ([] if family is None else [family.name])
        owned.update(owners)
    # the example's run writes a file of every family but the note-carrying caches of
    # another kind than flat (its flat one's rows are kept in index.db)
    other_kind = {family.name for family in DERIVED_FILES if family.prefix == "notevectors-"}
    assert owned == {family.name for family in derived_families()} - other_kind
