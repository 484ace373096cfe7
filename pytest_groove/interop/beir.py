"""A BEIR-format dataset as a Markdown knowledge base with its golden file.

BEIR's layout (https://github.com/beir-cellar/beir)::

    DIR/corpus.jsonl        {"_id": ..., "title": ..., "text": ...} per line
    DIR/queries.jsonl       {"_id": ..., "text": ...} per line
    DIR/qrels/<split>.tsv   header "query-id corpus-id score", then one judgement a line

becomes::

    OUT/<safe _id>.md       "# title", a blank line, the text
    OUT/.groove-eval.yml    one query per judged query id, its judged documents expected

Only documents judged with a score above 0 are expected (``grade: N`` is written for
N > 1; a score of 1 is the plain binary entry).  A query with no such judgement in the
split is left out and counted.  Everything is read and checked before the first file
is written, so bad input leaves OUT as it was; every problem is one line naming
``file:line`` and the fix.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from pytest_groove.errors import GrooveError, clip, clip_path
from pytest_groove.evaluation.golden.file import DEFAULT_GOLDEN_NAME, MAX_GRADE
from pytest_groove.files.atomic import write_atomic_with
from pytest_groove.files.guarded_io import GOLDEN_CAP
from pytest_groove.files.path_limits import locale_refusal
from pytest_groove.kb.source.markdown import FRONTMATTER_FENCE
from pytest_groove.kb.source.read_files import FILE_SIZE_CAP
from pytest_groove.search.query.exclusion import split_exclusions

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_DIR = "qrels"
QRELS_HEADER = ("query-id", "corpus-id", "score")
#: longest file stem written (ids can be long; the collision suffix comes on top)
MAX_STEM = 120
#: ... in UTF-8 bytes: a file name may hold 255, and non-ASCII letters take up to 4 each
MAX_STEM_BYTES = 200

_SAFE_ASCII = re.compile(r"[A-Za-z0-9._-]")
#: names Windows reserves for devices, with any extension (``con.md`` cannot be made)
_WINDOWS_DEVICES = frozenset(
    ["CON", "PRN", "AUX", "NUL"] + [f"{name}{n}" for name in ("COM", "LPT") for n in range(1, 10)]
)
_BOM = b"\xef\xbb\xbf"
_HEADING_START = re.compile(r"^(\s{0,3})#", re.MULTILINE)
_DASH_TOKEN = re.compile(r"(?<!\S)-\S+")
#: a column name of a qrels header: letters, ``_``, ``-`` and spaces, no digit
_COLUMN_NAME = re.compile(r"[a-z_ -]+")


@dataclass(frozen=True)
class BeirDocument:
    id: str
    title: str
    text: str


@dataclass(frozen=True)
class BeirQuery:
    id: str
    text: str
    #: ``queries.jsonl:N``, for what is said about it
    where: str = ""


@dataclass(frozen=True)
class ImportSummary:
    """What :func:`import_beir` wrote."""

    documents: int
    queries: int
    #: queries of queries.jsonl without a judged document (score > 0) in the split
    unjudged_queries: int
    golden: Path
    #: judged queries left out because eval could not run them, each as
    #: ``queries.jsonl:N: why`` (too long, nothing to search for, no answer with text)
    left_out: tuple[str, ...] = ()
    #: documents with no text (a note of them would hold nothing to find): not written
    empty_documents: int = 0
    #: documents whose note would be over the indexer's size cap: not written
    oversized_documents: int = 0


# --------------------------------------------------------------------------- reading


def _fail(where: str, problem: str, fix: str) -> GrooveError:
    return GrooveError(f"{where}: {problem}; {fix}")


def _raw_lines(handle: BinaryIO) -> Iterator[bytes]:
    """The file's lines as bytes, each with its line break, split where text mode
    splits them: at a line feed, a carriage return + line feed, or a lone carriage
    return (UTF-8 never uses these bytes inside a character)."""
    for chunk in handle:
        if b"\r" in chunk:
            yield from chunk.splitlines(keepends=True)
        else:
            yield chunk


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) of a UTF-8 text file (a BOM allowed); blank lines
    skipped.  Bytes that are not UTF-8 are named by line and byte offset."""
    if not path.is_file():
        raise _fail(
            str(path), "no such file", "point the import at a BEIR dataset folder (unzipped)"
        )
    offset = 0
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(_raw_lines(handle), start=1):
                data = raw[len(_BOM) :] if number == 1 and raw.startswith(_BOM) else raw
                try:
                    line = data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    bad = offset + len(raw) - len(data) + exc.start
                    raise _fail(
                        f"{path}:{number}",
                        f"not UTF-8 text (first bad byte 0x{data[exc.start]:02x} at byte "
                        f"offset {bad} of the file)",
                        "re-download or re-encode the file",
                    ) from None
                offset += len(raw)
                if line.strip():
                    yield number, line.rstrip("\r\n")
    except OSError as exc:
        raise _fail(str(path), f"cannot be read ({exc.strerror or exc})", "check it") from None


