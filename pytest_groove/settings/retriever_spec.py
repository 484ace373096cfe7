"""The two forms a retriever spec takes: ``module:attribute`` or an http(s):// URL.

Checked where the value is read -- ``--retriever`` on either door is a flag value, so a
misspelt one is refused as argparse refuses a bad ``--k`` (exit 2 under ``groove``, a
usage error under pytest), before any import, index work or request.  Standard library
only: the options table calls :func:`spec_problem` in every run given the option.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import re
import urllib.parse

#: ``package.module:object.attribute``: Python identifiers on both sides of one colon
MODULE_ATTRIBUTE = re.compile(r"([A-Za-z_][\w.]*):([A-Za-z_][\w.]*)")

#: the ``module:attribute`` form, shown with every refusal of it
FORM = "expected module:attribute (for example my_search:retriever) or an http:// URL"


def is_url(spec: str) -> bool:
    """Whether ``spec`` is meant as a search service's URL."""
    return spec.strip().lower().startswith(("http://", "https://"))


def url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as a search service's address, or None."""
    try:
        parsed = urllib.parse.urlsplit(url.strip())
        parsed.port  # noqa: B018 -- raises ValueError for a port that is not a number
    except ValueError:
        return "not an http:// or https:// URL with a host and a numeric port"
    if parsed.scheme.lower() not in ("http", "https") or not parsed.hostname:
        return "not an http:// or https:// URL with a host"
    return None


def spec_problem(spec: str) -> str | None:
    """What is wrong with the form of ``spec``, or None when it may name a retriever.

    Only the form: whether the module imports and holds the attribute, or the service
    answers, is found when the retriever is opened.
    """
    text = spec.strip()
    if is_url(text):
        return url_problem(text)
    if MODULE_ATTRIBUTE.fullmatch(text) is not None:
        if re.fullmatch(r"https?:[\w.-]+", text, flags=re.IGNORECASE):
            # http:localhost reads as module http, attribute localhost
            return f"{FORM}; a URL needs the // after {text.split(':')[0]}:"
        return None
    if re.match(r"https?:(?!//)", text, flags=re.IGNORECASE):
        return f"{FORM}; a URL needs the // after {text.split(':')[0]}:"
    return FORM
