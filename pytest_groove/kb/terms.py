"""Term text: what the second full-text table (``fts_terms``) indexes.

The main table's trigram tokenizer cannot match a phrase under three characters,
and most Japanese content words are two kanji (``牛乳``, ``発注``).  The second
table uses the word tokenizer ``unicode61`` (with Porter stemming for English)
over a copy of the text in which every run of one Japanese script is written out
as its overlapping character bigrams, separated by spaces:
``牛乳を発注する`` → ``牛乳 を 発注 する``, ``修理料金`` → ``修理 理料 料金``.
A one-character run stays a one-character token.  Any word of two or more
characters is then a sequence of whole tokens on both sides, whatever its
length, and bm25 weighs rare ones above common ones.

Runs are cut where the script changes, the same way the query compiler cuts
queries, so kanji + okurigana (``止まる``) gives ``止`` and ``まる``: the kanji
stem matches whatever inflection follows it.
"""

from __future__ import annotations

from pytest_groove.kb.scripts import japanese_script


def bigrams(run: str) -> list[str]:
    """Overlapping two-character pieces of ``run``; a one-character run is itself."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


def script_runs(text: str) -> list[tuple[str | None, str]]:
    """``text`` cut into maximal runs of one Japanese script (None = anything else)."""
    runs: list[tuple[str | None, str]] = []
    for char in text:
        script = japanese_script(char)
        if runs and runs[-1][0] == script:
            runs[-1] = (script, runs[-1][1] + char)
        else:
            runs.append((script, char))
    return runs


def term_text(text: str | None) -> str | None:
    """``text`` with every Japanese run replaced by its bigrams (see the module doc)."""
    if text is None:
        return None
    pieces: list[str] = []
    for script, run in script_runs(text):
        pieces.append(run if script is None else " " + " ".join(bigrams(run)) + " ")
    return "".join(pieces)
