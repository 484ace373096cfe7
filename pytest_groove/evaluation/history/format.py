"""The eval history file's layout: reading, validating and encoding it.

The layout and the reading rules are described in :mod:`pytest_groove.evaluation.history.file`;
this module turns bytes into runs (:func:`read_history`, :func:`load_history`) and
runs into bytes (:func:`encode_history`, :func:`bound_history`), and writes nothing.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import json
import re
import warnings as _warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_groove.errors import GrooveError, clip, flag
from pytest_groove.evaluation.history.codec import decode_later, decode_run, encode_run, is_compact
from pytest_groove.evaluation.history.json_keys import (
    every_copy,
    holds_repeated,
    parse_json,
    runs_of_every_copy,
)
from pytest_groove.evaluation.history.lines import scan_lines
from pytest_groove.evaluation.history.unknown_keys import (
    NAMED,
    file_unknown_keys,
    run_unknown_keys,
)
from pytest_groove.evaluation.history.vouch import LaidOut, Memo, laid_out, reader, vouched_head
from pytest_groove.evaluation.runs.record import (
    RecordFormatError,
    RunRecord,
    display_timestamp,
    format_timestamp,
    parse_timestamp,
)
from pytest_groove.files.guarded_io import HISTORY_CAP, read_guarded
from pytest_groove.files.merge_conflicts import line_list
from pytest_groove.text.echo import conversion_reason, int_text

HISTORY_FILE_NAME = ".groove-eval-history.json"
#: how the guarded reader names this file in its refusals
HISTORY_WHAT = "eval history"


class HistoryWarning(UserWarning):
    """A history problem that does not stop the run (when no warning list is given)."""


def history_path(kb: Path) -> Path:
    """Where a KB's history lives (independent of where the golden file is)."""
    return kb / HISTORY_FILE_NAME


# --------------------------------------------------------------------------- reading

#: the format this version writes (format 1 had no ``format`` key)
HISTORY_FORMAT = 2

#: the mark a backup's name carries after the history's own name
BACKUP_MARK = ".bak-"


def new_backup_path(path: Path, moment: datetime | None = None) -> Path:
    """A name for a backup of ``path`` that no earlier backup holds.

    ``<file>.bak-<UTC time, to the microsecond>``, with ``-2``, ``-3``... added
    when that name is taken: every damage event keeps its own copy.
    """
    moment = (moment or datetime.now(UTC)).astimezone(UTC)
    stem = path.name + BACKUP_MARK + moment.strftime("%Y%m%dT%H%M%S.%fZ")
    candidate = path.with_name(stem)
    n = 1
    while candidate.exists() or candidate.is_symlink():
        n += 1
        candidate = path.with_name(f"{stem}-{n}")
    return candidate


def backup_pattern(path: Path) -> str:
    """How messages name the backups of ``path`` before one is written."""
    return f"{path}{BACKUP_MARK}<time>"


@dataclass(frozen=True)
class ParsedHistory:
    """A history file's runs, and what reading them dropped or changed."""

    #: the runs that parsed, newest first
    runs: list[RunRecord]
    #: how many runs the file holds, parsed or not
    stored: int
    #: one reason per skipped run (naming its JSON location), in file order
    skipped: tuple[str, ...] = ()
    #: the JSON location of each run whose text had to be repaired to be storable
    repaired: tuple[str, ...] = ()
    #: where a key is written twice (``top level: runs``, ``runs[2]``), in file order
    duplicated: tuple[str, ...] = ()
    #: why the file was read line by line (it is not JSON: merge conflict markers, a
    #: cut-off end), None when it parsed as a whole
    salvaged: str | None = None
    #: a frozen-baseline marker that names no stored run (or several different ones)
    orphan_marker: str | None = None
    #: the file holds several markers naming different runs (both sides of a merge)
    markers_disagree: bool = False
    #: keys this version does not know (a newer version's, a tool's), which a save
    #: would drop (:mod:`.unknown_keys`)
    unknown_keys: tuple[str, ...] = ()

    @property
    def damaged(self) -> bool:
        """Writing these runs back would not reproduce what the file holds."""
        return bool(
            self.skipped
            or self.repaired
            or self.duplicated
            or self.salvaged is not None
            or self.orphan_marker is not None
            or bool(self.unknown_keys)
        )


