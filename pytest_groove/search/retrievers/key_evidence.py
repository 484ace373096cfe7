"""Whether the heading key a run names is a key the retriever's hits carry at all.

``--retriever-heading-key KEY`` names the metadata / payload key of each hit's heading.
One hit without it is legitimate (a note's opening section has no heading), so a hit
that lacks it reads as "no heading".  A key that *no* hit carries is a misspelt or
wrong key (``sections`` for ``section``, ``section`` for LangChain's
``metadata.section`` in a Qdrant payload): every hit would then read as headingless and
every golden entry pinned to a heading would be lost, with nothing said but the
generic advice to name the key -- which the user did.  :class:`KeyEvidence` gathers
what the hits showed; :func:`missing_heading_key` is the one line that stops the run,
naming the key, the option, and the keys the hits did carry.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_groove.errors import flag
from pytest_groove.text.echo import echo_list
from pytest_groove.text.echo import echo_value as echo

#: queries answered with hits after which a heading key no hit carried stops the run
#: (each pytest process judges its own first queries; the run's end judges a shorter run)
KEY_EVIDENCE_QUERIES = 3

#: most keys of one hit's metadata listed (a hit may hold any number)
_MOST_CARRIED = 200

#: most key names a message lists
_SHOWN_KEYS = 12


def dotted_lookup(meta: Mapping[str, Any], key: str) -> tuple[bool, Any]:
    """(whether ``meta`` holds ``key``, its value): ``a.b`` reads ``meta["a"]["b"]``, and
    an exact key ``"a.b"`` wins over that."""
    if key in meta:
        return True, meta[key]
    value: Any = meta
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False, None
        value = value[part]
    return True, value


def has_key(meta: Mapping[str, Any], key: str) -> bool:
    """Whether ``meta`` holds ``key`` (see :func:`dotted_lookup`), whatever its value
    (None and ``""`` count: the hit says it has no heading)."""
    return dotted_lookup(meta, key)[0]


def carried_keys(meta: Mapping[str, Any]) -> list[str]:
    """The keys of ``meta`` as a heading key would name them: a nested mapping's keys
    dotted (``metadata.section`` in a payload LangChain wrote), one level deep."""
    found: list[str] = []
    for key, value in list(meta.items())[:_MOST_CARRIED]:
        if isinstance(value, Mapping) and value:
            found += [f"{key}.{inner}" for inner in list(value)[:_MOST_CARRIED]]
        else:
            found.append(str(key))
    return found


@dataclass
class KeyEvidence:
    """What the hits read so far showed of the heading key the run named."""

    #: hits whose metadata the key was looked for in
    looked: int = 0
    #: of those, the hits that held it
    held: int = 0
    #: queries answered with at least one such hit
    queries: int = 0
    #: the keys the hits' metadata held (dotted when nested), each once
    keys: dict[str, None] = field(default_factory=dict)

    def hit(self, meta: Mapping[str, Any], key: str) -> None:
        """Count one hit whose metadata is ``meta``."""
        self.looked += 1
        if has_key(meta, key):
            self.held += 1
        elif len(self.keys) < 10 * _SHOWN_KEYS:
            self.keys.update(dict.fromkeys(carried_keys(meta)))

    @property
    def never_held(self) -> bool:
        """Whether hits were looked at and none held the key."""
        return self.looked > 0 and self.held == 0


def missing_heading_key(retriever: str, key: str, evidence: KeyEvidence, scope: str = "") -> str:
    """The line for a heading key no hit carried (``scope``: `` in the first 3 queries
    it answered`` when the run stopped early)."""
    keys = sorted(evidence.keys)
    if keys:
        held = f"their metadata hold {echo_list(keys, _SHOWN_KEYS)}"
    else:
        held = "their metadata hold no key at all"
    close = difflib.get_close_matches(key, keys, n=1)
    meant = f" ({flag('retriever-heading-key')} {close[0]}?)" if close else ""
    hits = "hit" if evidence.looked == 1 else "hits"
    return (
        f"retriever {retriever}: none of its {evidence.looked} {hits}{scope} has the heading "
        f"key {echo(key)} that {flag('retriever-heading-key')} names ({held}), so every hit would "
        f"read as headingless; name the key the headings are under{meant}, or drop the "
        "option to read 'heading' and the Markdown splitters' header keys"
    )


__all__ = [
    "KEY_EVIDENCE_QUERIES",
    "KeyEvidence",
    "carried_keys",
    "dotted_lookup",
    "has_key",
    "missing_heading_key",
]
