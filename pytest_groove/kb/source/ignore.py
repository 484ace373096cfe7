"""``<kb>/.grooveignore``: a case-insensitive subset of gitignore syntax.

Supported: ``*``, ``?``, ``[a-z]`` / ``[!a-z]``, ``**`` as a leading, trailing or
middle path segment, a trailing ``/`` (directories only), a leading or inner
``/`` (anchored at the KB root), ``!`` to re-include, ``\\`` escapes, ``#``
comments.  The last matching pattern decides.  Only the root file is read
(never nested ignore files, never ``.gitignore``).

The file lives inside the knowledge base, which may be shared or synced, so it
is read defensively: a symlink, a hard link, a non-regular file or one above
64 KiB is refused with a warning, and at most 1000 patterns are used.  Nothing
here ever raises for bad content: bad lines are skipped with a warning.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from pytest_groove.errors import clip_repr
from pytest_groove.files.beneath import read_at_most
from pytest_groove.files.resource_limits import raise_if_limit
from pytest_groove.text.plain import trim

IGNORE_FILE_NAME = ".grooveignore"
#: bigger ignore files are refused as a whole
MAX_IGNORE_BYTES = 64 * 1024
#: patterns after this many are dropped
MAX_PATTERNS = 1000


class BadPattern(ValueError):
    """A ``.grooveignore`` line that cannot be turned into a matcher."""


@dataclass(frozen=True)
class IgnorePattern:
    """One compiled ``.grooveignore`` line."""

    #: the line as written (for messages)
    text: str
    #: 1-based line number in the file
    line: int
    #: ``!pattern``: a match re-includes instead of excluding
    negated: bool
    #: ``pattern/``: matches directories only
    dir_only: bool
    regex: re.Pattern[str]

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        return self.regex.fullmatch(rel) is not None


@dataclass(frozen=True)
class IgnoreRules:
    """An ordered list of patterns; the last one matching a path decides."""

    patterns: tuple[IgnorePattern, ...] = ()

    def ignores(self, rel: str, is_dir: bool) -> bool:
        """Whether this one path (not its ancestors) is ignored by the patterns."""
        pattern = self.deciding(rel, is_dir)
        return pattern is not None and not pattern.negated

    def deciding(self, rel: str, is_dir: bool) -> IgnorePattern | None:
        """The last pattern matching this one path (None: none matches); it ignores the
        path unless it is negated."""
        for pattern in reversed(self.patterns):
            if pattern.matches(rel, is_dir):
                return pattern
        return None

    def __bool__(self) -> bool:
        return bool(self.patterns)


# --------------------------------------------------------------------------- glob → regex


def _class_char(char: str) -> str:
    """One literal character inside a regex character class."""
    return "\\" + char if char in "\\]^-[" else char


def _translate_class(segment: str, start: int) -> tuple[str, int]:
    """Translate ``[...]`` starting at ``segment[start] == '['``; return (regex, next index)."""
    i = start + 1
    negated = i < len(segment) and segment[i] in "!^"
    if negated:
        i += 1
    items: list[str] = []
    first = True
    while True:
        if i >= len(segment):
            raise BadPattern("unclosed character class '['")
        char = segment[i]
        if char == "]" and not first:
            i += 1
            break
        first = False
        if char == "\\":
            if i + 1 >= len(segment):
                raise BadPattern("dangling '\\' at the end")
            char = segment[i + 1]
            i += 1
        i += 1
        # a '-' between two members makes a range; at either end it is literal
        if i + 1 < len(segment) and segment[i] == "-" and segment[i + 1] != "]":
            high = segment[i + 1]
            if high == "\\":
                if i + 2 >= len(segment):
                    raise BadPattern("dangling '\\' at the end")
                high = segment[i + 2]
                i += 1
            if high < char:
                raise BadPattern(f"invalid range {char}-{high}")
            items.append(f"{_class_char(char)}-{_class_char(high)}")
            i += 2
        else:
            items.append(_class_char(char))
    body = "".join(items)
    # a class never matches the path separator, negated or not
    return (f"[^/{body}]" if negated else f"(?!/)[{body}]"), i


def _segment_pieces(segment: str) -> list[list[str]]:
    """Split one segment at its ``*`` runs into lists of one-character regexes.

    ``a*b?c*`` becomes ``[["a"], ["b", "[^/]", "c"], []]``: each piece matches a
    fixed number of characters, and a star sits between each two pieces.
    """
    pieces: list[list[str]] = [[]]
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            while i < len(segment) and segment[i] == "*":
                i += 1
            pieces.append([])
            continue
        if char == "?":
            pieces[-1].append("[^/]")
        elif char == "[":
            regex, i = _translate_class(segment, i)
            pieces[-1].append(regex)
            continue
        elif char == "\\":
            if i + 1 >= len(segment):
                raise BadPattern("dangling '\\' at the end")
            i += 1
            pieces[-1].append(re.escape(segment[i]))
        else:
            pieces[-1].append(re.escape(char))
        i += 1
    return pieces


def _translate_segment(segment: str) -> str:
    """Regex for one path segment: ``*`` and ``?`` never cross a ``/``.

    Linear-time by construction.  A plain ``[^/]*`` per star backtracks
    polynomially in the number of stars (``*a*a*a*...c`` against ``aaaa...``
    runs for minutes).  Every piece between two stars has a fixed width, so its
    leftmost occurrence is always the best choice: each star but the last
    becomes an atomic, lazy ``(?>[^/]*?piece)`` that never backtracks, and only
    the last star (whose piece must end the segment) is an ordinary one.
    """
    pieces = _segment_pieces(segment)
    out = ["".join(pieces[0])]
    for piece in pieces[1:-1]:
        out.append("(?>[^/]*?" + "".join(piece) + ")")
    if len(pieces) > 1:
        out.append("[^/]*" + "".join(pieces[-1]))
    return "".join(out)


def _translate_path(pattern: str, anchored: bool) -> str:
    """Regex for a slash-separated glob, with ``**`` segments spanning directories.

    An unanchored pattern behaves as if it started with ``**/``.  The same
    leftmost-is-best argument as in :func:`_translate_segment` applies one level
    up: a run of plain segments between two ``**`` matches a fixed number of
    segments, so its first occurrence is taken atomically; only the run after
    the last ``**`` (which must end the path) is searched for normally.
    """
    segments: list[str] = [] if anchored else ["**"]
    for segment in pattern.split("/"):
        if segment == "**" and segments and segments[-1] == "**":
            continue  # "**/**" means the same as "**"
        segments.append(segment)
    if segments == ["**"]:
        return ".*"  # alone: everything
    trailing = segments[-1] == "**"
    if trailing:
        segments.pop()  # everything inside, not the directory itself: added below
    # runs of plain segments; every run after the first follows a "**"
    runs: list[list[str]] = [[]]
    for segment in segments:
        if segment == "**":
            runs.append([])
        else:
            runs[-1].append(_translate_segment(segment))
    out: list[str] = ["/".join(runs[0])]
    started = bool(runs[0])
    for number, run in enumerate(runs[1:], start=2):
        lead = "/" if started else ""
        body = "/".join(run)
        if number == len(runs) and not trailing:
            out.append(f"{lead}(?:[^/]*/)*{body}")
        else:
            out.append(f"(?>{lead}(?:[^/]*/)*?{body}(?=/|\\Z))")
        started = True
    if trailing:
        out.append("/.+")
    return "".join(out)


def _strip_trailing_spaces(line: str) -> str:
    """Drop trailing blanks unless the last one is escaped with a backslash."""
    end = len(line)
    while end > 0 and line[end - 1] in " \t":
        if end >= 2 and line[end - 2] == "\\":
            break
        end -= 1
    return line[:end]


def compile_pattern(text: str, line: int = 0) -> IgnorePattern:
    """Compile one non-blank, non-comment ``.grooveignore`` line.

    Raises :class:`BadPattern` when the line cannot be a pattern.
    """
    pattern = _strip_trailing_spaces(text)
    negated = pattern.startswith("!")
    if negated:
        pattern = pattern[1:]
    dir_only = pattern.endswith("/") and not pattern.endswith("\\/")
    if dir_only:
        pattern = pattern[:-1]
    anchored = pattern.startswith("/")
    if anchored:
        pattern = pattern[1:]
    if not pattern:
        raise BadPattern("the pattern is empty")
    # an inner slash anchors the pattern at the root, like a leading one
    anchored = anchored or "/" in pattern
    regex = _translate_path(pattern, anchored)  # a bare name matches at any depth
    try:
        compiled = re.compile(regex, re.IGNORECASE | re.DOTALL)
    except re.error as exc:  # pragma: no cover - translation should not produce bad regexes
        raise BadPattern(str(exc)) from None
    return IgnorePattern(text, line, negated, dir_only, compiled)


# --------------------------------------------------------------------------- the file


def parse_ignore_text(text: str, source: str = IGNORE_FILE_NAME) -> tuple[IgnoreRules, list[str]]:
    """Rules and warnings from the decoded contents of an ignore file."""
    warnings: list[str] = []
    patterns: list[IgnorePattern] = []
    counted = 0
    dropped = 0
    for number, raw in enumerate(text.lstrip("\ufeff").split("\n"), start=1):
        line = raw[:-1] if raw.endswith("\r") else raw
        if not trim(line) or line.startswith("#"):
            continue
        counted += 1
        if counted > MAX_PATTERNS:
            dropped += 1
            continue
        try:
            patterns.append(compile_pattern(line, number))
        except BadPattern as exc:
            warnings.append(f"{source}: line {number} ({clip_repr(line)}) skipped: {exc}")
    if dropped:
        warnings.append(
            f"{source}: only the first {MAX_PATTERNS} patterns are used; "
            f"{dropped} more were dropped (merge patterns with wildcards)"
        )
    return IgnoreRules(tuple(patterns)), warnings


def parse_ignore_bytes(
    data: bytes, source: str = IGNORE_FILE_NAME
) -> tuple[IgnoreRules, list[str]]:
    """Like :func:`parse_ignore_text`; invalid UTF-8 is replaced, not fatal."""
    return parse_ignore_text(data.decode("utf-8", errors="replace"), source)


def _refusal(st: os.stat_result) -> str | None:
    """Why a file with this status is not read as an ignore file, or None."""
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    if st.st_nlink > 1:
        return "it is a hard link"
    if st.st_size > MAX_IGNORE_BYTES:
        return f"it is larger than {MAX_IGNORE_BYTES // 1024} KiB"
    return None


def _read_ignore_file(path: Path) -> tuple[bytes | None, str | None]:
    """(contents, None) or (None, reason); (None, None) when there is no file."""
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"it cannot be read ({exc.strerror})"
    reason = _refusal(before)
    if reason is not None:
        return None, reason
    # O_NONBLOCK: a named pipe swapped in after the lstat must not hang the walk
    flags = (
        os.O_RDONLY
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_BINARY", 0)
    )
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise_if_limit(exc, path)  # the rules left out would index what they exclude
        return None, f"it cannot be read ({exc.strerror})"
    try:
        # re-check on the open handle: the path may have been swapped meanwhile
        reason = _refusal(os.fstat(fd))
        if reason is not None:
            return None, reason
        data = read_at_most(fd, MAX_IGNORE_BYTES + 1)
        if len(data) > MAX_IGNORE_BYTES:
            return None, f"it is larger than {MAX_IGNORE_BYTES // 1024} KiB"
        return data, None
    except OSError as exc:
        return None, f"it cannot be read ({exc.strerror})"
    finally:
        os.close(fd)


def load_ignore_rules(kb_root: Path) -> tuple[IgnoreRules, tuple[str, ...]]:
    """Read ``<kb_root>/.grooveignore`` (absent → no rules, no warning).

    A refused or unreadable file gives no rules and one warning; indexing goes
    on with the other exclusion layers.
    """
    path = kb_root / IGNORE_FILE_NAME
    data, reason = _read_ignore_file(path)
    if reason is not None:
        return IgnoreRules(), (f"{path}: not used because {reason}",)
    if data is None:
        return IgnoreRules(), ()
    rules, warnings = parse_ignore_bytes(data, str(path))
    return rules, tuple(warnings)
