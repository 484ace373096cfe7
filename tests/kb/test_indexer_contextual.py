"""Contextual mode "embedded": the breadcrumb is embedded with each chunk, never searched."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pytest_groove.engine.builtin import open_engine, run_indexer
from pytest_groove.evaluation.runs.record import Fingerprint
from pytest_groove.settings.config import IndexSettings, SearchSettings, Settings, load_settings
from tests.helpers.embedders import RecordingEmbedder

OFF = Settings(index=IndexSettings(model="hash"))
EMBEDDED = Settings(index=IndexSettings(model="hash", contextual=True, contextual_full_text=False))
STATIC = Settings(index=IndexSettings(model="hash", contextual=True))
BODY = "## Setup\n\n" + "install the tools and check the versions " * 3


def write(kb: Path, rel: str, text: str) -> None:
    path = kb / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_guide(kb: Path, title: str) -> None:
    write(kb, "guide.md", f"---\ntitle: {title}\n---\n" + BODY)


def index_guide(kb: Path, settings: Settings) -> RecordingEmbedder:
    """Write the guide titled Workstation into ``kb`` and index it, recording the texts
    embedded."""
    write_guide(kb, "Workstation")
    embedder = RecordingEmbedder()
    run_indexer(kb, settings, embedder=embedder, progress=False)
    return embedder


def test_config_key_selects_the_mode(tmp_path: Path) -> None:
    config = tmp_path / "groove.toml"
    config.write_text("[contextual]\nenabled = true\nfull_text = false\n", encoding="utf-8")
    index = load_settings(tmp_path, config).index
    assert index.contextual and not index.contextual_full_text
    config.write_text("[contextual]\nenabled = true\n", encoding="utf-8")
    assert load_settings(tmp_path, config).index.contextual_full_text


def test_breadcrumb_is_embedded_but_not_stored_or_searched(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    embedder = index_guide(kb, EMBEDDED)
    assert embedder.passages[0].startswith("Workstation > Setup\n\ninstall the tools")
    with open_engine(kb, EMBEDDED, embedder=embedder, reindex=False) as engine:
        assert engine.context_mode == "embedded"
        assert engine.context_chunk_count() == 0
        assert [t.context for t in engine.iter_chunk_texts()] == [None]
        # the title's word is in no full-text column: only the breadcrumb had it
        assert engine.fts_match_count('"Workstation"') == 0
        assert engine.fts_match_count('"install"') == 1
    static = tmp_path / "static"
    write(static, "guide.md", "---\ntitle: Workstation\n---\n" + BODY)
    run_indexer(static, STATIC, progress=False)
    with open_engine(static, STATIC, reindex=False) as engine:
        assert engine.fts_match_count('"Workstation"') == 1


def test_plain_mode_embeds_the_text_alone(tmp_path: Path) -> None:
    embedder = index_guide(tmp_path / "kb", OFF)
    assert embedder.passages[0].startswith("install the tools")


def test_a_title_edit_re_embeds_the_chunks_in_embedded_mode_only(tmp_path: Path) -> None:
    for settings, chunks in ((EMBEDDED, 1), (OFF, 0)):
        kb = tmp_path / str(chunks)
        embedder = index_guide(kb, settings)
        write_guide(kb, "Laptop")
        before = len(embedder.passages)
        report = run_indexer(kb, settings, embedder=embedder, progress=False)
        assert report.changed == 1
        # the chunk (embedded mode), then the note vector (a new title, either mode)
        fresh = embedder.passages[before:]
        assert len(fresh) == chunks + 1
        assert fresh[-1].startswith("Laptop\n\ninstall the tools")
        if chunks:
            assert fresh[0].startswith("Laptop > Setup\n\n")


def test_a_rename_re_embeds_when_the_name_is_the_title(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "alpha.md", BODY)
    embedder = RecordingEmbedder()
    run_indexer(kb, EMBEDDED, embedder=embedder, progress=False)
    # the chunk, then the note vector (a title made from the name is not in it)
    assert embedder.passages[-2].startswith("alpha > Setup\n\n")
    assert embedder.passages[-1].startswith("install the tools")
    (kb / "alpha.md").rename(kb / "beta.md")
    report = run_indexer(kb, EMBEDDED, embedder=embedder, progress=False)
    assert report.renamed == 1
    # the chunk with its new breadcrumb; the note vector's text is the same: found
    assert embedder.passages[-1].startswith("beta > Setup\n\n")
    assert (report.chunks_embedded, report.notes_embedded, report.notes_reused) == (1, 0, 1)


def test_switching_to_embedded_needs_force(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write_guide(kb, "Workstation")
    run_indexer(kb, STATIC, progress=False)
    report = run_indexer(kb, EMBEDDED, progress=False)
    assert any("'static'" in w and "'embedded'" in w and "--force" in w for w in report.warnings)
    run_indexer(kb, EMBEDDED, force=True, progress=False)
    with open_engine(kb, EMBEDDED, reindex=False) as engine:
        assert engine.context_mode == "embedded"


def test_runs_record_the_mode_in_their_fingerprint() -> None:
    def context(mode: str | None) -> object:
        fp = Fingerprint.build("m", None, 10, (1,), "h", SearchSettings(), mode)
        return fp.to_json().get("context")

    assert context("embedded") == {"mode": "embedded"}
    assert context("static") == {"mode": "static"}
    assert context("off") is None
    embedded = Fingerprint.build("m", None, 10, (1,), "h", SearchSettings(), "embedded")
    assert Fingerprint.from_json(embedded.to_json()) == embedded
    assert embedded != replace(embedded, context={"mode": "static"})
