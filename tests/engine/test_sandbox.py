"""What the sandbox hides (``grader.engine.inside.sandbox``): also what a course makes after its zygote started."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader import course
from grader.engine.engine import Engine, sqlite_file
from grader.engine.inside import sandbox
from grader.engine.kernels.kernel import Zygote
from grader.errors import ConfigurationError
from tests.fixtures import claims

from .conftest import fresh, stdout

MADE_LATER = ("submitted", "autograded", "feedback", "gradebook.db", "variant_secret.txt")


def _bare_course(root: Path) -> Path:
    """A course before its first run: a configuration and nothing else yet."""
    (root / "source").mkdir(parents=True)
    (root / "nbgrader_config.py").write_text("c = get_config()\n")
    return root


def test_the_paths_to_hide_include_those_not_made_yet(tmp_path: Path) -> None:
    root = _bare_course(tmp_path / "course")
    hidden = sandbox.hidden_paths(str(root))
    assert [name for name in MADE_LATER if str(root / name) not in hidden] == []
    assert set(sandbox.RUNTIME_PATHS) <= set(hidden)


def _mount_points(printed: str) -> set[str]:
    """The mount points of ``/proc/self/mountinfo`` (its fifth field, octal escapes undone)."""
    return {line.split()[4].encode().decode("unicode_escape") for line in printed.splitlines() if line.strip()}


def _needs_hiding(zygote: Zygote) -> None:
    missing = [m for m in zygote.sandbox_off if sandbox.step_of(m) == sandbox.NAMESPACES]
    claims.root_only("hiding the course's private paths needs a mount namespace", available=not missing)


def test_what_a_course_makes_after_its_zygote_started_is_hidden_from_every_kernel(tmp_path: Path) -> None:
    """A service's zygote starts before the course's first submission makes ``submitted/`` (and, on a
    first run, before the gradebook and the course secret exist); each kernel forked afterwards has
    them covered. With the list of paths taken, once, from what existed at the zygote's start, none is."""
    root = _bare_course(tmp_path / "course")
    with Zygote(root) as zygote:
        _needs_hiding(zygote)
        for name in ("submitted/alice/ps1_tensors", "autograded/alice/ps1_tensors", "feedback"):
            (root / name).mkdir(parents=True)
        for name in ("gradebook.db", "variant_secret.txt"):
            (root / name).write_text("private")
        with fresh(zygote) as kernel:
            run = kernel.run("print(open('/proc/self/mountinfo').read())")
    assert run.error is None, run.error
    printed = stdout(run)
    covered = _mount_points(printed)
    assert [name for name in MADE_LATER if os.path.realpath(root / name) not in covered] == []


READ_LATER = """
import os, time
for _path in {paths!r}:
    for _ in range(100):  # as a patient notebook would: wait for the file to appear
        if os.path.exists(_path):
            break
        time.sleep(0.02)
    try:
        with open(_path, "rb") as _f:
            print(_path, "READ", _f.read()[:40])
    except OSError as _error:
        print(_path, type(_error).__name__)
"""


@pytest.fixture
def course_outside_scratch() -> Iterator[Path]:
    """A course where kernels could reach it: not under /tmp, /var/tmp or /dev/shm (each kernel gets
    those fresh and empty), in a world-readable folder, as a course on a shared machine is."""
    claims.root_only("a kernel's own user and mount namespace need root")
    root = Path(tempfile.mkdtemp(prefix="grader-test-course-", dir="/var/lib"))
    try:
        os.chmod(root, 0o755)
        _bare_course(root)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_what_a_grading_writes_while_a_kernel_runs_stays_out_of_its_reach(course_outside_scratch: Path) -> None:
    """The gradebook's rollback journal comes and goes with every write, and the first grading of a
    course makes ``autograded/`` and ``feedback/`` while its first kernels run: no mount made when a
    kernel is forked can cover them. ``close_course`` makes the folders first and takes the other users'
    permissions off the gradebook, which SQLite gives its journal. Without it the kernel reads both."""
    root = course_outside_scratch
    database = root / "gradebook.db"
    sqlite3.connect(database).close()
    os.chmod(database, 0o644)  # as SQLite makes it, under the usual umask
    sandbox.close_course(str(root), str(database))
    assert stat.S_IMODE(database.stat().st_mode) == 0o640
    assert all((root / name).is_dir() for name in sandbox.WRITTEN_WHILE_GRADING)
    journal, autograded = root / "gradebook.db-journal", root / "autograded" / "bo" / "ps1" / "ps1.ipynb"
    with Zygote(root) as zygote, fresh(zygote) as kernel:
        writer = sqlite3.connect(database, isolation_level=None)
        try:
            writer.execute("BEGIN")
            writer.execute("CREATE TABLE grade (score REAL)")
            writer.execute("INSERT INTO grade VALUES (1.0)")
            assert journal.exists()  # the write transaction holds its rollback journal
            autograded.parent.mkdir(parents=True)
            autograded.write_text("HIDDEN TESTS OF ANOTHER STUDENT")
            run = kernel.run(READ_LATER.format(paths=(str(journal), str(autograded))))
        finally:
            writer.execute("COMMIT")
            writer.close()
    assert run.error is None, run.error
    printed = stdout(run)
    assert printed.splitlines() == [f"{journal} PermissionError", f"{autograded} FileNotFoundError"], printed