def _json_objects(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for number, line in _lines(path):
        where = f"{path}:{number}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _fail(
                where, f"not a JSON object ({exc.msg})", "fix the line or re-download the file"
            ) from None
        if not isinstance(value, dict):
            raise _fail(where, "not a JSON object", "write one {...} object per line")
        yield where, value


def _field(obj: dict[str, Any], name: str, where: str, *, required: bool = True) -> str:
    value = obj.get(name)
    if value is None and not required:
        return ""
    if isinstance(value, int) and not isinstance(value, bool) and name == "_id":
        return str(value)  # some exports write numeric ids
    if not isinstance(value, str):
        if not required:
            raise _fail(where, f"`{name}` is not a string", "write it as a string, or leave it out")
        raise _fail(where, f"`{name}` is missing or not a string", f'give each line a "{name}"')
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        # JSON may escape half of a UTF-16 pair alone (\ud800): no character, so no
        # note or golden file could hold it
        raise _fail(
            where,
            f"`{name}` holds a lone surrogate (\\u{ord(value[exc.start]):04x} at character "
            f"{exc.start}), an escape that is no character",
            "fix the line or re-download the file",
        ) from None
    return value


def _with_unique_ids(path: Path, what: str) -> Iterator[tuple[str, dict[str, Any], str]]:
    """Each object of a JSON-lines file, where it stands and its ``_id``, which no other
    object of the file may repeat (``what`` names the objects: document, query)."""
    seen: dict[str, str] = {}
    for where, obj in _json_objects(path):
        item_id = _field(obj, "_id", where)
        if item_id in seen:
            raise _fail(where, f"{what} id {item_id!r} repeats {seen[item_id]}", "remove one")
        seen[item_id] = where
        yield where, obj, item_id


def read_corpus(path: Path) -> list[BeirDocument]:
    documents: list[BeirDocument] = []
    for where, obj, doc_id in _with_unique_ids(path, "document"):
        title = _field(obj, "title", where, required=False)
        documents.append(BeirDocument(doc_id, title, _field(obj, "text", where)))
    if not documents:
        raise _fail(str(path), "no documents", "import a dataset with a non-empty corpus")
    return documents


def read_queries(path: Path) -> list[BeirQuery]:
    queries: list[BeirQuery] = []
    for where, obj, query_id in _with_unique_ids(path, "query"):
        text = _field(obj, "text", where)
        if not text.strip():
            raise _fail(where, f"query {query_id!r} has empty text", "give it text or drop it")
        queries.append(BeirQuery(query_id, text, where))
    return queries


def qrels_path(source: Path, split: str) -> Path:
    path = source / QRELS_DIR / f"{split}.tsv"
    if not path.is_file():
        folder = source / QRELS_DIR
        splits = sorted(p.stem for p in folder.glob("*.tsv")) if folder.is_dir() else []
        fix = f"pass --split one of {', '.join(splits)}" if splits else "add the qrels folder"
        raise _fail(str(path), "no such file", fix)
    return path


