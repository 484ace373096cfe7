"""The note vector: one embedding per document, of its title and opening section.

Search orders *notes* by chunk vectors that carry their note's vector
(:mod:`pytest_groove.search.notes`): a section's own text often leaves implicit
what the note is about (a backup note's sections never say "database"), and the
title with the note's opening says it.  Embedding the breadcrumb with every chunk
says it too, but costs a second embedding per chunk; this costs one per note.

The title is the document's own (frontmatter ``title`` or ``# Title``), never one
made from the file name, so a renamed file keeps a valid note vector; a
frontmatter-only edit re-embeds it (the title may have changed).
"""

from __future__ import annotations

from pytest_groove.kb.records import ParsedDocument


def note_text(doc: ParsedDocument) -> str:
    """What is embedded as the note vector of ``doc`` (which has at least one chunk)."""
    opening = doc.chunks[0].content if doc.chunks else ""
    if doc.title is not None and doc.title.strip():
        return f"{doc.title.strip()}\n\n{opening}"
    return opening