def test_a_gradebook_in_wal_mode_keeps_its_log_from_kernels(course_outside_scratch: Path) -> None:
    """The service's store puts SQLite in WAL mode: the newest rows live in ``-wal`` while connections are
    open, in files SQLite made with the database's permissions before ``close_course`` ran. The course's
    own gradebook's are covered by name; one elsewhere (``--db-url``) only by its permissions."""
    root = course_outside_scratch
    own, elsewhere = root / "gradebook.db", root / "data" / "grades.db"
    elsewhere.parent.mkdir()
    writers = []
    for database in (own, elsewhere):
        writer = sqlite3.connect(database, isolation_level=None)
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("CREATE TABLE grade (student TEXT)")
        writer.execute("INSERT INTO grade VALUES ('ANOTHER-STUDENTS-ROW')")
        writers.append(writer)  # open: the log stays, and holds the row
        for suffix in sandbox.SQLITE_FILES[:3]:
            os.chmod(f"{database}{suffix}", 0o644)  # as SQLite makes them, under the usual umask
    try:
        sandbox.close_course(str(root), str(elsewhere))
        sandbox.close_course(str(root), str(own))
        modes = {
            f"{d.name}{x}": stat.S_IMODE(os.stat(f"{d}{x}").st_mode) for d in (own, elsewhere) for x in ("", "-wal")
        }
        assert set(modes.values()) == {0o640}, modes
        with Zygote(root) as zygote, fresh(zygote) as kernel:
            run = kernel.run(READ_LATER.format(paths=(f"{own}-wal", f"{elsewhere}-wal", f"{elsewhere}-shm")))
    finally:
        for writer in writers:
            writer.close()
    assert run.error is None, run.error
    printed = stdout(run)
    assert printed.splitlines() == [
        f"{own}-wal READ b''",  # /dev/null, mounted over it
        f"{elsewhere}-wal PermissionError",
        f"{elsewhere}-shm PermissionError",
    ], printed


def test_a_course_the_engine_cannot_close_leaves_no_zygote_behind(tmp_path: Path) -> None:
    claims.root_only("the course is closed only as root")
    root = course.copy_course(tmp_path / "course")
    (root / "autograded").write_text("a file where the folder should be")
    engine = Engine(root)
    with pytest.raises(ConfigurationError, match="cannot keep the course's private files from the kernels"):
        engine.start()
    assert not engine.zygote.alive() and not os.path.exists(engine.zygote.socket_path)


def test_a_relative_sqlite_gradebook_is_in_the_course_root(tmp_path: Path) -> None:
    """Where nbgrader opens it (it works from the course root), whatever the grader's own directory."""
    assert sqlite_file("sqlite:///grades.db", tmp_path) == str(tmp_path / "grades.db")
    assert sqlite_file("sqlite:////srv/grades.db", tmp_path) == "/srv/grades.db"
    assert sqlite_file("sqlite://", tmp_path) is None
    assert sqlite_file("postgresql+psycopg2://grader@db/grades", tmp_path) is None


def test_the_engine_closes_the_course_before_its_first_kernel(tmp_path: Path) -> None:
    claims.root_only("the kernels have users of their own only as root")
    root = course.copy_course(tmp_path / "course")
    database = root / "gradebook.db"
    sqlite3.connect(database).close()
    os.chmod(database, 0o664)
    engine = Engine(root).start()
    try:
        assert stat.S_IMODE(database.stat().st_mode) == 0o660
        assert [name for name in sandbox.WRITTEN_WHILE_GRADING if not (root / name).is_dir()] == []
    finally:
        engine.close()


def test_a_course_that_cannot_be_closed_stops_the_start(tmp_path: Path) -> None:
    """Fail closed: where the folders cannot be made, no kernel is started at all."""
    claims.root_only("the course is closed only as root")
    root = _bare_course(tmp_path / "course")
    (root / "autograded").write_text("a file where the folder should be")
    with pytest.raises(ConfigurationError) as raised:
        sandbox.close_course(str(root), None)
    assert str(raised.value).startswith(
        "cannot keep the course's private files from the kernels ([Errno 17] File exists"
    )
    assert str(raised.value).endswith(
        f"the grader needs to create submitted, autograded, feedback in {root} and to "
        "change the gradebook's permissions"
    )


def test_a_private_file_that_comes_and_goes_never_stops_a_kernel(tmp_path: Path) -> None:
    """A SQLite journal exists for the length of a write: one can vanish between the fork's look at it
    and its mount, which then finds nothing to cover. That is not a sandbox failure (a CI run saw two
    kernels refused for it); its permissions keep it from the kernel, as for any file made after the fork."""
    root = _bare_course(tmp_path / "course")
    journal = root / "gradebook.db-journal"
    stop = threading.Event()

    def churn() -> None:  # as a busy gradebook does, far faster
        while not stop.is_set():
            journal.write_bytes(b"page")
            journal.unlink()

    with Zygote(root) as zygote:
        _needs_hiding(zygote)
        churning = threading.Thread(target=churn)
        churning.start()
        try:
            for _ in range(40):
                with fresh(zygote) as kernel:
                    assert kernel.run("pass").error is None
        finally:
            stop.set()
            churning.join()
