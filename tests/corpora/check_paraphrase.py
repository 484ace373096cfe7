"""Check that every golden query of kb-paraphrase is a paraphrase of its answer.

    python tests/corpora/check_paraphrase.py [--kb DIR] [--golden FILE] [--verbose]

A query fails (one line each, exit status 1) when, for any of its expected notes:

* it shares a content word with the note's title or any ``##``/``###`` heading
  (lowercased, English stop words removed, words of 4+ letters, compared by a
  simple suffix-stripping stem), or a kanji/katakana character bigram;
* it shares a *distinctive term* with the note: a content word (or kanji/katakana
  bigram) that occurs in that note and in at most 2 notes of the corpus.

It also fails on structure: an expected path that is not a note, a ``heading`` that
is not one of the note's headings, an ``s-``/``x-`` query without exactly one answer,
an ``m-`` query without 2-3, an ``x-`` query in the same language as its answer, and
a ``pair-*`` tag that does not name exactly two notes.  The last line is a summary.
Standard library and PyYAML only; the project's own loader is not imported.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
DEFAULT_KB = HERE / "kb-paraphrase"
DEFAULT_GOLDEN = HERE / "kb-paraphrase-golden.yml"

#: a term in at most this many notes is distinctive
DISTINCTIVE_MAX_NOTES = 2
MIN_WORD_LETTERS = 4

_STOP_WORDS_TEXT = """
    a about above after again against all also am an and any are aren't as at be
    because been before being below between both but by can cannot could couldn't
    did didn't do does doesn't doing don't down during each either else ever every
    few for from further get gets getting got had hadn't has hasn't have haven't
    having he her here hers herself him himself his how however i if in into is
    isn't it its itself just let's me might more most much must mustn't my myself
    need needs no nor not now of off on once one only or other ought our ours
    ourselves out over own same shall she should shouldn't so some such than that
    the their theirs them themselves then there these they this those through to
    too under until up upon very was wasn't we were weren't what whatever when
    where whether which while who whom whose why will with within without won't
    would wouldn't yet you your yours yourself yourselves
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())

_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
#: kanji (with 々 〆 ヶ) and katakana (with ー), but not the middle dot ・
_KANJI_KATAKANA_RUN = re.compile(
    r"[\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF々〆ヶ\u30A1-\u30FA\u30FC-\u30FF\u31F0-\u31FF]+"
)
_JAPANESE = re.compile(r"[\u3040-\u30FF\u3400-\u4DBF\u4E00-\u9FFF]")
#: a line break inside Japanese text (wrapped prose) joins the two lines
_WRAPPED = re.compile(r"(?<=[^\x00-\x7F])\n(?=[^\x00-\x7F])")
_HEADING = re.compile(r"^(#{2,3})\s+(.+?)\s*#*\s*$")
_SUFFIXES = ("ations", "ation", "ings", "ing", "ions", "ion", "edly", "ed", "es", "ly", "s")
_MIN_STEM = 3


def stem(word: str) -> str:
    """A deliberately crude stem: one common suffix, then a final ``e`` or doubled letter."""
    if word.endswith("ies") and len(word) - 3 >= _MIN_STEM:
        return word[:-3] + "y"
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) - 1 >= _MIN_STEM:
        word = word[:-1]
    if len(word) > _MIN_STEM and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]
    return word


def terms(text: str) -> set[str]:
    """English content-word stems and kanji/katakana bigrams of ``text``."""
    found: set[str] = set()
    text = _WRAPPED.sub("", text)
    for raw in _WORD.findall(text):
        word = raw.lower()
        if word in STOP_WORDS:
            continue
        word = word.removesuffix("'s")
        if len(word) >= MIN_WORD_LETTERS and word not in STOP_WORDS:
            found.add(stem(word))
    for run in _KANJI_KATAKANA_RUN.findall(text):
        found.update(run[i : i + 2] for i in range(len(run) - 1))
    return found


def is_japanese(text: str) -> bool:
    return _JAPANESE.search(text) is not None


@dataclass(frozen=True)
class Note:
    path: str
    title: str
    headings: tuple[str, ...]
    body: str

    @property
    def label_terms(self) -> set[str]:
        found = terms(self.title)
        for heading in self.headings:
            found |= terms(heading)
        return found


def read_note(kb: Path, file: Path) -> Note:
    text = file.read_text(encoding="utf-8")
    front: dict[str, Any] = {}
    body = text
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            loaded = yaml.safe_load(text[4:end])
            front = loaded if isinstance(loaded, dict) else {}
            body = text[end + 5 :]
    title = str(front.get("title") or "")
    lines = body.splitlines()
    first = next((line.strip() for line in lines if line.strip()), "")
    if not title and first.startswith("# "):
        title = first[2:].strip()
    if not title:
        title = file.name.removesuffix(".md").removesuffix(".ja").replace("-", " ")
    headings = tuple(m.group(2) for line in lines if (m := _HEADING.match(line.strip())))
    return Note(file.relative_to(kb).as_posix(), title, headings, f"{title}\n{body}")


