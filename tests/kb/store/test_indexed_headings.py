"""The headings map the golden check reads: every path, a document's headings when asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_groove.engine.builtin import open_engine, run_indexer
from pytest_groove.kb.store.database import Store
from pytest_groove.settings.config import IndexSettings, Settings

SETTINGS = Settings(index=IndexSettings(model="hash"))


def write_kb(kb: Path) -> None:
    kb.mkdir()
    for d in range(4):
        (kb / f"n{d}.md").write_text(f"# N{d}\n\n## A\n\nretry budget {d}\n\n## B\n\nlease {d}\n")


def every_heading(store: Store) -> dict[str, set[str | None]]:
    """Every indexed path with the headings its chunks carry, in one query: the map
    the per-document reads must add up to."""
    out: dict[str, set[str | None]] = {}
    for path, heading in store.conn.execute(
        "SELECT d.path, c.heading FROM documents d LEFT JOIN chunks c ON c.document_id = d.id"
    ):
        out.setdefault(str(path), set()).add(None if heading is None else str(heading))
    return out


def test_the_headings_map_reads_only_the_documents_asked_for_and_follows_edits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = tmp_path / "kb"
    write_kb(kb)
    (kb / "plain.md").write_text("no heading at all, just text about leases\n")
    run_indexer(kb, SETTINGS)
    read: list[int] = []
    real = Store.document_headings

    def counted(self: Store, doc_id: int) -> set[str | None]:
        read.append(doc_id)
        return real(self, doc_id)

    with monkeypatch.context() as patch:
        patch.setattr(Store, "document_headings", counted)
        with open_engine(kb, SETTINGS, reindex=False) as engine, engine.read_snapshot():
            headings = engine.headings_by_path()
            assert "plain.md" in headings and "nowhere.md" not in headings
            assert headings.get("nowhere.md") is None
            assert read == []  # membership reads no chunk
            assert headings["plain.md"] == {None}
            assert headings["plain.md"] == {None}
            assert len(read) == 1  # each document read once
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        assert dict(engine.headings_by_path()) == every_heading(engine.store)
    (kb / "n1.md").write_text("# N1\n\n## Renamed\n\nretry\n")
    (kb / "n3.md").unlink()
    run_indexer(kb, SETTINGS)
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        updated = engine.headings_by_path()
        assert updated["n1.md"] == {"Renamed"} and "n3.md" not in updated
        assert dict(updated) == every_heading(engine.store)
