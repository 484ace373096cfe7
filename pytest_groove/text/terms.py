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

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import re

from pytest_groove.text.scripts import JapaneseScript, script_class


def bigrams(run: str) -> list[str]:
    """Overlapping two-character pieces of ``run``; a one-character run is itself."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


_SCRIPTS: tuple[JapaneseScript, ...] = ("kanji", "hiragana", "katakana")
#: a stretch of Japanese characters, whatever their scripts (one character class:
#: scanning ordinary text for it is several times faster than for the runs below)
_JAPANESE_STRETCH = re.compile("[" + "".join(script_class(name)[1:-1] for name in _SCRIPTS) + "]+")
#: a maximal run of one Japanese script (the three classes share no character, so
#: the alternative that matches at a position is that character's script)
_SCRIPT_RUN = re.compile("|".join(f"(?P<{name}>{script_class(name)}+)" for name in _SCRIPTS))


def script_runs(text: str) -> list[tuple[str | None, str]]:
    """``text`` cut into maximal runs of one Japanese script (None = anything else)."""
    runs: list[tuple[str | None, str]] = []
    at = 0
    for stretch in _JAPANESE_STRETCH.finditer(text):
        if stretch.start() > at:
            runs.append((None, text[at : stretch.start()]))
        for match in _SCRIPT_RUN.finditer(stretch.group()):
            script: JapaneseScript | None = match.lastgroup  # type: ignore[assignment]
            runs.append((script, match.group()))
        at = stretch.end()
    if at < len(text):
        runs.append((None, text[at:]))
    return runs


def _spaced_bigrams(stretch: re.Match[str]) -> str:
    return "".join(
        " " + " ".join(bigrams(run.group())) + " " for run in _SCRIPT_RUN.finditer(stretch.group())
    )


def term_text(text: str | None) -> str | None:
    """``text`` with every Japanese run replaced by its bigrams (see the module doc)."""
    if text is None:
        return None
    if text.isascii():
        return text  # the common case: nothing to rewrite
    return _JAPANESE_STRETCH.sub(_spaced_bigrams, text)
