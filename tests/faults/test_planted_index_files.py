"""Links and other things planted among the index folder's files are never followed.

Each layout plants a symbolic link (or a pipe, a folder) at one of the names the index
keeps -- ``index.db``, ``index.db-wal``, ``index.db-shm``, ``index.db-journal``,
``index.lock`` and the faiss cache -- pointing at a file outside the KB (an unrelated
SQLite database, or a plain file), then runs the real ``groove`` command's ``main``
(index, eval, search).  The outside file must keep its bytes, its modification and
change times, and -- on a file system that records reads (relatime, with the access
time set before the modification time) -- its access time: it was never opened for
reading.  Each run either rebuilds (a warning names what was removed) or prints one
``Error:`` line naming it; no traceback.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groove.cli import main
from pytest_groove.kb.store.files import clear_planted, find_planted, refuse_planted
from tests.helpers.cli_invoke import Groove

pytest_plugins = ["pytester"]

NAMES = ("index.db", "index.db-wal", "index.db-shm", "index.db-journal", "index.lock", "cache")


@dataclass(frozen=True)
class Outside:
    """A file outside the KB and what it looked like before the run."""

    path: Path
    data: bytes
    mtime_ns: int
    ctime_ns: int
    atime_ns: int

    @classmethod
    def snapshot(cls, path: Path) -> Outside:
        data = path.read_bytes()
        info = os.stat(path)
        # an access time before the modification time: relatime records the next read
        os.utime(path, ns=(info.st_mtime_ns - 10**12, info.st_mtime_ns))
        info = os.stat(path)
        return cls(path, data, info.st_mtime_ns, info.st_ctime_ns, info.st_atime_ns)

    def assert_untouched(self, reads_recorded: bool, *, last: bool = True) -> None:
        """The file as it was; ``last=False`` leaves it unread, for a later check."""
        info = os.stat(self.path)
        # read by name only after stat: reading would set the access time
        assert (info.st_mtime_ns, info.st_ctime_ns) == (self.mtime_ns, self.ctime_ns)
        if reads_recorded:
            assert info.st_atime_ns == self.atime_ns, "the outside file was read"
        if last:
            assert self.path.read_bytes() == self.data


def _reads_are_recorded(folder: Path) -> bool:
    probe = folder / "atime-probe"
    probe.write_bytes(b"x" * 64)
    info = os.stat(probe)
    os.utime(probe, ns=(info.st_mtime_ns - 10**12, info.st_mtime_ns))
    before = os.stat(probe).st_atime_ns
    probe.read_bytes()
    recorded = os.stat(probe).st_atime_ns != before
    probe.unlink()
    return recorded


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small KB indexed and evaluated once (so a faiss cache exists), to copy per case."""
    kb = tmp_path_factory.mktemp("planted") / "kb"
    kb.mkdir()
    (kb / "deploy.md").write_text("# Deploy\n\n## Steps\n\nRoll the release out.\n")
    (kb / "cache.md").write_text("# Caching\n\n## Keys\n\nCache keys expire hourly.\n")
    (kb / ".groove-eval.yml").write_text(
        "queries:\n  - query: roll the release out\n    expected:\n      - path: deploy.md\n"
    )
    assert main(["eval", "--kb-path", str(kb), "--model", "hash", "--no-history"]) == 0
    return kb


@dataclass
class Case:
    kb: Path
    index_dir: Path
    outside_db: Outside
    outside_file: Outside
    reads_recorded: bool


@pytest.fixture
def case(built: Path, tmp_path: Path) -> Iterator[Case]:
    yield _new_case(built, tmp_path)


def _new_case(built: Path, tmp_path: Path) -> Case:
    kb = tmp_path / "kb"
    if kb.exists():
        shutil.rmtree(kb)
    shutil.copytree(built, kb)
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    db = outside / "other.db"
    db.unlink(missing_ok=True)
    conn = apsw.Connection(str(db))
    conn.execute("CREATE TABLE secrets(x TEXT); INSERT INTO secrets VALUES ('keep me')")
    conn.close()
    plain = outside / "notes.txt"
    plain.write_bytes(b"an unrelated file\n" * 50)
    return Case(
        kb,
        kb / ".groove" / "hash",
        Outside.snapshot(db),
        Outside.snapshot(plain),
        _reads_are_recorded(outside),
    )


def _name_of(case: Case, name: str) -> Path:
    if name == "cache":
        caches = sorted(case.index_dir.glob("vectors-*.faiss"))
        assert caches, "the eval run left no faiss cache"
        return caches[0]
    return case.index_dir / name


def _plant(case: Case, name: str, kind: str) -> Path:
    path = _name_of(case, name)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    if kind == "link-db":
        path.symlink_to(case.outside_db.path)
    elif kind == "link-file":
        path.symlink_to(case.outside_file.path)
    elif kind == "dangling":
        path.symlink_to(case.outside_db.path.parent / "missing.db")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    return path


