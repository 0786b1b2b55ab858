"""Submitted notebooks nbgrader cannot read: each named with the sentence saying why, and recorded as graded 0.

The student's doing (``faults``): ``grade_one(zero_unreadable=True)`` (``grader autograde``) scores 0 every
grade cell of such a notebook, as nbgrader scores a missing notebook, with the reason in its comments.
"""

from __future__ import annotations

from pathlib import Path

from ... import notebook_errors


def unreadable_notebooks(folder: Path) -> dict[str, str]:
    """Each notebook in the submission ``folder`` that cannot be read, by name, with the sentence saying why."""
    found: dict[str, str] = {}
    for path in sorted(folder.glob("*.ipynb")) if folder.is_dir() else []:
        try:
            why = notebook_errors.problem(path.read_bytes())
        except OSError as error:
            why = f"the file cannot be read ({error.strerror})"
        if why:
            found[path.stem] = why
    return found


def reasons(unreadable: dict[str, str]) -> str:
    return "; ".join(f"{name}.ipynb: {why}" for name, why in sorted(unreadable.items()))


def record_zero(
    db_url: str, course_id: str, assignment: str, student: str, create: bool, unreadable: dict[str, str]
) -> None:
    """Score 0 for every grade cell of the ``unreadable`` notebooks, as nbgrader scores a missing notebook;
    the reason goes in each of their comments, and the notebook is flagged for the formgrader."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url, course_id) as gradebook:
        if create:
            gradebook.update_or_create_student(student)
        submission = gradebook.update_or_create_submission(assignment, student)
        for notebook in submission.notebooks:
            if notebook.name in unreadable:
                for grade in notebook.grades:
                    grade.auto_score = 0.0
                    grade.needs_manual_grade = False
                for comment in notebook.comments:
                    comment.auto_comment = f"Not graded: {notebook.name}.ipynb: {unreadable[notebook.name]}"
                notebook.flagged = True
        gradebook.db.commit()
