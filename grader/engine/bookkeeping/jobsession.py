"""A worker's job in one transaction: every nbgrader ``Gradebook`` of the job on one session (``bound``).

On PostgreSQL, when the gradebook is in the service's database, a worker writes a job's grade in one
transaction, nbgrader's rows and its own (``grading.execution.grading``).  Inside ``bound(connection)``
every ``Gradebook`` shares one session on that connection, whose ``commit()`` flushes and expires as
nbgrader expects but leaves the transaction to the caller, who commits it once with the grade, or
rolls everything back.

A commit there expires what the students' rows hold, as nbgrader expects (its late-penalty step
reads a notebook's score, a SQL expression over the grades just written), but not the instructor's
rows, which grading only reads (``kept``).  So nbgrader's repeated ``find_assignment`` and
``find_notebook`` (twice and three times per grading) are answered, after the first, by the
session's own object, held for the session and found by its key (``Session.get``), which is the
object nbgrader's query returns too: no statement (``by_key``; ``inprocess`` installs it).  The job
reads the assignment and its notebooks into the session first, in one query (``notebooks_of``), so
that even the first costs none; the same query loads the student's row and their submission (or notes
that there is none yet), which answers nbgrader's ``find_student`` and first ``find_submission``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

from .shared_session import ABSENT, _bound, absent, added_submission, by_key, current

__all__ = ["absent", "added_submission", "bound", "by_key", "current", "kept", "notebooks_of"]

# nbgrader's models whose rows grading only reads: the instructor's, and the student's own row (a job makes sure it
# exists, ``students.insert``; nbgrader's ``update_or_create_student`` without attributes writes nothing)
READ_ONLY = ("Course", "Assignment", "Notebook", "BaseCell", "SourceCell", "Student")


@contextlib.contextmanager
def bound(connection: Any) -> Iterator[None]:
    """Every nbgrader ``Gradebook`` opened in this context (this thread) uses one session on ``connection``.

    ``connection`` is in a transaction the caller owns: nbgrader's ``commit()`` flushes its rows and
    expires its objects (the instructor's rows apart: ``kept``) without ending that transaction; its
    ``rollback()`` (after an integrity error) rolls the whole transaction back, so that nothing
    half-written is committed.  A gradebook opened on another URL than ``connection``'s gets a session
    of its own, as outside.
    """
    from sqlalchemy import event
    from sqlalchemy.orm import Session

    from .inprocess import apply

    apply()
    session = Session(bind=connection, autoflush=True, join_transaction_mode="rollback_only", expire_on_commit=False)
    event.listen(session, "after_commit", _expire_on_commit)
    token = _bound.set((connection.engine.url, session, {}))  # {(model, *names): (its object, its id)}
    try:
        yield
    finally:
        _bound.reset(token)
        session.close()


@functools.cache
def kept() -> dict[type, tuple[str, ...]]:
    """The rows a commit in ``bound`` leaves loaded: each class (the course, assignments, notebooks, cells, the
    student), with the attributes of it that students' submissions make (its submissions, their count, scores,
    whether one needs manual grading), which a commit expires as usual.  Grading writes none of these rows."""
    from nbgrader import api
    from sqlalchemy import Table, inspect
    from sqlalchemy.sql.util import find_tables

    mappers = [m for model in READ_ONLY for m in inspect(getattr(api, model)).self_and_descendants]
    tables = {t for m in mappers for t in m.tables}
    classes = tuple(m.class_ for m in mappers)
    found: dict[type, tuple[str, ...]] = {}
    for mapper in mappers:
        related = [r.key for r in mapper.relationships if not issubclass(r.mapper.class_, classes)]
        computed = [
            p.key
            for p in mapper.column_attrs
            if any(isinstance(t, Table) and t not in tables for c in p.columns for t in find_tables(c))
        ]
        found[mapper.class_] = (*related, *computed)
    return found


def _expire_on_commit(session: Any) -> None:
    """What a commit expires in ``bound``: every object, as SQLAlchemy's ``expire_on_commit`` does, except the
    rows grading only reads (``kept``: the instructor's and the student's), of which only what submissions make."""
    read_only = kept()
    for obj in list(session.identity_map.values()):
        names = read_only.get(type(obj))
        if names is None:
            session.expire(obj)
        elif names:
            session.expire(obj, names)


def notebooks_of(assignment: str, student: str | None = None) -> list[str]:
    """Inside ``bound``: the names of ``assignment``'s notebooks in nbgrader's order (``Assignment.notebooks``,
    by name), the assignment's row and theirs loaded into the session in one query, as nbgrader's
    ``find_assignment``, ``find_notebook`` and ``Assignment.notebooks`` load them, so that those later cost no
    statement.  With ``student``, the same query loads the student's row and their submission of the
    assignment, or notes that there is none, for nbgrader's ``find_student`` and first ``find_submission``
    (``by_key``, ``absent``).  Empty when the gradebook has no such assignment, or outside ``bound`` (nothing
    is read)."""
    from nbgrader import api
    from sqlalchemy import and_
    from sqlalchemy.orm import joinedload

    shared = _bound.get()
    if shared is None:
        return []
    session, held = shared[1], shared[2]
    loaded = joinedload(api.Assignment.notebooks)
    if student is None:
        one = session.query(api.Assignment).options(loaded).filter(api.Assignment.name == assignment).one_or_none()
        rows = [] if one is None else [(one, None, None)]
    else:
        submitted = api.SubmittedAssignment
        rows = (
            session.query(api.Assignment, api.Student, submitted)
            .select_from(api.Assignment)
            .outerjoin(api.Student, api.Student.id == student)
            .outerjoin(
                submitted, and_(submitted.assignment_id == api.Assignment.id, submitted.student_id == api.Student.id)
            )
            .options(loaded)
            .filter(api.Assignment.name == assignment)
            .all()
        )
    if not rows:
        return []
    found, person, submission = rows[0]
    held[(api.Assignment, assignment)] = (found, found.id)
    for notebook in found.notebooks:
        held[(api.Notebook, notebook.name, assignment)] = (notebook, notebook.id)
    if person is not None:
        held[(api.Student, student)] = (person, person.id)
        key = (api.SubmittedAssignment, assignment, student)
        held[key] = ABSENT if submission is None else (submission, submission.id)
    return [notebook.name for notebook in found.notebooks]