def _groove(groove: Groove, *argv: str) -> tuple[int, str]:
    done = groove(*argv)
    assert "Traceback" not in done.stderr
    return done.returncode, done.stderr


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("Error:")]


def _check_outcome(code: int, err: str, planted: Path) -> None:
    """Rebuilt (exit 0, or a later failure unrelated to it), or one line naming it."""
    errors = _errors(err)
    if code == 0:
        assert not errors
        return
    assert code == 1 and len(errors) == 1, err
    assert planted.name in errors[0] or str(planted.parent) in errors[0], errors[0]


# --------------------------------------------------------------------------- each layout


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", ["link-db", "link-file"])
def test_a_link_planted_in_the_index_folder_is_never_followed(
    case: Case, name: str, kind: str, groove: Groove
) -> None:
    planted = _plant(case, name, kind)
    kb = str(case.kb)
    code, err = _groove(groove, "index", "--kb-path", kb, "--model", "hash")
    assert code == 0, err
    if name != "cache":
        # the indexer removed the link itself and said so; the index works again
        assert planted.name in err and "removed that name" in err
        assert not planted.is_symlink()
    code, err = _groove(groove, "eval", "--kb-path", kb, "--model", "hash", "--no-history")
    assert code == 0, err
    assert not planted.is_symlink() or name == "index.db-journal"
    code, err = _groove(groove, "search", "--kb-path", kb, "--model", "hash", "release")
    assert code == 0, err
    case.outside_db.assert_untouched(case.reads_recorded)
    case.outside_file.assert_untouched(case.reads_recorded)


@pytest.mark.parametrize("name", [n for n in NAMES if n not in ("index.lock", "cache")])
def test_a_search_refuses_a_link_with_one_line_and_the_repair(
    case: Case, name: str, groove: Groove
) -> None:
    planted = _plant(case, name, "link-db")
    code, err = _groove(groove, "search", "--kb-path", str(case.kb), "--model", "hash", "x")
    assert code == 1
    (line,) = _errors(err)
    assert str(planted) in line and "symbolic link" in line and "groove index" in line
    case.outside_db.assert_untouched(case.reads_recorded, last=False)
    # the command it names repairs it
    code, err = _groove(groove, "index", "--kb-path", str(case.kb), "--model", "hash")
    assert code == 0, err
    code, err = _groove(groove, "search", "--kb-path", str(case.kb), "--model", "hash", "x")
    assert code == 0, err
    case.outside_db.assert_untouched(case.reads_recorded)


def test_a_link_planted_at_the_lock_is_not_called_a_symlink_loop(
    case: Case, groove: Groove
) -> None:
    _plant(case, "index.lock", "link-file")
    code, err = _groove(groove, "index", "--kb-path", str(case.kb), "--model", "hash")
    assert code == 0 and "loop" not in err
    assert "index.lock was a symbolic link" in err
    case.outside_file.assert_untouched(case.reads_recorded)


def test_a_folder_at_index_db_is_named_as_a_folder(case: Case, groove: Groove) -> None:
    planted = _plant(case, "index.db", "folder")
    (planted / "keep.txt").write_text("someone's")
    for command in ("index", "search"):
        argv = [command, "--kb-path", str(case.kb), "--model", "hash"]
        code, err = _groove(groove, *argv, *(["x"] if command == "search" else []))
        assert code == 1
        (line,) = _errors(err)
        assert str(planted) in line and "is a folder" in line and "remove it" in line
    assert (planted / "keep.txt").read_text() == "someone's"  # never removed


@pytest.mark.parametrize("name", ["index.db", "index.db-wal", "index.lock"])
def test_a_named_pipe_in_the_index_folder_is_removed_by_the_indexer(
    case: Case, name: str, groove: Groove
) -> None:
    planted = _plant(case, name, "fifo")
    code, err = _groove(groove, "index", "--kb-path", str(case.kb), "--model", "hash")
    assert code == 0, err
    assert "was a named pipe" in err
    assert not planted.exists() or planted.is_file()


