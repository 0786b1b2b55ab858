"""Sandboxed execution: grade one submission in a fresh kernel process, within limits.

nbgrader's own autograde pipeline runs in the service's process
(``grader.engine``); each notebook's cells run in a kernel forked from a warm
zygote, under resource limits: address space (memory), file size, no core
dumps, nbgrader's per-cell timeout (``Execute.timeout``) and a whole-notebook
wall-clock limit.  The kernel runs in a private empty directory with a clean
environment, dies with the service (PDEATHSIG), and cannot leave processes
behind (its process group is killed when the notebook is done).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ... import course
from ...engine.bookkeeping import jobsession
from ...engine.bookkeeping.autograde import Status, Stop
from ...engine.engine import Engine
from ...errors import DatabaseUnavailable, GradingFault, InfrastructureError
from ..config import ServiceConfig
from ..records import students
from ..records.models import Execution, Submission
from ..records.store import Store

# One grading at a time per student and assignment: nbgrader keeps one submitted/ and autograded/
# folder and one gradebook submission per student and assignment.  The pipeline holds it from placing
# an attempt until its grade is recorded, so two attempts racing for the same student never read each
# other's notebook or gradebook rows: a thread lock within this process and, on PostgreSQL, an advisory
# lock across the workers on every machine.
_locks: dict[tuple[str, str], threading.RLock] = {}
_locks_guard = threading.Lock()

OUTPUT_LIMIT_BYTES = 2_000_000


@contextmanager
def grading(store: Store, gradebook_url: str, student: str, assignment: str) -> Iterator[Connection | None]:
    """The student lock, and on PostgreSQL the one transaction a job's grade is written in.

    On PostgreSQL this yields a connection in a transaction that holds the advisory lock
    (``pg_advisory_xact_lock``: it ends with the transaction, or with the session if the database
    goes away).  nbgrader's rows (``jobsession.bound``, when the gradebook is in the same database) and
    the service's own are written in it and committed together when the block ends, or rolled back
    together when it raises: a job's grade is recorded whole or not at all, in one commit.  On SQLite,
    whose one writer would wait for the whole notebook, it yields ``None`` and every step commits its
    own rows, as stock nbgrader does.

    The student's gradebook row is inserted first if it is missing (``records.students``): it is the one
    row two jobs of one student on two assignments share, which the advisory lock does not order.
    """
    with _locks_guard:
        local = _locks.setdefault((student, assignment), threading.RLock())
    with local:
        if store.engine.dialect.name != "postgresql":
            yield None
            return
        lock = sa.select(sa.func.pg_advisory_xact_lock(_int32(student), _int32(assignment)))
        with store.engine.connect() as conn, conn.begin():
            if sa.make_url(gradebook_url) != conn.engine.url:
                conn.execute(lock)
                yield conn
                return
            students.insert(conn, [student], after=lock)  # the lock first, in the same statement
            with jobsession.bound(conn):
                yield conn


def _int32(text: str) -> int:
    value = zlib.crc32(text.encode())
    return value - 2**32 if value >= 2**31 else value


def place(config: ServiceConfig, submission: Submission, notebook_name: str, data: bytes) -> Path:
    """Put the attempt where nbgrader looks, with its time stamp (for the late policy)."""
    folder = config.course_root / "submitted" / submission.student / submission.assignment
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    target = folder / f"{notebook_name}.ipynb"
    target.write_bytes(data)
    stamp = folder / "timestamp.txt"
    stamp.write_text(course.timestamp_text(submission.received_at))
    # the files' own times agree with the stamp: ``grader autograde`` warns about stamps that do not
    received = submission.received_at.replace(tzinfo=dt.UTC).timestamp()
    for path in (target, stamp):
        os.utime(path, (received, received))
    return target


def run(config: ServiceConfig, engine: Engine, submission: Submission, notebook_name: str, data: bytes) -> Execution:
    """Autograde one attempt; the autograded notebook is in ``autograded/`` afterwards.

    The caller holds ``grading`` for this student and assignment (the pipeline does, until the
    grade is recorded).
    """
    place(config, submission, notebook_name, data)
    autograded = config.course_root / "autograded" / submission.student / submission.assignment
    shutil.rmtree(autograded, ignore_errors=True)
    outcome = engine.grade(submission.assignment, submission.student)
    log = outcome.log[-OUTPUT_LIMIT_BYTES:]
    notebook = autograded / f"{notebook_name}.ipynb"
    where = f"grading {submission.student}/{submission.assignment}"
    if outcome.status is Status.DATABASE:
        raise DatabaseUnavailable(f"{where}: {outcome.reason}")
    if outcome.status is Status.INFRASTRUCTURE:
        raise InfrastructureError(f"{where}: {outcome.reason}")
    if outcome.status is Status.FAULT:
        raise GradingFault(f"{where}: {outcome.reason}")
    if outcome.status is Status.INCOMPLETE or not notebook.exists():
        return Execution(notebook=notebook if notebook.exists() else None, log=log, problem=_explain(log))
    written = next((g for g in outcome.grades if g.notebook == notebook_name), None)
    return Execution(
        notebook=notebook, log=log, problem=_problem(config, outcome.stopped), completed=True, written=written
    )


def _problem(config: ServiceConfig, stopped: Stop) -> str:
    """A notebook-wide reason to tell the student, when the engine stopped the kernel."""
    if stopped is Stop.NOTEBOOK_TIMEOUT:
        return (
            f"Grading stopped after {config.notebook_timeout_s:g} s, the limit for a whole notebook: "
            "tests that ran before keep their points; the tests after it could not run and score 0."
        )
    if stopped is Stop.KERNEL_DIED:
        return (
            "Your notebook crashed the Python kernel (it used too much memory, or exited): "
            "tests that ran before the crash keep their points; the tests after it could not run and score 0."
        )
    if stopped is Stop.NOT_RUN:
        return (
            "A cell ran past its time limit and did not stop when interrupted, so its kernel was stopped: "
            "tests that ran before keep their points; the tests after it could not run and score 0."
        )
    return ""


def _explain(log: str) -> str:
    if "MemoryError" in log:
        return "Your notebook ran out of memory; tests that could not run score 0."
    return "Your notebook could not be graded to the end; tests that could not run score 0."