def _is_header(fields: Sequence[str]) -> bool:
    """A first line naming the columns: BEIR's ``query-id corpus-id score``, or any
    other spelling of three names (no digit in any field: a judgement has ids and a
    number, so a typo in a score is never taken for a header)."""
    names = tuple(f.strip().lower() for f in fields)
    return names == QRELS_HEADER or (
        len(names) == 3 and all(_COLUMN_NAME.fullmatch(name) for name in names)
    )


def read_qrels(path: Path, documents: set[str], queries: set[str]) -> dict[str, dict[str, int]]:
    """``query id -> {document id: score}`` in file order; ids checked against the rest."""
    judged: dict[str, dict[str, int]] = {}
    #: the line each (query, document) judgement was read from
    lines: dict[tuple[str, str], int] = {}
    for index, (number, line) in enumerate(_lines(path)):
        where = f"{path}:{number}"
        fields = line.split("\t")
        if len(fields) != 3:
            fields = line.split()
        if index == 0 and _is_header(fields):
            continue
        if len(fields) != 3:
            raise _fail(where, "expected 3 tab-separated fields", "write query-id corpus-id score")
        query_id, doc_id, raw_score = (f.strip() for f in fields)
        try:
            score = int(raw_score)
        except ValueError:
            raise _fail(where, f"score {raw_score!r} is not a whole number", "fix it") from None
        if score > MAX_GRADE:
            raise _fail(
                where,
                f"score {raw_score} is over {MAX_GRADE}, the largest grade a golden file holds",
                "fix it",
            )
        if query_id not in queries:
            raise _fail(where, f"query id {query_id!r} is not in {QUERIES_FILE}", "fix the id")
        if doc_id not in documents:
            raise _fail(
                where,
                f"corpus id {doc_id!r} is not in {CORPUS_FILE}",
                "fix the id or drop the line",
            )
        scores = judged.setdefault(query_id, {})
        if doc_id in scores and scores[doc_id] != score:
            raise _fail(
                where,
                f"query {query_id!r} and corpus id {doc_id!r} were judged on line "
                f"{lines[(query_id, doc_id)]} already, with another score "
                f"({scores[doc_id]} there, {score} here)",
                "keep one of the two lines",
            )
        # an identical repeat says nothing new: the first line stays the one named
        lines.setdefault((query_id, doc_id), number)
        scores[doc_id] = score
    return judged


# --------------------------------------------------------------------------- writing


def _safe_char(char: str) -> str:
    """``char`` when a file name may hold it on every platform, else ``_``.

    Kept: ASCII letters, digits, ``.``, ``_``, ``-``, and any other Unicode letter,
    combining mark or digit (category L*, M*, N*); every other character --
    separators, punctuation, symbols, whitespace, control and format characters --
    becomes one ``_`` each.
    """
    if char.isascii():
        return char if _SAFE_ASCII.fullmatch(char) else "_"
    return char if unicodedata.category(char)[0] in "LMN" else "_"


def _stem(doc_id: str) -> str:
    """The file stem of ``doc_id`` (NFC), at most :data:`MAX_STEM` characters and
    :data:`MAX_STEM_BYTES` UTF-8 bytes, never hidden and never a Windows device name."""
    stem = "".join(_safe_char(char) for char in unicodedata.normalize("NFC", doc_id))
    stem = stem[:MAX_STEM]
    while len(stem.encode("utf-8")) > MAX_STEM_BYTES:
        stem = stem[:-1]
    if not stem or stem.startswith(".") or stem.split(".")[0].upper() in _WINDOWS_DEVICES:
        stem = f"_{stem}"
    return stem


def note_names(ids: Sequence[str]) -> dict[str, str]:
    """``document id -> file name``: each character a file name may not hold becomes
    ``_`` (:func:`_safe_char`; Unicode letters and digits are kept).

    No leading dot (hidden files are not indexed), at most :data:`MAX_STEM` characters
    (and :data:`MAX_STEM_BYTES` bytes), and unique even on a case-insensitive file
    system: a later id whose name is taken gets ``-2``, ``-3``... in corpus order.
    """
    names: dict[str, str] = {}
    taken: set[str] = set()
    for doc_id in ids:
        stem = _stem(doc_id)
        name, counter = f"{stem}.md", 1
        while name.casefold() in taken:
            counter += 1
            name = f"{stem}-{counter}.md"
        taken.add(name.casefold())
        names[doc_id] = name
    return names