class HistoryTooNew(GrooveError):
    """The file declares a history format newer than this version reads.

    Not a :class:`RecordFormatError`: such a file is never treated as damaged or
    empty (a save would rewrite it in the older format and drop what it does not
    know); the run stops instead.  Raised without the file's name, which
    :func:`too_new` adds.
    """

    def __init__(self, found: int | str) -> None:
        self.found = found
        super().__init__(f"history format {found}")


def too_new(path: Path, exc: HistoryTooNew) -> GrooveError:
    """The one-line error for a history written by a newer pytest-groove."""
    return GrooveError(
        f"eval history {path} was written by a newer pytest-groove (history format "
        f"{exc.found}; this version reads formats 1 to {HISTORY_FORMAT}), so it is left as "
        f"it is: upgrade pytest-groove, or pass {flag('no-history')}"
    )


def _check_format(value: Any) -> None:
    if isinstance(value, str):  # a header number too long to read: no format we know
        raise HistoryTooNew(value)
    if isinstance(value, int) and not isinstance(value, bool) and value > HISTORY_FORMAT:
        raise HistoryTooNew(int_text(value))


#: a ``\uD800``-``\uDFFF`` escape: the only way JSON text can carry a surrogate
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")
_SURROGATE_TEXT = re.compile(r"\\u[dD][89abcdefABCDEF]")


