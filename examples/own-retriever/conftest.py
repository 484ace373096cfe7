"""Evaluate *your* search with pytest-groove: a ``pytest_groove_retriever`` example.

Run from this folder::

    pytest --groove-kb ../kb

Here "your search" is a deliberately naive keyword matcher over the example
handbook, split into sections at ``##`` / ``###`` headings.  In a real project the
function would call your production search service or library instead; pytest-groove
only needs ``retrieve(query, limit)`` to return ranked hits with the KB-relative
``path``, the section ``heading`` (or None) and a ``score``.
"""

from __future__ import annotations

import re
from pathlib import Path

KB = Path(__file__).resolve().parent.parent / "kb"
WORD = re.compile(r"\w+")


HEADING = re.compile(r"^#{2,3}[ \t]+(.*)$", re.MULTILINE)


def _sections() -> list[tuple[str, str | None, set[str]]]:
    """(path, heading, words) for every section of every note (preamble included)."""
    out: list[tuple[str, str | None, set[str]]] = []
    for path in sorted(KB.rglob("*.md")):
        rel = path.relative_to(KB).as_posix()
        # split() with one group gives [preamble, heading1, body1, heading2, body2, ...]
        parts = HEADING.split(path.read_text(encoding="utf-8"))
        bodies = [(None, parts[0]), *zip(parts[1::2], parts[2::2], strict=True)]
        for heading, body in bodies:
            words = set(WORD.findall(body.lower()))
            if words:
                out.append((rel, heading.strip() if heading else None, words))
    return out


SECTIONS = _sections()


def retrieve(query: str, limit: int) -> list[dict[str, object]]:
    """Sections ranked by how many query words they contain."""
    words = set(WORD.findall(query.lower()))
    scored = [
        (len(words & text), path, heading) for path, heading, text in SECTIONS if words & text
    ]
    scored.sort(key=lambda row: (-row[0], row[1], row[2] or ""))
    return [
        {"path": path, "heading": heading, "score": float(score)}
        for score, path, heading in scored[:limit]
    ]


# How runs of this retriever are named in the report and the history fingerprint.
retrieve.groove_name = "keyword-example"  # type: ignore[attr-defined]


def pytest_groove_retriever(config: object) -> object:
    return retrieve