def note_text(document: BeirDocument) -> str:
    """``# title`` (when there is one), a blank line, the text.

    A text line that would open a Markdown heading gets a backslash, so each document
    stays one section as BEIR scores it; so does a text that would open with a YAML
    frontmatter fence (``---``) when no title comes first, so its lines stay text.
    """
    body = _HEADING_START.sub(lambda m: f"{m.group(1)}\\#", document.text.strip())
    title = " ".join(document.title.split())
    if title:
        return f"# {title}\n\n{body}\n"
    body = body.lstrip("\ufeff")  # a byte-order mark would be stripped before the fence
    return f"\\{body}\n" if body.startswith(FRONTMATTER_FENCE) else f"{body}\n"


def query_text(text: str) -> str:
    """The query as groove should search it: a word BEIR wrote with a leading ``-``
    is quoted, since groove would read it as an exclusion (``-term``)."""
    if not split_exclusions(text).exclusions:
        return text

    def quoted(match: re.Match[str]) -> str:
        token = match.group(0)
        return f'"{token}"' if split_exclusions(token).exclusions else token

    return _DASH_TOKEN.sub(quoted, text)


def note_cap_text() -> str:
    """The indexer's size cap for one note, as said to people (``50 MiB``)."""
    if FILE_SIZE_CAP % 2**20 == 0:
        return f"{FILE_SIZE_CAP // 2**20} MiB"
    return f"{FILE_SIZE_CAP:,} bytes"


def first_and_more(reasons: Sequence[str]) -> str:
    """The first reason, and how many more there are (``... (and 2 more)``)."""
    more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
    return f"{reasons[0]}{more}"


def has_text(document: BeirDocument) -> bool:
    """Whether a note of ``document`` holds text to find (a title alone is a heading
    with no section under it: the indexer keeps no chunk of it)."""
    return bool(document.text.replace("\x00", " ").strip())


def golden_text(
    queries: Sequence[BeirQuery],
    judged: dict[str, dict[str, int]],
    names: dict[str, str],
    title: str,
    *,
    not_written: Mapping[str, str] | None = None,
    left_out: list[str] | None = None,
) -> tuple[str, int]:
    """(the golden file, how many queries it holds).

    ``not_written`` maps each document no note is written for to why (no text, over
    the size a note may have): no golden entry names it.  A judged query the golden
    file would refuse (:func:`query_text_problem`), or whose judged documents are all
    unwritten, is left out and said why in ``left_out``: eval would refuse the whole
    file for it.
    """
    not_written = not_written or {}
    from pytest_groove.evaluation.golden.file import query_text_problem

    entries: list[dict[str, Any]] = []
    for query in queries:
        relevant = {d: score for d, score in judged.get(query.id, {}).items() if score > 0}
        if not relevant:
            continue
        expected = [
            {"path": names[doc_id], **({"grade": score} if score > 1 else {})}
            for doc_id, score in relevant.items()
            if doc_id not in not_written
        ]
        text = query_text(query.text)
        problem = query_text_problem(text)
        if problem is None and not expected:
            reasons = sorted({not_written[doc_id] for doc_id in relevant})
            problem = f"every document judged for it {' or '.join(reasons)}"
        if problem is not None:
            if left_out is not None:
                left_out.append(f"{query.where}: query {query.id!r}: {problem}")
            continue
        entries.append({"id": query.id, "query": text, "expected": expected})
    body = yaml.safe_dump(
        {"queries": entries},
        allow_unicode=True,
        sort_keys=False,
        width=100,
        default_flow_style=False,
    )
    return f"# {title}\n{body}", len(entries)


