"""What an index's chunks were built with, and whether this configuration may use them.

The indexer records, in the index's metadata, the embedding model (and its dimension),
the ``exclude_headings`` the notes were cut with and the context mode.  An index built
with another model or other exclusions holds what no fresh build of this configuration
would: the indexer rebuilds it (:func:`rebuild_reason`), so a restored CI cache scores
as a cache miss does.  The context mode is the exception: the index keeps its own
mode, with a warning, until ``groove index --force``, and a run's fingerprint records
the mode the index carries, so runs on either side are never compared.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import json

from pytest_groove.embed.base import Embedder
from pytest_groove.errors import clip, clip_path, flag
from pytest_groove.kb.index_group import IndexReport
from pytest_groove.kb.store.database import Store
from pytest_groove.settings.config import IndexSettings

#: index metadata: the ``exclude_headings`` the chunks were cut with (JSON list)
EXCLUDE_HEADINGS_META = "exclude_headings"


def context_mode_for(settings: IndexSettings) -> str:
    """The context mode the settings ask for.

    ``off``: chunks are embedded and searched as they are; ``static``: each chunk's
    breadcrumb is embedded with it and searched in full text; ``embedded``: the
    breadcrumb is embedded with it but not stored or searched.
    """
    if not settings.contextual:
        return "off"
    return "static" if settings.contextual_full_text else "embedded"


def resolve_context_mode(store: Store, desired: str, force: bool, report: IndexReport) -> str:
    """The index's recorded context mode wins; switching needs ``--force``."""
    recorded = store.get_meta("context_mode")
    _docs, chunks = store.counts()
    if force or recorded is None or chunks == 0:
        mode = desired
    else:
        mode = recorded
        if recorded != desired:
            report.warnings.append(
                f"the index was built with contextual mode {recorded!r} but the config asks "
                f"for {desired!r}; keeping {recorded!r} - run `groove index --force` to switch"
            )
    if recorded != mode:
        with store.transaction():
            store.set_meta("context_mode", mode)
    return mode


def rebuild_reason(store: Store, embedder: Embedder, settings: IndexSettings) -> str | None:
    """Why the stored chunks are not what this configuration would index (None: they
    are): another embedding model, or other ``exclude_headings``, than built them.

    The index is derived data, so an indexer rebuilds it rather than stop a run (under
    pytest there is no ``--force`` to give) or search a corpus a fresh build would not
    hold (a restored CI cache would then score otherwise than a cache miss)."""
    model = store.get_meta("embedding_model")
    dim = store.get_meta("embedding_dim")
    if model is not None and (model != embedder.name or dim != str(embedder.dimension)):
        return (
            f"the index at {clip_path(store.path)} was built with {model!r} (dim {dim}), and "
            f"{embedder.name!r} (dim {embedder.dimension}) was asked for: rebuilt it for "
            f"{embedder.name!r} (keep one {flag('index-dir')} per model to keep both)"
        )
    recorded = store.get_meta(EXCLUDE_HEADINGS_META)
    wanted = list(settings.exclude_headings)
    _docs, chunks = store.counts()
    # an index of an earlier version recorded none: the same as none excluded
    before = json.loads(recorded) if recorded is not None else []
    if chunks and before != wanted:
        return (
            f"the index at {clip_path(store.path)} was cut with exclude_headings "
            f"{clip(json.dumps(before, ensure_ascii=False))}, and the configuration "
            f"excludes {clip(json.dumps(wanted, ensure_ascii=False))}: rebuilt it"
        )
    return None


def record_build(store: Store, embedder: Embedder, settings: IndexSettings) -> None:
    """Record what the chunks are built with (after a rebuild's wipe, so a run killed
    in between finds the old record and rebuilds again)."""
    values = {
        "embedding_model": embedder.name,
        "embedding_dim": str(embedder.dimension),
        EXCLUDE_HEADINGS_META: json.dumps(list(settings.exclude_headings), ensure_ascii=False),
    }
    if any(store.get_meta(key) != value for key, value in values.items()):
        with store.transaction():
            for key, value in values.items():
                store.set_meta(key, value)
