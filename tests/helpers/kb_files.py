"""Writing a knowledge base of notes for a test: one helper, every test's shape."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def write_notes(kb: Path, notes: Mapping[str, str]) -> Path:
    """Write each KB-relative path's text (UTF-8), making its folders; ``kb`` back."""
    for rel, text in notes.items():
        (kb / rel).parent.mkdir(parents=True, exist_ok=True)
        (kb / rel).write_text(text, encoding="utf-8")
    return kb


#: the words generated notes are made of, cycled through so that notes and sections differ
TOPIC_WORDS = (
    "cache",
    "queue",
    "replica",
    "shard",
    "index",
    "vector",
    "token",
    "budget",
    "retry",
    "window",
    "lease",
    "quorum",
)

#: a paragraph long enough to stand as a chunk of its own in the index
LONG = "This paragraph is long enough to stand as a chunk of its own in the index."

#: two notes: billing/invoices.md, whose ``VAT numbers`` section is under 50 bytes and so
#: merged into ``Sending invoices`` before it, and ops/deploy.md
INVOICES_NOTES = {
    "billing/invoices.md": (
        "# Invoices\n\n## Sending invoices\n\n"
        f"{LONG} Invoices go out on the first working day of the month.\n\n"
        "## VAT numbers\n\nEvery invoice shows one.\n"
    ),
    "ops/deploy.md": (
        f"# Deploy\n\n## Canary\n\n{LONG} A canary release ships to one percent first.\n"
    ),
}

#: a golden file for :data:`INVOICES_NOTES`: one query pinned to a heading, one to a file
INVOICES_GOLDEN = """\
queries:
  - id: sending
    query: "When do invoices go out?"
    expected:
      - path: billing/invoices.md
        heading: Sending invoices
  - id: canary
    query: "How does a canary release ship?"
    expected:
      - path: ops/deploy.md
"""


def golden_yaml(*queries: tuple[str, str, str]) -> str:
    """A golden file of ``(id, query, expected path)`` entries, the query and the path
    quoted."""
    return "queries:\n" + "".join(
        f'  - id: {query_id}\n    query: "{query}"\n    expected:\n      - path: "{path}"\n'
        for query_id, query, path in queries
    )


def write_invoices_kb(root: Path, golden: str = INVOICES_GOLDEN) -> Path:
    """:data:`INVOICES_NOTES` in ``root``, with ``golden`` as its .groove-eval.yml."""
    return write_notes(root, {**INVOICES_NOTES, ".groove-eval.yml": golden})