def _check_out(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise GrooveError(f"{out}: not a folder; pass --kb-path a new or empty folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise GrooveError(
            f"{out}: the folder is not empty; pass --kb-path a new folder, or --force to "
            "write over files of the same name (other files stay)"
        )


def _write(path: Path, text: str) -> None:
    """Write ``text`` to a new file renamed over ``path``: a link standing at the name
    (``--force`` into a folder that holds one) is replaced, never written through, and
    a file that fails half-way (a full disk) leaves the old one as it was.  Not synced:
    the import is made again as easily as it was made."""
    data = text.encode("utf-8")
    try:
        write_atomic_with(path, lambda handle: handle.write(data), mode=0o644, sync=False)
    except OSError as exc:
        raise GrooveError(
            f"could not write {path}: {exc.strerror or exc}; check the folder"
        ) from None


def import_beir(
    source: Path, out: Path, *, split: str = "test", force: bool = False
) -> ImportSummary:
    """Read the dataset in ``source``, check it whole, then write the KB into ``out``."""
    _check_out(out, force)
    if not source.is_dir():
        raise GrooveError(
            f"{clip_path(source)}: no such folder; pass the unzipped BEIR dataset folder"
        )
    documents = read_corpus(source / CORPUS_FILE)
    queries = read_queries(source / QUERIES_FILE)
    judged = read_qrels(
        qrels_path(source, split), {d.id for d in documents}, {q.id for q in queries}
    )
    names = note_names([d.id for d in documents])
    empty, oversized = _unwritten_documents(documents)
    not_written = {**empty, **oversized}
    left_out: list[str] = []
    golden, count = golden_text(
        queries,
        judged,
        names,
        f"imported by `groove import beir` from {source.name} ({split})",
        not_written=not_written,
        left_out=left_out,
    )
    golden_path = out / DEFAULT_GOLDEN_NAME
    _check_golden(golden, count, left_out, source, split, golden_path)
    written = [d for d in documents if d.id not in not_written]
    _check_note_names(written, names)
    _write_kb(out, written, names, golden_path, golden)
    unjudged = len(queries) - count - len(left_out)
    return ImportSummary(
        len(written),
        count,
        unjudged,
        golden_path,
        left_out=tuple(left_out),
        empty_documents=len(empty),
        oversized_documents=len(oversized),
    )


def _unwritten_documents(
    documents: Sequence[BeirDocument],
) -> tuple[dict[str, str], dict[str, str]]:
    """The documents no note is written for, each with why: (no text, over the size
    cap).  The indexer skips a note over its size cap, and eval would then refuse the
    golden file naming it: such a document is left out, like one with no text."""
    empty = {d.id: "has no text" for d in documents if not has_text(d)}
    oversized = {
        d.id: f"is over the {note_cap_text()} a note may hold"
        for d in documents
        if d.id not in empty and len(note_text(d).encode("utf-8")) > FILE_SIZE_CAP
    }
    return empty, oversized


def _check_golden(
    golden: str, count: int, left_out: Sequence[str], source: Path, split: str, path: Path
) -> None:
    """A golden file with no query, or over the size a golden file may have, is refused."""
    if count == 0 and left_out:
        raise GrooveError(
            f"no judged query of {source.name} ({split}) can be run: "
            f"{first_and_more(left_out)}; nothing was written"
        )
    if count == 0:
        raise GrooveError(
            f"{qrels_path(source, split)}: no query has a document judged above 0; "
            "pick another --split"
        )
    if len(golden.encode("utf-8")) > GOLDEN_CAP:
        raise GrooveError(
            f"{path}: the golden file would be {len(golden.encode('utf-8')):,} bytes, over "
            f"the {GOLDEN_CAP:,} a golden file may hold; import a smaller split"
        )


def _check_note_names(written: Sequence[BeirDocument], names: Mapping[str, str]) -> None:
    for document in written:
        # a name the locale would write as other bytes than its UTF-8 (or not at all)
        locale = locale_refusal(names[document.id])
        if locale is not None:
            raise GrooveError(
                f"the note of document {clip(document.id)}, {clip(names[document.id])}, "
                f"{locale}; nothing was written"
            )


def _write_kb(
    out: Path,
    written: Sequence[BeirDocument],
    names: Mapping[str, str],
    golden_path: Path,
    golden: str,
) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GrooveError(f"could not create {out}: {exc.strerror or exc}") from None
    for document in written:
        _write(out / names[document.id], note_text(document))
    _write(golden_path, golden)
