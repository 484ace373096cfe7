"""The embedding model and reranker names, checked before any index work.

A name is only looked up when the engine loads it -- after the index was brought up to
date, for a reranker.  These checks build nothing, so every door makes them first: a
bad ``--model`` / ``--reranker`` is a bad flag value (:class:`UsageError`: exit 2 for
``groove``, 4 under pytest), a bad ``model`` / ``reranker`` in ``groove.toml`` a config
error naming the file (exit 1 for ``groove``).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from pytest_groove.errors import GrooveError, UsageError, clip_path, clip_repr
from pytest_groove.settings.options import RunOptions
from pytest_groove.settings.records import Settings


def check_model(name: str) -> None:
    """:class:`UsageError` unless ``name`` is a model the registry can build."""
    from pytest_groove.embed.registry import check_model_name

    check_model_name(name)


def check_reranker(name: str) -> None:
    """:class:`UsageError` unless ``name`` is a reranker the search can load (its model
    is looked for only when it is loaded)."""
    from pytest_groove.search.pipeline.rerank import known_reranker_names, resolve_model_id

    if name in known_reranker_names():
        return
    try:
        known = resolve_model_id(name) is not None
    except GrooveError as exc:  # a prefix that names no model
        raise UsageError(exc.raw_message) from None
    if not known:
        raise UsageError(
            f"unknown reranker {clip_repr(name)}: use one of "
            f"{', '.join(known_reranker_names())}, or cross-encoder:<hub id or local path>"
        )


def check_flag_names(options: RunOptions, *, model: bool = True) -> None:
    """``--model`` (unless ``model`` is False: a hook supplies the embedder) and
    ``--reranker``, when given; :class:`UsageError` for a bad one."""
    if model and options.model is not None:
        check_model(options.model)
    if options.reranker is not None:
        check_reranker(options.reranker)


def check_config_names(settings: Settings, *, model: bool = True, reranker: bool = True) -> None:
    """The model and reranker ``settings`` name (the flags' values, already checked,
    else the config's): a bad one is a config error naming the file."""
    try:
        if model:
            check_model(settings.index.model)
        if reranker:
            check_reranker(settings.search.reranker)
    except UsageError as exc:
        if settings.source is None:  # the built-in defaults: always known
            raise
        raise GrooveError(
            f"invalid config {clip_path(settings.source)}: {exc.raw_message}"
        ) from None
