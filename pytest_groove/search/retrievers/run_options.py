"""The options of a run that measures a team's own retriever, checked by the
retriever's side: which flags describe a retriever, which apply only to an http://
one, what a custom retriever's run leaves unused, and how ``[retriever]`` in
groove.toml fills them in.  The evaluation's plan asks these before any search.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
from dataclasses import replace

from pytest_groove.errors import UsageError, clip_path, flag
from pytest_groove.settings.config import Settings
from pytest_groove.settings.options import RunOptions
from pytest_groove.settings.retriever_spec import is_url

#: the built-in engine's search-pipeline overrides (``groove search`` and ``groove eval``
#: take them as flags)
ENGINE_PIPELINE_OPTIONS = (
    "reranker",
    "mmr",
    "mmr-lambda",
    "mmr-same-doc-penalty",
    "parent-retriever",
    "vector-index",
)
#: the built-in engine's options (its index, model and search pipeline), which a
#: custom retriever's run does not use
ENGINE_ONLY_OPTIONS = ("model", *ENGINE_PIPELINE_OPTIONS, "index-dir")


def engine_options_note(options: RunOptions) -> str | None:
    """The warning for built-in engine options given beside a custom retriever."""
    given = [
        name for name in ENGINE_ONLY_OPTIONS if getattr(options, name.replace("-", "_")) is not None
    ]
    if not given:
        return None
    names = ", ".join(flag(name) for name in given)
    verb = "does" if len(given) == 1 else "do"
    return (
        f"warning: {names} {verb} not apply to a custom retriever (it searches its own "
        "store); ignored"
    )


#: the options only an http:// retriever uses, and the ``[retriever]`` keys behind them
HTTP_ONLY_OPTIONS = (("retriever-timeout", "timeout"), ("retriever-token-env", "token_env"))


def _python_retriever(options: RunOptions, retriever_hook: bool) -> str | None:
    """How a message names the Python retriever this run measures; None when it
    measures an http:// one or none (a hook's answer is a Python object)."""
    if options.retriever is not None:
        return None if is_url(options.retriever) else options.retriever
    return "the pytest_groove_retriever hook's retriever" if retriever_hook else None


def check_http_only_options(options: RunOptions, retriever_hook: bool = False) -> None:
    """``--retriever-timeout`` / ``--retriever-token-env`` beside a Python retriever: it
    runs in this process (no call of it can be cut short) and reads its own credentials,
    so neither would apply; refused rather than silently ignored.  Only the options
    given to this run count (``[retriever]`` keys are :func:`retriever_notes`' warning).
    """
    retriever = _python_retriever(options, retriever_hook)
    given = [
        name
        for name, _ in HTTP_ONLY_OPTIONS
        if getattr(options, name.replace("-", "_")) is not None
    ]
    if retriever is None or not given:
        return
    names = " and ".join(flag(name) for name in given)
    why = []
    if "retriever-timeout" in given:
        why.append(
            "is called in this process, where a call cannot be cut short (set the timeout "
            "on the client it uses: QdrantClient(timeout=...), an HTTP client's timeout)"
        )
    if "retriever-token-env" in given:
        why.append("reads its own credentials")
    raise UsageError(
        f"{names} {'is' if len(given) == 1 else 'are'} for http:// retrievers, and "
        f"{retriever} is a Python retriever, which {' and '.join(why)}: drop "
        f"{'it' if len(given) == 1 else 'them'}"
    )


def retriever_notes(options: RunOptions, settings: Settings, retriever_hook: bool) -> list[str]:
    """Warnings for what a custom retriever's run will not use: the built-in engine's
    options, and beside a Python retriever the ``[retriever]`` keys and the
    ``$GROOVE_RETRIEVER_TIMEOUT`` an http:// retriever would use.  ``options`` as given
    (before ``[retriever]`` fills them in)."""
    notes = [note for note in (engine_options_note(options),) if note is not None]
    retriever = _python_retriever(options, retriever_hook)
    if retriever is None:
        return notes
    configured = [key for _, key in HTTP_ONLY_OPTIONS if getattr(settings.retriever, key)]
    if configured:
        keys = " and ".join(f"[retriever] {key}" for key in configured)
        notes.append(
            f"warning: {keys} in {clip_path(settings.source)} "
            f"{'is' if len(configured) == 1 else 'are'} for http:// retrievers; {retriever} "
            "is a Python retriever, so ignored"
        )
    if "timeout" in configured:
        return notes
    # imported here: the HTTP client stays unloaded in a run that measures no service
    from pytest_groove.search.retrievers.http import TIMEOUT_ENV

    if os.environ.get(TIMEOUT_ENV, "").strip():
        notes.append(
            f"warning: ${TIMEOUT_ENV} is for http:// retrievers; {retriever} is a Python "
            "retriever, called without a deadline (set the timeout on the client it uses)"
        )
    return notes


#: the options that only describe a retriever of the team's own
RETRIEVER_DETAILS = (
    "retriever-name",
    "retriever-timeout",
    "retriever-token-env",
    "retriever-path-key",
    "retriever-heading-key",
)


def check_no_retriever_details(options: RunOptions) -> None:
    """``--retriever-name`` and the like with no retriever to describe: the run would
    measure the built-in search while its options say otherwise, so it is refused.

    Only the options given to this run count: ``[retriever]`` in groove.toml may hold
    them for the runs that do name a retriever.
    """
    given = [
        name for name in RETRIEVER_DETAILS if getattr(options, name.replace("-", "_")) is not None
    ]
    if given:
        names = ", ".join(flag(name) for name in given)
        raise UsageError(
            f"{names} {'describes' if len(given) == 1 else 'describe'} a retriever of your "
            f"own, but this run measures none (it would measure the built-in search): "
            f"give {flag('retriever')} MODULE:ATTR or an http:// URL (under pytest, a "
            f"pytest_groove_retriever hook does too), or drop {'it' if len(given) == 1 else 'them'}"
        )


def with_retriever_settings(options: RunOptions, settings: Settings) -> RunOptions:
    """The ``--retriever-*`` options, each falling back on its ``[retriever]`` key."""
    configured = settings.retriever
    return replace(
        options,
        retriever_name=options.retriever_name or configured.name,
        retriever_timeout=(
            options.retriever_timeout
            if options.retriever_timeout is not None
            else configured.timeout
        ),
        retriever_token_env=options.retriever_token_env or configured.token_env,
        retriever_path_key=options.retriever_path_key or configured.path_key,
        retriever_heading_key=options.retriever_heading_key or configured.heading_key,
    )


__all__ = [
    "ENGINE_ONLY_OPTIONS",
    "HTTP_ONLY_OPTIONS",
    "RETRIEVER_DETAILS",
    "check_http_only_options",
    "check_no_retriever_details",
    "engine_options_note",
    "retriever_notes",
    "with_retriever_settings",
]