def load_notes(kb: Path) -> dict[str, Note]:
    files = sorted(p for p in kb.rglob("*.md") if not any(s.startswith(".") for s in p.parts))
    return {note.path: note for note in (read_note(kb, f) for f in files)}


def _norm(heading: str) -> str:
    return " ".join(heading.split()).lower()


def check_query(
    query: dict[str, Any], notes: dict[str, Note], frequency: Counter[str]
) -> list[str]:
    """What is wrong with one golden query (empty when nothing)."""
    qid = str(query.get("id", ""))
    text = str(query["query"])
    expected: list[dict[str, Any]] = list(query["expected"])
    problems: list[str] = []
    if qid.startswith(("s-", "x-")) and len(expected) != 1:
        problems.append(f"{len(expected)} expected entries, wants 1")
    if qid.startswith("m-") and not 2 <= len(expected) <= 3:
        problems.append(f"{len(expected)} expected entries, wants 2-3")
    asked = terms(text)
    for entry in expected:
        path = str(entry["path"])
        note = notes.get(path)
        if note is None:
            problems.append(f"{path}: no such note")
            continue
        heading = entry.get("heading")
        if heading is not None and _norm(str(heading)) not in {_norm(h) for h in note.headings}:
            problems.append(f"{path}: no heading {heading!r}")
        if qid.startswith("x-") and is_japanese(text) == is_japanese(note.body):
            problems.append(f"{path}: same language as the query")
        label = sorted(asked & note.label_terms)
        if label:
            problems.append(f"{path}: title/heading terms {', '.join(label)}")
        rare = sorted(
            t
            for t in asked & terms(note.body)
            if frequency[t] <= DISTINCTIVE_MAX_NOTES and t not in label
        )
        if rare:
            problems.append(f"{path}: distinctive terms {', '.join(rare)}")
    return problems


def pairs_of(queries: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Each ``pair-*`` tag -> the notes its single-answer queries expect."""
    members: dict[str, set[str]] = {}
    for query in queries:
        for tag in query.get("tags") or ():
            if str(tag).startswith("pair-") and len(query["expected"]) == 1:
                members.setdefault(str(tag), set()).add(str(query["expected"][0]["path"]))
    return members


def overlap(a: Note, b: Note) -> float:
    """Shared terms as a share of the smaller note's terms."""
    left, right = terms(a.body), terms(b.body)
    return len(left & right) / max(1, min(len(left), len(right)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=Path, default=DEFAULT_KB)
    parser.add_argument("--golden", type=Path, default=DEFAULT_GOLDEN)
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="list passing queries and each pair's overlap"
    )
    args = parser.parse_args(argv)

    notes = load_notes(args.kb)
    frequency: Counter[str] = Counter()
    for note in notes.values():
        frequency.update(terms(note.body))
    golden = yaml.safe_load(args.golden.read_text(encoding="utf-8"))
    queries: list[dict[str, Any]] = list(golden["queries"])

    failures: list[str] = []
    seen: set[str] = set()
    for query in queries:
        qid = str(query.get("id", query["query"][:32]))
        problems = check_query(query, notes, frequency)
        if qid in seen:
            problems.insert(0, "duplicate id")
        seen.add(qid)
        if problems:
            failures.append(f"{qid}: {'; '.join(problems)}")
        elif args.verbose:
            print(f"ok {qid}")
    pairs = 0
    for tag, paths in sorted(pairs_of(queries).items()):
        if len(paths) != 2:
            named = ", ".join(sorted(paths))
            failures.append(f"{tag}: names {len(paths)} note(s), wants 2: {named}")
            continue
        pairs += 1
        if args.verbose:
            first, second = sorted(paths)
            known = first in notes and second in notes
            shared = overlap(notes[first], notes[second]) if known else 0.0
            print(f"{tag}: {first} / {second}, vocabulary overlap {shared:.2f}")

    for line in failures:
        print(line)
    pinned = sum(any("heading" in e for e in q["expected"]) for q in queries)
    cross = sum(str(q.get("id", "")).startswith("x-") for q in queries)
    japanese = sum(is_japanese(n.body) for n in notes.values())
    print(
        f"notes: {len(notes)} ({japanese} Japanese), queries: {len(queries)}, "
        f"pairs: {pairs}, pinned: {pinned}, cross-language: {cross}"
        + (f", FAILED: {len(failures)}" if failures else ", ok")
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
