"""The note vector: one embedding per document, of its title and opening section.

Search orders *notes* by chunk vectors that carry their note's vector
(:mod:`pytest_groove.search.pipeline.notes`): a section's own text often leaves implicit
what the note is about (a backup note's sections never say "database"), and the
title with the note's opening says it.  Embedding the breadcrumb with every chunk
says it too, but costs a second embedding per chunk; this costs one per note.

The title is the document's own (frontmatter ``title`` or ``# Title``), never one
made from the file name, so a renamed file keeps a valid note vector; a
frontmatter-only edit re-embeds it (the title may have changed).

Only note order reads these vectors, so an index embeds them only while its
configuration has ``[search] note_order`` on (the default); turned on later, they
are embedded from the stored titles and opening sections (:func:`note_text_of`),
which gives the very texts :func:`note_text` gives for the parsed files.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from pytest_groove.kb.source.records import ParsedDocument


def note_text(doc: ParsedDocument) -> str:
    """What is embedded as the note vector of ``doc`` (which has at least one chunk)."""
    return note_text_of(doc.title, doc.chunks[0].content if doc.chunks else "")


def note_text_of(title: str | None, opening: str) -> str:
    """The note vector's text from a document's own title and its first chunk's content."""
    if title is not None and title.strip():
        return f"{title.strip()}\n\n{opening}"
    return opening
