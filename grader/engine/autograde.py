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
import gc
import io
import logging
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from .. import course
from ..errors import ConfigurationError
from . import bulk, inprocess
from .kernel import Zygote
from .preprocessor import KERNEL_DIED, NOT_RUN, NOTEBOOK_TIMEOUT, bookkeeping, report

EXECUTE_STEPS = (
    "Execute",
    "nbgrader.preprocessors.Execute",
    "nbgrader.preprocessors.execute.Execute",
    "grader.isolation.PrivateExecute",
)
FORK_EXECUTE = "grader.engine.preprocessor.ForkExecute"
CHECK_METADATA = (
    "nbgrader.preprocessors.CheckCellMetadata",
    "nbgrader.preprocessors.checkcellmetadata.CheckCellMetadata",
)


class Status(enum.Enum):
    """How one autograding ended."""

    COMPLETED = "completed"  # nbgrader wrote the gradebook rows and the autograded notebook
    INCOMPLETE = "incomplete"  # nbgrader gave up on this notebook (its log says why): the submission's doing
    INFRASTRUCTURE = "infrastructure"  # the grader itself failed (zygote, fork, sandbox): worth retrying
    DATABASE = "database"  # the gradebook database failed: wait for it, then grade again


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
    reason: str = ""  # for INFRASTRUCTURE and DATABASE: what failed
    stopped: Stop = Stop.NONE

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
) -> Config:
    """The course's ``nbgrader_config.py`` with its Execute step replaced by ``ForkExecute``."""
    inprocess.apply()
    previous = os.environ.get("GRADER_COURSE_ROOT")
    os.environ["GRADER_COURSE_ROOT"] = str(root)
    try:
        config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    finally:
        if previous is None:
            os.environ.pop("GRADER_COURSE_ROOT", None)
        else:
            os.environ["GRADER_COURSE_ROOT"] = previous
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = course.gradebook_url(root, db_url)
    steps = _steps(config, "autograde_preprocessors")
    if not any(s in EXECUTE_STEPS or s.endswith(".Execute") for s in steps):
        raise ConfigurationError(
            "nbgrader_config.py: Autograde.autograde_preprocessors has no Execute step for the engine to replace; "
            "keep nbgrader's Execute (or grader.isolation.PrivateExecute) in the list"
        )
    sanitize = _steps(config, "sanitize_preprocessors")
    config.Autograde.sanitize_preprocessors = [bulk.REPLACES.get(s, s) for s in sanitize]
    # The autograde pass reads the notebook the sanitize pass has just written and checked; no step
    # in between touches nbgrader's cell metadata, so checking it a second time cannot fail.
    checked = any(s in CHECK_METADATA for s in sanitize)
    config.Autograde.autograde_preprocessors = [
        FORK_EXECUTE if s in EXECUTE_STEPS or s.endswith(".Execute") else bulk.REPLACES.get(s, s)
        for s in steps
        if not (checked and s in CHECK_METADATA)
    ]
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


def grade_one(config: Config, assignment: str, student: str, force: bool = True, create: bool = True) -> Outcome:
    """``nbgrader autograde ASSIGNMENT --student STUDENT [--force] [--create]``, in this process."""
    import time

    from nbgrader.converters import Autograde
    from nbgrader.coursedir import CourseDirectory

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
    report.reset()
    try:
        with bookkeeping():
            coursedir = CourseDirectory(config=config, log=log)
            coursedir.assignment_id = assignment
            coursedir.student_id = student
            app = Autograde(coursedir=coursedir, config=config, log=log)
            app.force = force
            app.create_student = create
            try:
                app.start()
            except Exception as error:
                ok = False
                database = _database_error(error)
                log.exception("autograding %s/%s failed", student, assignment)
    finally:
        log.removeHandler(handler)
    if ok and not _settled.is_set():
        _settled.set()
        settle()
    seconds = time.monotonic() - started
    if database is not None:
        status, reason = Status.DATABASE, f"the gradebook database failed: {type(database).__name__}: {database}"
    elif report.failures:
        status, reason = Status.INFRASTRUCTURE, "; ".join(report.failures)
    else:
        status, reason = (Status.COMPLETED if ok else Status.INCOMPLETE), ""
    return Outcome(student, assignment, status, buffer.getvalue(), seconds, reason, Stop(report.stopped))


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


def submitted_students(root: Path, assignment: str) -> list[str]:
    """Students with a submission of ``assignment`` under ``submitted/``, sorted."""
    folder = root / "submitted"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / assignment).is_dir())


def grade_many(
    config: Config,
    assignment: str,
    students: Iterable[str],
    jobs: int = 1,
    force: bool = True,
    create: bool = True,
    progress: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Autograde each student's submission, ``jobs`` kernels at a time; outcomes in completion order."""
    outcomes: list[Outcome] = []
    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="autograde") as pool:
        futures = [pool.submit(grade_one, config, assignment, s, force, create) for s in students]
        for future in as_completed(futures):
            outcome = future.result()
            outcomes.append(outcome)
            if progress is not None:
                progress(outcome)
    return outcomes
