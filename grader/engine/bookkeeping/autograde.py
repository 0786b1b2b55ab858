"""nbgrader's own ``Autograde`` converter, run in this process with ``ForkExecute`` as its Execute step.

``nbgrader autograde`` pays ~3 s of start-up per command and a fresh kernel
(plus ``import torch``) per notebook.  Here the converter is built from the
course's ``nbgrader_config.py`` once per grading and runs in-process; the only
preprocessor replaced is the one that executes the notebook.  Gradebook rows,
late penalties and the autograded notebooks are therefore written by the
same nbgrader code as the stock command writes them.
"""

from __future__ import annotations

import enum
import fcntl
import gc
import hashlib
import io
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from traitlets.config import Config

from ... import course
from ...errors import ConfigurationError
from ...plugins import names, output_limit
from ..kernels import early
from ..kernels.kernel import Zygote
from . import bulk, faults, inprocess, jobsession, rows, undo
from .preprocessor import KERNEL_DIED, NOT_RUN, NOTEBOOK_TIMEOUT, bookkeeping, report
from .unreadable import reasons, record_zero, unreadable_notebooks

EXECUTE_STEPS = (
    "Execute",
    "nbgrader.preprocessors.Execute",
    "nbgrader.preprocessors.execute.Execute",
    "grader.plugins.isolation.PrivateExecute",
)
FORK_EXECUTE = "grader.engine.bookkeeping.preprocessor.ForkExecute"
CHECK_METADATA = (
    "nbgrader.preprocessors.CheckCellMetadata",
    "nbgrader.preprocessors.checkcellmetadata.CheckCellMetadata",
)


class Status(enum.Enum):
    """How one autograding ended."""

    COMPLETED = "completed"  # nbgrader wrote the gradebook rows and the autograded notebook
    INCOMPLETE = "incomplete"  # nbgrader refused the notebook (unreadable, corrupted metadata): the submission's doing
    INFRASTRUCTURE = "infrastructure"  # the grader itself failed (zygote, fork, sandbox, a full disk): worth retrying
    DATABASE = "database"  # the gradebook database failed: wait for it, then grade again
    FAULT = "fault"  # a step of ours raised (nbgrader's bookkeeping, the late policy, a plug-in): never a score


class Stop(enum.StrEnum):
    """Why later cells of a completed notebook could not run (the ``ename`` the engine gave their outputs)."""

    NONE = ""
    NOTEBOOK_TIMEOUT = NOTEBOOK_TIMEOUT
    KERNEL_DIED = KERNEL_DIED
    NOT_RUN = NOT_RUN


@dataclass(frozen=True)
class Outcome:
    """One student's autograding: how it ended, why, and nbgrader's log."""

    student: str
    assignment: str
    status: Status
    log: str
    seconds: float
    reason: str = ""  # for INFRASTRUCTURE, DATABASE and FAULT: what failed; for INCOMPLETE: why
    stopped: Stop = Stop.NONE
    zeroed: bool = False  # INCOMPLETE, its notebook unreadable: recorded in the gradebook as 0 (``reason`` says why)
    grades: tuple[rows.NotebookGrades, ...] = ()  # COMPLETED: the rows nbgrader wrote, per notebook (``rows``)

    @property
    def ok(self) -> bool:
        return self.status is Status.COMPLETED


def load_config(
    root: Path,
    db_url: str | None,
    zygote: Zygote,
    notebook_timeout_s: float = 0.0,
    memory_limit_bytes: int = 0,
    resident_limit_bytes: int = 0,
    loaded: Config | None = None,
) -> Config:
    """The course's ``nbgrader_config.py`` (``loaded``: as ``course.read_config`` just read it, which this changes)
    with its Execute step replaced by ``ForkExecute``, followed by ``grader.plugins.output_limit.KeepStderr``
    (truncating output never changes a verdict)."""
    inprocess.apply()
    config: Config = course.read_config(root) if loaded is None else loaded
    names.check(config)  # a plug-in that does not import fails the start, not each grading
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = course.gradebook_url(root, db_url)
    steps = _steps(config, "autograde_preprocessors")
    if not any(s in EXECUTE_STEPS or s.endswith(".Execute") for s in steps):
        raise ConfigurationError(
            "nbgrader_config.py: Autograde.autograde_preprocessors has no Execute step for the engine to replace; "
            "keep nbgrader's Execute (or grader.plugins.isolation.PrivateExecute) in the list"
        )
    sanitize = _steps(config, "sanitize_preprocessors")
    config.Autograde.sanitize_preprocessors = [bulk.REPLACES.get(s, s) for s in sanitize]
    # The autograde pass reads the notebook the sanitize pass has just written and checked; no step
    # in between touches nbgrader's cell metadata, so checking it a second time cannot fail.
    checked = any(s in CHECK_METADATA for s in sanitize)
    autograde = [
        FORK_EXECUTE if s in EXECUTE_STEPS or s.endswith(".Execute") else bulk.REPLACES.get(s, s)
        for s in steps
        if not (checked and s in CHECK_METADATA)
    ]
    if output_limit.STEP not in autograde:  # a course's own list without it: the defence still holds
        autograde.insert(autograde.index(FORK_EXECUTE) + 1, output_limit.STEP)
    config.Autograde.autograde_preprocessors = autograde
    # nbconvert validates the notebook after each preprocessor; once, after all of them, suffices
    # (when that fails it still finds the preprocessor at fault).
    config.NotebookExporter.optimistic_validation = True
    config.ForkExecute.zygote_socket = zygote.socket_path
    config.ForkExecute.notebook_timeout = float(notebook_timeout_s)
    config.ForkExecute.memory_limit = int(memory_limit_bytes)
    config.ForkExecute.resident_limit = int(resident_limit_bytes)
    return config


