"""Whose doing a failed autograding was: the student's notebook, or one of the grader's own steps.

nbgrader's converter catches whatever a step raises, logs it and gives up on the submission with one
``NbGraderException`` for all of them, so the cause is gone by the time ``grade_one`` sees it.  The
steps the engine runs are therefore wrapped (``OnePassAutograde``): each one that raises is noted here,
with its name, before nbgrader swallows the exception.

The rule, in one place (``attributed``): only two things a student controls can stop nbgrader on a
notebook, and both are final (scored 0 with the reason):

- the notebook cannot be read (not JSON, not a notebook: ``read``);
- its nbgrader metadata is corrupted, so that the sanitize pass refuses it (nbgrader's own
  ``ValidationError``, or nbformat's at the end of that pass).

Everything else that raises (nbgrader's bookkeeping in the gradebook, the late policy, a plug-in such
as variants or mending, writing ``autograded/``) is a **fault of ours**: never a score.  ``grade_one``
reports it as ``Status.FAULT`` (``Status.INFRASTRUCTURE`` where a retry can help: ``OSError``) and puts
the gradebook rows back as they were (``undo``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Noted(threading.local):
    """What went wrong in this thread's current grading, by whose doing."""

    def __init__(self) -> None:
        self.faults: list[str] = []  # the grader's steps that raised: not the student's doing
        self.retryable: list[str] = []  # of those, the ones a retry can help (a full disk, a lost mount)
        self.refused: list[str] = []  # the student's notebook, refused: final

    def reset(self) -> None:
        self.faults, self.retryable, self.refused = [], [], []


noted = _Noted()


def describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def _students_doing(error: BaseException, sanitizing: bool) -> bool:
    """Whether ``error``, raised by a step of the sanitize pass or at its end, is the student's notebook's doing."""
    from nbformat import ValidationError as NotebookInvalid
    from nbgrader.nbgraderformat import ValidationError as MetadataInvalid

    return sanitizing and isinstance(error, (MetadataInvalid, NotebookInvalid))


@contextmanager
def attributed(step: str, sanitizing: bool = False) -> Iterator[None]:
    """Run ``step``; if it raises, note whose doing it was (``_students_doing``), then let it propagate."""
    try:
        yield
    except Exception as error:
        what = f"{step} raised {describe(error)}"
        if _students_doing(error, sanitizing):
            noted.refused.append(what)
        else:
            noted.faults.append(what)
            if isinstance(error, OSError):
                noted.retryable.append(what)
        raise


@contextmanager
def reading() -> Iterator[None]:
    """Reading the submitted notebook: whatever fails there is the notebook's doing."""
    try:
        yield
    except Exception as error:
        if isinstance(error, OSError):
            noted.faults.append(f"reading the submitted notebook raised {describe(error)}")
            noted.retryable.append(noted.faults[-1])
        else:
            noted.refused.append(f"the notebook cannot be read: {describe(error)}")
        raise
