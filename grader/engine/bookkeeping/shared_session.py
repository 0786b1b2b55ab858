"""The job's one gradebook session, as nbgrader's patched ``Gradebook`` sees it (``inprocess``).

``jobsession.bound`` opens the session and sets it here for its thread; ``inprocess``'s gradebook reads it
(``current``) and answers nbgrader's repeated look-ups from it (``by_key``, ``absent``, ``added_submission``).
This module holds only that shared state and those look-ups, so that ``inprocess`` (below) and
``jobsession`` (above, which installs ``inprocess``) do not import each other.
"""

from __future__ import annotations

import contextvars
from typing import Any

# (the connection's URL, the session, {(model, *names): (its object, its id)}) while ``jobsession.bound`` runs
_bound: contextvars.ContextVar[Any] = contextvars.ContextVar("grader_gradebook_session", default=None)
ABSENT = ("absent", None)  # held for a row ``jobsession.notebooks_of`` found missing (``absent``)


def current() -> Any:
    """``(URL, session, held objects)`` inside ``bound`` (this thread), else ``None``."""
    return _bound.get()


def added_submission(db: Any, values: dict[str, Any]) -> Any | None:
    """Inside ``bound`` (``db`` is its session): the submitted assignment just inserted with ``values`` (its
    columns as written, the others their defaults), as the session's object without reading it back
    (``make_transient_to_detached``); its assignment and student are the session's own objects (``kept``), and
    what it computes from other rows is read when asked for.  ``None`` outside ``bound``: the caller reads it."""
    from nbgrader import api
    from sqlalchemy.orm import make_transient_to_detached

    shared = _bound.get()
    if shared is None or db is not shared[1]:
        return None
    columns = dict(values)
    for column in api.SubmittedAssignment.__table__.columns:  # what the INSERT left to the columns' defaults
        if column.key not in columns and column.server_default is None:
            if column.default is None:
                columns[column.key] = None
            elif column.default.is_scalar:
                columns[column.key] = column.default.arg
    submission = api.SubmittedAssignment(**columns)
    make_transient_to_detached(submission)
    db.add(submission)
    return submission


def absent(gradebook: Any, model: Any, *names: str) -> bool:
    """Inside ``bound``, asked once: whether ``notebooks_of`` found no row of ``model`` for ``names`` (the student's
    submission of the assignment), so that nbgrader's first ``find_submission`` raises its ``MissingEntry``
    without a statement.  Once asked, the note is gone: the row may be added next (``add_submission``), and a
    later lookup asks the database."""
    shared = _bound.get()
    if shared is None or gradebook.db is not shared[1]:
        return False
    key = (model, *names)
    if shared[2].get(key) is not ABSENT:
        return False
    del shared[2][key]
    return True


def by_key(gradebook: Any, model: Any, original: Any, *names: str) -> Any:
    """nbgrader's ``find_assignment`` or ``find_notebook`` (``original``) of ``names``; inside ``bound``, asked again,
    the session's own object found by its key (``Session.get``), which is the object nbgrader's query returns too:
    no statement, since the bound session's commits leave the instructor's rows loaded (``kept``)."""
    shared = _bound.get()
    if shared is None or gradebook.db is not shared[1]:
        return original(gradebook, *names)
    known = shared[2].get((model, *names))
    found = gradebook.db.get(model, known[1]) if known is not None and known is not ABSENT else None
    if found is None:  # the first time (or the row is gone): nbgrader's query, and its MissingEntry
        found = original(gradebook, *names)
        # held here: the session's identity map holds its objects only while someone else does
        shared[2][(model, *names)] = (found, found.id)
    return found