def _steps(config: Config, trait: str) -> list[str]:
    """The dotted names of ``Autograde.<trait>``: the course's list, else nbgrader's default."""
    if trait in config.Autograde:
        steps = list(config.Autograde[trait])
    else:
        from nbgrader.converters import Autograde

        steps = list(Autograde.class_traits()[trait].default())
    return [s if isinstance(s, str) else f"{s.__module__}.{s.__qualname__}" for s in steps]


def warm_up() -> None:
    """Import what the first grading would import (about a second), while the zygote warms up."""
    import nbconvert.exporters
    import nbconvert.preprocessors  # noqa: F401
    import nbgrader.converters
    import nbgrader.preprocessors  # noqa: F401

    settle()


_settled = threading.Event()


def settle() -> None:
    """Take what the process holds so far out of the cyclic garbage collector's reach (``gc.freeze``).

    The grading process keeps some 250,000 long-lived objects (nbgrader, nbconvert, SQLAlchemy and
    their caches); every full collection walked them all, about 5% of the engine's CPU time. Called
    after the imports and once more after the first grading, which fills the caches.
    """
    gc.collect()
    gc.freeze()


def grade_one(
    config: Config,
    assignment: str,
    student: str,
    force: bool = True,
    create: bool = True,
    zero_unreadable: bool = False,
) -> Outcome:
    """``nbgrader autograde ASSIGNMENT --student STUDENT [--force] [--create]``, in this process.

    Gradings of one student take turns, in this process and in any other on the course
    (``student_lock``).  With ``zero_unreadable``, a notebook nbgrader could not read is recorded
    in the gradebook as 0, and the outcome says why (``Outcome.zeroed``, ``Outcome.reason``).
    """
    with student_lock(_autograded_directory(config), student):
        return _grade_one(config, assignment, student, force, create, zero_unreadable)


def _grade_one(
    config: Config, assignment: str, student: str, force: bool, create: bool, zero_unreadable: bool
) -> Outcome:
    import time

    from nbgrader.coursedir import CourseDirectory

    from .onepass import OnePassAutograde

    started = time.monotonic()
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
    log = logging.getLogger(f"grader.autograde.{threading.get_ident()}")
    log.propagate = False
    log.setLevel(logging.INFO)
    log.addHandler(handler)
    ok = True
    database: BaseException | None = None
    unreadable: dict[str, str] = {}
    zeroed = False
    report.reset()
    faults.noted.reset()
    rows.noted.reset()
    try:
        with early.forked_early(config), bookkeeping():
            coursedir = CourseDirectory(config=config, log=log)
            coursedir.assignment_id = assignment
            coursedir.student_id = student
            app = OnePassAutograde(coursedir=coursedir, config=config, log=log)
            app.force = force
            app.create_student = create
            before = None
            try:
                if jobsession.current() is None:  # in a service job's transaction, a fault rolls back whole
                    before = undo.snapshot(coursedir.db_url, coursedir.course_id, assignment, student)
                app.start()
            except Exception as error:
                ok = False
                database = _database_error(error)
                log.exception("autograding %s/%s failed", student, assignment)
                if database is None and _ours() and before is not None:
                    try:
                        undo.restore(coursedir.db_url, coursedir.course_id, before)
                    except Exception as undoing:
                        database = _database_error(undoing)
                        log.exception("putting back %s/%s's gradebook rows failed", student, assignment)
        if not ok and database is None and not report.failures and not faults.noted.faults and zero_unreadable:
            unreadable = unreadable_notebooks(
                Path(coursedir.format_path(coursedir.submitted_directory, student, assignment))
            )
            if unreadable:
                try:
                    record_zero(coursedir.db_url, coursedir.course_id, assignment, student, create, unreadable)
                except Exception as error:
                    database = _database_error(error)
                    log.exception("recording %s/%s as graded 0 failed", student, assignment)
                else:
                    zeroed = True
                    log.error("%s/%s is recorded as graded 0: %s", student, assignment, reasons(unreadable))
    finally:
        log.removeHandler(handler)
    if ok and not _settled.is_set():
        _settled.set()
        settle()
    seconds = time.monotonic() - started
    if database is not None:
        status, reason = Status.DATABASE, f"the gradebook database failed: {type(database).__name__}: {database}"
    elif report.failures or faults.noted.retryable:
        status, reason = Status.INFRASTRUCTURE, "; ".join(report.failures or faults.noted.retryable)
    elif ok:
        status, reason = Status.COMPLETED, ""
    elif unreadable:
        status, reason = Status.INCOMPLETE, reasons(unreadable)
    elif faults.noted.refused and not faults.noted.faults:
        status, reason = Status.INCOMPLETE, "; ".join(faults.noted.refused)
    else:
        status, reason = Status.FAULT, _fault(buffer.getvalue())
    written = rows.noted.complete() if status is Status.COMPLETED else ()
    rows.noted.reset()  # the notebooks are the caller's now; the thread keeps no reference to them
    return Outcome(
        student, assignment, status, buffer.getvalue(), seconds, reason, Stop(report.stopped), zeroed, written
    )