def _without_lone_surrogates(value: Any) -> tuple[Any, bool]:
    """``value`` with every lone surrogate replaced by U+FFFD, and whether any was.

    JSON can spell a lone surrogate (``"\\udfff"``); Python reads it into a string
    that cannot be encoded as UTF-8, so such a run could never be written again.
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            fixed = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            return fixed, True
        return value, False
    if isinstance(value, list):
        items = [_without_lone_surrogates(item) for item in value]
        return [item for item, _ in items], any(changed for _, changed in items)
    if isinstance(value, dict):
        changed = False
        out: dict[str, Any] = {}
        for key, item in value.items():
            new_key, key_changed = _without_lone_surrogates(key)
            new_item, item_changed = _without_lone_surrogates(item)
            out[new_key] = new_item
            changed = changed or key_changed or item_changed
        return out, changed
    return value, False


def _decode_run(raw: Any, where: str) -> RunRecord:
    if is_compact(raw):
        return decode_run(raw, where)
    return RunRecord.from_json(raw, where)


@dataclass
class _Decoded:
    """The runs read so far, and what reading them found (file order)."""

    runs: list[RunRecord] = field(default_factory=list)
    #: why each skipped run was skipped
    skipped: list[str] = field(default_factory=list)
    #: where runs were repaired (lone surrogates)
    repaired: list[str] = field(default_factory=list)
    #: where keys are written twice
    duplicated: list[str] = field(default_factory=list)
    #: keys this version does not know, in runs a save encodes again
    unknown: list[str] = field(default_factory=list)

    def add(
        self,
        where: str,
        raw: Any,
        *,
        may_hold_surrogates: bool,
        may_repeat: bool,
        text: str | None = None,
    ) -> None:
        """Read the stored run ``raw``; ``text`` is its line, kept for the next save
        when its digest vouches for it (then its unknown keys are kept, not named)."""
        original = raw
        repeated = may_repeat and holds_repeated(raw)
        if repeated:
            self.duplicated.append(where)
        changed = False
        try:
            if may_hold_surrogates:
                raw, changed = _without_lone_surrogates(raw)
            run = _decode_run(raw, where)
        except RecordFormatError as exc:
            self.skipped.append(str(exc))
            run = None
        except RecursionError:
            self.skipped.append(f"{where}: JSON nested too deeply")
            run = None
        if changed and run is not None:
            self.repaired.append(where)
        keep = text is not None and run is not None and not (repeated or changed or run.edited)
        if keep and is_compact(raw):
            assert text is not None and run is not None
            self.runs.append(run.keeping_text(text))
            return
        if run is not None:
            self.runs.append(run)
        self.unknown.extend(run_unknown_keys(original, where, compact=is_compact(original)))


#: the bytes this process read last and what they read as: a save reads the file again
#: under its lock, and unless another process wrote it meanwhile it finds the bytes the
#: run read when it began, which are not read twice
_LAST_READ: list[tuple[bytes, ParsedHistory]] = []


def read_history(data: bytes) -> ParsedHistory:
    """Decode a history file's bytes (format 1 or 2) run by run.

    Raises :class:`RecordFormatError` when the bytes are not a history at all (not
    UTF-8 JSON, no ``runs`` list); a run that does not parse is skipped and named
    in :attr:`ParsedHistory.skipped`, one holding lone surrogates is repaired and
    named in :attr:`ParsedHistory.repaired`.  A file in the layout this version
    writes is read a line at a time, each run whose digest vouches for its line
    without parsing its queries (:mod:`.vouch`); any other is parsed as a whole.
    """
    if _LAST_READ and _LAST_READ[0][0] == data:
        parsed = _LAST_READ[0][1]
    else:
        parsed = _read(data)
        _LAST_READ[:] = [(data, parsed)]
    return replace(parsed, runs=list(parsed.runs))  # a list of its own to each caller


def _read(data: bytes) -> ParsedHistory:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # one bad byte costs the line it is on, not the file: its other runs are read
        why = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
        salvaged = _salvage(data.decode("utf-8", "surrogateescape"), why)
        if salvaged is None:
            raise RecordFormatError(why) from None
        return salvaged
    layout = laid_out(text)
    read = None if layout is None else _read_laid_out(layout)
    return read if read is not None else _read_whole(text, data)


def _read_laid_out(layout: LaidOut) -> ParsedHistory | None:
    """The runs of a file in the writer's layout; None when a line is no JSON (the
    whole file is then read as :func:`_read_whole` reads it, and salvaged)."""
    decoded = _Decoded()
    memo = Memo()
    pending: list[tuple[str, Any, str, bool]] = []
    for i, line in enumerate(layout.lines):
        where = f"runs[{i}]"
        run = _vouched_run(line, where, memo)
        if run is not None:
            decoded.runs.append(run)
            continue
        try:
            raw, repeats = parse_json(line)
        except (ValueError, RecursionError):
            return None
        pending.append((where, raw, line, repeats))
    for where, raw, line, repeats in pending:
        decoded.add(
            where,
            raw,
            may_hold_surrogates=_SURROGATE_TEXT.search(line) is not None,
            may_repeat=repeats,
            text=line,
        )
    return _parsed(decoded, len(layout.lines), layout.markers)


def _vouched_run(line: str, where: str, memo: Memo) -> RunRecord | None:
    """The run of a line its digest vouches for (:mod:`.vouch`), its queries read at
    their first use; None when the line must be read the long way."""
    head = vouched_head(line, memo)
    if head is None:
        return None
    try:
        label = str(head.values.get("timestamp", where))
        run = decode_later(
            head.values,
            where,
            reader(line, where, label),
            memo.member_reader(head, where),
        )
    except RecordFormatError:
        return None  # out of shape all the same: the long way names where
    return run.keeping_text(line)


def _read_whole(text: str, data: bytes) -> ParsedHistory:
    """The runs of a history read as one JSON document (or, not JSON, line by line)."""
    try:
        doc, repeats = parse_json(text)
    except RecursionError:
        raise RecordFormatError("JSON nested too deeply") from None
    except ValueError as exc:  # json.JSONDecodeError, oversized integer literals
        salvaged = _salvage(text, conversion_reason(exc) or str(exc))
        if salvaged is None:
            raise RecordFormatError(f"not JSON ({conversion_reason(exc) or exc})") from None
        return salvaged
    if not isinstance(doc, dict):
        raise RecordFormatError("top level: expected an object with a 'runs' list")
    _check_format(doc.get("format"))
    decoded = _Decoded()
    raw_runs = runs_of_every_copy(doc, decoded.duplicated)
    may_hold_surrogates = _SURROGATE_ESCAPE.search(data) is not None
    for i, raw in enumerate(raw_runs):
        decoded.add(f"runs[{i}]", raw, may_hold_surrogates=may_hold_surrogates, may_repeat=repeats)
    decoded.unknown[:0] = file_unknown_keys(doc)
    # every copy: a merge that kept both sides' `baseline` lines holds two markers,
    # and the last one alone would freeze whichever side happened to come last
    markers = [marker for marker in every_copy(doc, "baseline") if isinstance(marker, str)]
    return _parsed(decoded, len(raw_runs), markers)


def _parsed(decoded: _Decoded, stored: int, markers: Sequence[str]) -> ParsedHistory:
    return _frozen(
        ParsedHistory(
            runs=_in_time_order(decoded.runs),
            stored=stored,
            skipped=tuple(decoded.skipped),
            repaired=tuple(decoded.repaired),
            duplicated=tuple(decoded.duplicated),
            unknown_keys=tuple(decoded.unknown),
        ),
        markers,
    )


def _frozen(parsed: ParsedHistory, markers: Sequence[str]) -> ParsedHistory:
    """``parsed`` with the run the frozen-baseline marker names marked frozen.

    A marker that names no stored run (a merge kept the other side's header, the run
    was removed by hand), or markers that name different runs (a merge that kept both
    sides' ``baseline`` lines: the conflict resolved by keeping both, or a union merge
    driver), freeze nothing -- neither side's choice wins by where its line landed --
    and the history counts as damaged so that the next save keeps a copy of the file.
    """
    if not markers:
        return parsed
    orphan: str | None = None
    try:
        instants = {parse_timestamp(marker, "baseline") for marker in markers}
    except RecordFormatError:
        instants = set()
    runs = parsed.runs
    found = [i for i, run in enumerate(runs) if run.timestamp in instants]
    if len(instants) == 1 and found:
        runs[found[0]] = replace(runs[found[0]], frozen=True)
    else:
        orphan = ", ".join(dict.fromkeys(clip(marker) for marker in markers))
    if orphan is None:
        return parsed
    return replace(parsed, orphan_marker=orphan, markers_disagree=len(instants) > 1)


def _in_time_order(runs: list[RunRecord]) -> list[RunRecord]:
    """Newest first by timestamp, each run written twice the same way once.

    A file's order is not to be trusted: resolving a merge conflict by keeping both
    sides puts one branch's runs above the other's whatever their dates, and a run
    copied twice must stay one run that ``groove history`` can name.  The sort is
    stable: runs of the same instant keep their file order.
    """
    ordered = sorted(runs, key=lambda run: run.timestamp, reverse=True)
    distinct: list[RunRecord] = []
    for run in ordered:
        if distinct and distinct[-1].timestamp == run.timestamp:
            same_instant = [r for r in distinct if r.timestamp == run.timestamp]
            if any(_same_run(r, run) for r in same_instant):
                continue
        distinct.append(run)
    return distinct


def _same_run(one: RunRecord, other: RunRecord) -> bool:
    """Two runs of one instant written the same way (as stored, or as encoded now)."""
    return _run_bytes(one) == _run_bytes(other) or _encode_run(one) == _encode_run(other)


def _salvage(text: str, why: str) -> ParsedHistory | None:
    """The runs of a file that is not JSON, read line by line; None when it holds none.

    See :mod:`.history_lines`.  The result counts as damaged, so the next save first
    keeps a copy of the file.
    """
    scan = scan_lines(text)
    for found in scan.formats:
        _check_format(found)
    if not scan.raw_runs:
        return None
    decoded = _Decoded()
    may_hold_surrogates = (
        _SURROGATE_ESCAPE.search(text.encode("utf-8", "surrogateescape")) is not None
    )
    for where, raw in scan.raw_runs:
        decoded.add(where, raw, may_hold_surrogates=may_hold_surrogates, may_repeat=False)
    if not decoded.runs:
        return None
    reason = why
    if scan.conflict_lines:
        reason = (
            f"merge conflict markers at {line_list(scan.conflict_lines)}; both sides' runs are kept"
        )
    return _frozen(
        ParsedHistory(
            runs=_in_time_order(decoded.runs),
            stored=len(scan.raw_runs) + len(scan.broken),
            skipped=(*scan.broken, *decoded.skipped),
            repaired=tuple(decoded.repaired),
            salvaged=reason,
        ),
        scan.baselines,
    )


def parse_history(data: bytes) -> list[RunRecord]:
    """The runs of a history file that parse (see :func:`read_history`)."""
    return read_history(data).runs


def is_blank(data: bytes) -> bool:
    """An empty (or whitespace-only) file held nothing worth a backup copy."""
    return not data.strip()


def _damage_message(path: Path, parsed: ParsedHistory) -> str:
    parts = []
    if parsed.salvaged is not None:
        parts.append(
            f"it is not JSON as a whole ({parsed.salvaged}), so it was read line by line: "
            f"{len(parsed.runs)} run(s) read"
        )
    if parsed.skipped:
        count = len(parsed.skipped)
        reason = parsed.skipped[0] + (f"; and {count - 1} more" if count > 1 else "")
        parts.append(
            f"skipped {count} of {parsed.stored} stored run(s) that do not parse ({reason})"
        )
    if parsed.duplicated:
        shown = ", ".join(parsed.duplicated[:3])
        more = f" and {len(parsed.duplicated) - 3} more" if len(parsed.duplicated) > 3 else ""
        parts.append(
            f"found keys written twice ({shown}{more}; a bad merge or a hand edit?): every "
            "run of every copy of `runs` is read, and in a run the last value of a key"
        )
    if parsed.orphan_marker is not None and parsed.markers_disagree:
        parts.append(
            f"its frozen-baseline markers name different runs ({parsed.orphan_marker}: both "
            "sides of a merge?), so neither is frozen and the next save drops them; "
            "`groove history freeze RUN` freezes the one you want"
        )
    elif parsed.orphan_marker is not None:
        parts.append(
            f"its frozen-baseline marker ({parsed.orphan_marker}) names no single stored run "
            "(a merge that kept the other side's header?), so no run is frozen and the next "
            "save drops the marker; `groove history freeze RUN` freezes one"
        )
    if parsed.unknown_keys:
        named = ", ".join(clip(key) for key in parsed.unknown_keys[:NAMED])
        extra = len(parsed.unknown_keys) - NAMED
        named += f" and {extra} more" if extra > 0 else ""
        parts.append(
            f"it holds keys this version does not know ({named}: a newer pytest-groove's, "
            "or a tool's), which the next save cannot keep"
        )
    if parsed.repaired:
        parts.append(
            f"repaired {len(parsed.repaired)} stored run(s) holding a lone surrogate escape "
            f"({', '.join(parsed.repaired[:3])}; each becomes U+FFFD)"
        )
    return (
        f"eval history {path}: {'; '.join(parts)}; the other runs are kept, and the next "
        f"save first copies the file to {backup_pattern(path)}"
    )


def load_history(
    path: Path, *, warnings: list[str] | None = None, cap: int = HISTORY_CAP
) -> list[RunRecord]:
    """Stored runs, newest first; ``[]`` when the file does not exist.

    Raises :class:`GrooveError` when the file is refused or cannot be read (the
    caller must then stop without saving).  Stored runs that do not parse are
    skipped, runs holding lone surrogates repaired; content that is not a history
    at all yields ``[]``.  Either way one warning says so, appended to ``warnings``
    when given, else issued as a :class:`HistoryWarning`.  Loading never writes.
    """
    data = read_guarded(path, HISTORY_WHAT, cap)
    if data is None:
        return []
    message: str | None = None
    try:
        parsed = read_history(data)
    except HistoryTooNew as exc:
        raise too_new(path, exc) from None
    except RecordFormatError as exc:
        runs: list[RunRecord] = []
        message = f"eval history {path} is not a readable history ({exc}); starting fresh"
        if not is_blank(data):
            message += f" (the next save first copies the file to {backup_pattern(path)})"
    else:
        runs = parsed.runs
        if parsed.damaged:
            message = _damage_message(path, parsed)
    if message is not None:
        if warnings is None:
            _warnings.warn(message, HistoryWarning, stacklevel=2)
        else:
            warnings.append(message)
    return runs


# --------------------------------------------------------------------------- writing


def _run_bytes(run: RunRecord) -> bytes:
    """A run's line: as read when it is a stored run nothing changed (its digest, and
    any key this version does not know, kept byte for byte), else :func:`_encode_run`."""
    text = run.stored_text()
    return _encode_run(run) if text is None else text.encode("utf-8")


def _encode_run(run: RunRecord) -> bytes:
    """One run on one line (compact form, no spaces: the file is meant to be committed)."""
    text = json.dumps(encode_run(run), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # a lone surrogate from the golden file: store U+FFFD rather than fail the save
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


_OPEN = b'  "runs": [\n'
_SEPARATOR = b",\n"
_CLOSE = b"\n  ]\n}\n"
_EMPTY = b'  "runs": []\n}\n'


def _head(baseline: RunRecord | None) -> bytes:
    head = b'{\n  "format": ' + str(HISTORY_FORMAT).encode() + b",\n"
    if baseline is None:
        return head
    return head + b'  "baseline": "' + format_timestamp(baseline.timestamp).encode() + b'",\n'


def _assemble(pieces: Sequence[bytes], baseline: RunRecord | None) -> bytes:
    if not pieces:
        return _head(baseline) + _EMPTY
    parts = [_head(baseline) + _OPEN]
    for piece in pieces:
        parts += (piece, _SEPARATOR)
    parts[-1] = _CLOSE
    return b"".join(parts)  # one copy of the runs' bytes, however many


def _assembled_size(piece_sizes: Sequence[int], baseline: RunRecord | None) -> int:
    """``len(_assemble(...))`` without building the bytes."""
    if not piece_sizes:
        return len(_head(baseline)) + len(_EMPTY)
    return (
        len(_head(baseline))
        + len(_OPEN)
        + sum(piece_sizes)
        + len(_SEPARATOR) * (len(piece_sizes) - 1)
        + len(_CLOSE)
    )


def encode_history(runs: Sequence[RunRecord]) -> bytes:
    """The file bytes for these runs (newest first; a frozen run sets ``baseline``)."""
    return _assemble([_run_bytes(r) for r in runs], next((r for r in runs if r.frozen), None))


def _too_big(size: int, cap: int) -> GrooveError:
    return GrooveError(
        f"one eval run serialises to {size} bytes, more than the {cap}-byte history cap, "
        "so it cannot be saved in a form the next run could read; this comes from a very "
        f"large golden set or a very high {flag('limit')}: reduce either, or pass "
        f"{flag('no-history')} to "
        "skip the history file"
    )


def newest_per_fingerprint(ordered: Sequence[RunRecord], n: int) -> list[int]:
    """Positions of the newest ``n`` runs of each fingerprint, in order.

    ``[eval].history_size`` counts per fingerprint: five retriever experiments must
    not evict the main line's runs from the slots they share.
    """
    seen: dict[str, int] = {}
    kept = []
    for i, run in enumerate(ordered):
        key = json.dumps(run.fingerprint.to_json(), sort_keys=True)
        if seen.get(key, 0) < n:
            kept.append(i)
        seen[key] = seen.get(key, 0) + 1
    return kept


def bound_history(
    ordered: Sequence[RunRecord], history_size: int, cap: int
) -> tuple[list[RunRecord], bytes, list[str]]:
    """Keep the newest ``history_size`` runs of each fingerprint (+ the frozen one) within
    ``cap`` bytes.

    ``ordered`` is newest first and starts with the run being saved.  Returns the
    runs kept, their file bytes and warnings.  Oldest runs go first, so the run the
    next comparison most likely needs is the last to be dropped; the frozen run is
    dropped only when it no longer fits even beside the newest run alone.
    """
    pieces = [_run_bytes(r) for r in ordered]
    sizes = [len(p) for p in pieces]
    wanted = min(max(history_size, 0), len(ordered))
    pin = next((i for i, r in enumerate(ordered) if r.frozen), None)

    def pick(n: int, keep_pin: bool) -> list[int]:
        indices = newest_per_fingerprint(ordered, n)
        if keep_pin and pin is not None and pin not in indices:
            indices.append(pin)  # the oldest of those kept: it goes last
        return indices

    def size(indices: list[int]) -> int:
        frozen = next((ordered[i] for i in indices if i == pin), None)
        return _assembled_size([sizes[i] for i in indices], frozen)

    chosen: list[int] | None = None
    for keep_pin in (True, False) if pin is not None else (True,):
        chosen = next(
            (pick(n, keep_pin) for n in range(wanted, 0, -1) if size(pick(n, keep_pin)) <= cap),
            None,
        )
        if chosen is not None:
            break
    if chosen is None:
        if wanted > 0:
            raise _too_big(size([0]), cap)
        chosen = pick(0, True) if pin is not None and size(pick(0, True)) <= cap else []

    messages: list[str] = []
    if len(chosen) < len(pick(wanted, True)):
        messages.append(
            f"eval history trimmed to {len(chosen)} run(s) to stay under the {cap}-byte "
            "cap; [eval].history_size asks for more"
        )
    if pin is not None and pin not in chosen:
        messages.append(
            f"the frozen baseline of {display_timestamp(ordered[pin].timestamp)} no longer "
            f"fits in the history and was dropped; freeze a new one with {flag('freeze-baseline')}"
        )
    frozen = next((ordered[i] for i in chosen if i == pin), None)
    return [ordered[i] for i in chosen], _assemble([pieces[i] for i in chosen], frozen), messages