@pytest.mark.parametrize("size", [0, 1, 99, "half"])
def test_an_empty_or_cut_short_index_is_named_as_such(
    case: Case, size: int | str, groove: Groove
) -> None:
    db = case.index_dir / "index.db"
    if size == "half":
        _groove(groove, "index", "--kb-path", str(case.kb), "--model", "hash")
        with db.open("r+b") as handle:
            handle.truncate(db.stat().st_size // 2)
    else:
        db.write_bytes(b"S" * int(size))
    for suffix in ("-wal", "-shm"):
        (case.index_dir / f"index.db{suffix}").unlink(missing_ok=True)
    size_before = db.stat().st_size
    code, err = _groove(groove, "search", "--kb-path", str(case.kb), "--model", "hash", "x")
    assert code == 1
    (line,) = _errors(err)
    assert "note vectors" not in line
    assert "holds no index" in line or "corrupt" in line
    assert db.stat().st_size == size_before  # a search never writes it
    # the command it names is this run's (the KB as typed, its --model) and mends it:
    # it once said `groove index --force --kb-path <kb>`, which built the default
    # model's index beside the damaged one
    (command,) = re.findall(r"`(groove index [^`]*)`", line)
    words = shlex.split(command)
    assert words[words.index("--kb-path") + 1 :] == [str(case.kb), "--model", "hash"]
    code, err = _groove(groove, *words[1:])
    assert code == 0, err
    code, err = _groove(groove, "search", "--kb-path", str(case.kb), "--model", "hash", "x")
    assert code == 0, err


@pytest.mark.parametrize("name", ["index.db", "index.db-wal", "index.lock", "cache"])
def test_under_pytest_a_planted_link_is_removed_and_the_session_passes(
    built: Path, pytester: pytest.Pytester, name: str
) -> None:
    case = _new_case(built, pytester.path / "case")
    planted = _plant(case, name, "link-db")
    result = pytester.runpytest(
        "--groove-kb", str(case.kb), "--groove-model", "hash", "--groove-no-history"
    )
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK, output
    assert "Traceback" not in output and not planted.is_symlink()
    case.outside_db.assert_untouched(case.reads_recorded)


# --------------------------------------------------------------------------- generated


LAYOUT = st.dictionaries(
    st.sampled_from(NAMES),
    st.sampled_from(["link-db", "link-file", "dangling", "fifo", "folder"]),
    min_size=1,
    max_size=4,
)


def _run_layout(built: Path, tmp_path: Path, layout: dict[str, str], groove: Groove) -> None:
    case = _new_case(built, tmp_path)
    planted = {name: _plant(case, name, kind) for name, kind in layout.items()}
    kb = str(case.kb)
    for argv in (
        ["index", "--kb-path", kb, "--model", "hash"],
        ["eval", "--kb-path", kb, "--model", "hash", "--no-history"],
        ["search", "--kb-path", kb, "--model", "hash", "release"],
    ):
        code, err = _groove(groove, *argv)
        if code != 0:
            errors = _errors(err)
            assert code == 1 and len(errors) == 1, err
            # a refusal names one of the planted things (a folder is never removed)
            assert any(str(path) in errors[0] for path in planted.values()), errors[0]
    case.outside_db.assert_untouched(case.reads_recorded)
    case.outside_file.assert_untouched(case.reads_recorded)


def _generated_layouts(count: int) -> Callable[[Path, Path, Groove], None]:
    """:func:`_run_layout` over ``count`` generated layouts."""

    @settings(max_examples=count, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(layout=LAYOUT)
    def check(built: Path, tmp_path: Path, layout: dict[str, str], groove: Groove) -> None:
        _run_layout(built, tmp_path, layout, groove)

    return check


test_generated_layouts_never_reach_outside = _generated_layouts(12)
test_many_generated_layouts_never_reach_outside = pytest.mark.slow(_generated_layouts(400))


# --------------------------------------------------------------------------- the helpers


def test_only_the_link_is_removed_never_its_target(tmp_path: Path) -> None:
    target = tmp_path / "target.db"
    target.write_bytes(b"precious")
    folder = tmp_path / "index"
    folder.mkdir()
    (folder / "index.db").symlink_to(target)
    os.mkfifo(folder / "index.db-wal")
    (folder / "index.db-shm").mkdir()
    found = {p.path.name: p for p in find_planted(folder, ("index.db", "index.db-wal", "nope"))}
    assert found["index.db"].removable and "symbolic link" in found["index.db"].what
    assert found["index.db-wal"].what == "a named pipe"
    warnings = clear_planted(folder, ("index.db", "index.db-wal", "index.db-shm"))
    assert len(warnings) == 2
    assert target.read_bytes() == b"precious"
    assert (folder / "index.db-shm").is_dir()  # a folder is left for the open to refuse
    with pytest.raises(Exception, match="is a folder"):
        refuse_planted(folder, ("index.db", "index.db-shm"))


def test_a_pipe_swapped_in_just_before_sqlite_opens_is_refused(
    case: Case, monkeypatch: pytest.MonkeyPatch, groove: Groove
) -> None:
    """The check is by name, then SQLite opens by name: a swap in between is caught."""
    db = case.index_dir / "index.db"
    real_connection = apsw.Connection

    def swap_then_open(name: str, *args: object, **kwargs: object) -> apsw.Connection:
        if Path(name) == db and db.is_file():
            db.unlink()
            os.mkfifo(db)
        return real_connection(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(apsw, "Connection", swap_then_open)
    code, err = _groove(groove, "search", "--kb-path", str(case.kb), "--model", "hash", "x")
    assert code == 1
    (line,) = _errors(err)
    assert str(db) in line and "replaced while it was being opened" in line