def _ours() -> bool:
    """Whether the grading that raised ``error`` failed by a fault of ours (its rows are then put back)."""
    return not (faults.noted.refused and not faults.noted.faults) or bool(report.failures)


def _fault(log: str) -> str:
    """What failed, for staff: the steps of ours that raised, else nbgrader's last error."""
    if faults.noted.faults:
        return "; ".join(dict.fromkeys(faults.noted.faults))
    errors = [line for line in log.splitlines() if line.startswith("[ERROR]")]
    return f"nbgrader's autograde failed outside the student's cells: {errors[-1] if errors else 'see the log'}"


LOCKS = ".locks"  # under autograded/: one lock file per student, named by a hash of the student's id


def _autograded_directory(config: Config) -> Path:
    settings = config.CourseDirectory
    return Path(settings.get("root", ".")) / str(settings.get("autograded_directory", "autograded"))


@contextmanager
def student_lock(autograded: Path, student: str) -> Iterator[None]:
    """Hold ``student``'s lock (``flock`` on a file in ``autograded/.locks``) while the body runs.

    ``flock`` locks belong to the open file, so two threads of one process wait for each other as
    two processes do; the kernel lets go of it when the holder exits, however it exits.
    """
    folder = autograded / LOCKS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(student.encode()).hexdigest()[:32]}.lock"
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _database_error(error: BaseException) -> BaseException | None:
    """The database error behind ``error``, if one is: nbgrader catches SQLAlchemy's and raises its own
    ``NbGraderException`` while handling it, so the cause is in the exception's context chain."""
    import sqlalchemy.exc

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, (sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError)):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def grade_many(
    config: Config,
    assignment: str,
    students: Iterable[str],
    jobs: int = 1,
    force: bool = True,
    create: bool = True,
    progress: Callable[[Outcome], None] | None = None,
    zero_unreadable: bool = False,
    stop: threading.Event | None = None,
) -> list[Outcome]:
    """Autograde each student's submission, ``jobs`` kernels at a time; outcomes in completion order.
    Once ``stop`` is set, submissions not yet started are left ungraded (no outcome).

    nbgrader's converter changes the process's working directory to the course root and back around each
    notebook; two at once can leave it in the course root (one saves the other's change). It is put back as
    it was, so a caller grading a temporary course copy is not left in a directory that is then removed."""
    outcomes: list[Outcome] = []
    cwd = os.getcwd()
    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="autograde") as pool:
            futures = [
                pool.submit(_unless, stop, config, assignment, s, force, create, zero_unreadable) for s in students
            ]
            for future in as_completed(futures):
                outcome = future.result()
                if outcome is None:
                    continue
                outcomes.append(outcome)
                if progress is not None:
                    progress(outcome)
    finally:
        os.chdir(cwd)
    return outcomes


def _unless(
    stop: threading.Event | None,
    config: Config,
    assignment: str,
    student: str,
    force: bool,
    create: bool,
    zero_unreadable: bool,
) -> Outcome | None:
    """``grade_one``, unless ``stop`` was set before this submission's turn came."""
    if stop is not None and stop.is_set():
        return None
    return grade_one(config, assignment, student, force, create, zero_unreadable)
