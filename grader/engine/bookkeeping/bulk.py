"""nbgrader's two gradebook-heavy preprocessors, with their lookups done in bulk.

Stock ``OverwriteCells`` asks the gradebook for the instructor's version of
every nbgrader cell one query at a time, and ``SaveAutoGrades`` finds each
grade and comment with a six-table join and commits after each one: some 60
queries and 30 commits per notebook, the largest part of the engine's
bookkeeping.  These subclasses run nbgrader's own code unchanged (its
``preprocess_cell``, ``_add_score``, ``_add_comment``, missing-cell handling)
against a view of the gradebook that answers those lookups from a few queries
made up front, and commits once at the end.  The rows they write are the
same; the engine's tests compare every fixture's gradebook with stock
``nbgrader autograde``'s.  ``RecordedLatePenalties`` is nbgrader's
``AssignLatePenalties`` as it is; with ``BulkSaveAutoGrades`` it notes what was
written (``rows``), so that the caller need not read it back.  The instructor's grade cells are read
once per grading: ``BulkOverwriteCells`` notes them (``rows.noted.instructor``) for ``BulkSaveAutoGrades``.
A student's grades and comments are read by one query each, joined to the submitted notebook as nbgrader's
``find_submission_notebook`` finds it.
"""

from __future__ import annotations

from typing import Any

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.api import (
    Assignment,
    BaseCell,
    Comment,
    Grade,
    Gradebook,
    GradeCell,
    MissingEntry,
    Notebook,
    Student,
    SubmittedAssignment,
    SubmittedNotebook,
    TaskCell,
)
from nbgrader.preprocessors import AssignLatePenalties, OverwriteCells, SaveAutoGrades
from sqlalchemy.orm import with_polymorphic

from . import rows

REPLACES = {
    "nbgrader.preprocessors.OverwriteCells": "grader.engine.bookkeeping.bulk.BulkOverwriteCells",
    "nbgrader.preprocessors.overwritecells.OverwriteCells": "grader.engine.bookkeeping.bulk.BulkOverwriteCells",
    "nbgrader.preprocessors.SaveAutoGrades": "grader.engine.bookkeeping.bulk.BulkSaveAutoGrades",
    "nbgrader.preprocessors.saveautogrades.SaveAutoGrades": "grader.engine.bookkeeping.bulk.BulkSaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties": "grader.engine.bookkeeping.bulk.RecordedLatePenalties",
    "nbgrader.preprocessors.latesubmissions.AssignLatePenalties": (
        "grader.engine.bookkeeping.bulk.RecordedLatePenalties"
    ),
}


class _DeferredCommits:
    """``gradebook.db`` for nbgrader's code: ``commit()`` waits for the end of the preprocessor."""

    def __init__(self, session: Any) -> None:
        self._session = session

    def commit(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


class _Prefetched:
    """A Gradebook whose per-cell ``find_*`` answers come from dictionaries filled by a few queries."""

    def __init__(self, gradebook: Gradebook) -> None:
        self._gradebook = gradebook
        self.db = _DeferredCommits(gradebook.db)
        self._source: dict[tuple[str, str, str], Any] = {}  # (cell, notebook, assignment)
        self._graded: dict[tuple[str, str, str], Any] = {}
        self._grades: dict[tuple[str, str, str, str], Any] = {}  # (cell, notebook, assignment, student)
        self._comments: dict[tuple[str, str, str, str], Any] = {}
        self._notebooks: dict[tuple[str, str], Any] = {}  # find_notebook's answers (None: missing)
        self._loaded: set[tuple[str, str]] = set()
        self._cells: dict[tuple[str, str], list[Any]] = {}
        self._submissions: set[tuple[str, str, str]] = set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._gradebook, name)

    # instructor's cells: one query for the notebook, one for its source cells, one for its graded cells
    def _notebook(self, notebook: str, assignment: str) -> Any | None:
        key = (notebook, assignment)
        if key not in self._notebooks:
            try:
                self._notebooks[key] = self._gradebook.find_notebook(notebook, assignment)
            except MissingEntry:
                self._notebooks[key] = None
        return self._notebooks[key]

    def _load_notebook(self, notebook: str, assignment: str) -> None:
        if (notebook, assignment) in self._loaded:
            return
        self._loaded.add((notebook, assignment))
        found = self._notebook(notebook, assignment)
        if found is None:
            return
        for cell in found.source_cells:
            self._source[(cell.name, notebook, assignment)] = cell
        graded = self.graded_cells(notebook, assignment)
        # find_graded_cell looks for a grade cell first, then a task cell of that name
        for cell in [c for c in graded if isinstance(c, TaskCell)] + [c for c in graded if isinstance(c, GradeCell)]:
            self._graded[(cell.name, notebook, assignment)] = cell

    def find_notebook(self, name: str, assignment: str) -> Any:
        """nbgrader's, asked once: ``OverwriteCells.add_missing_*`` each ask again for the notebook just read
        (the same object of the same session, as nbgrader's query returns it from the identity map)."""
        found = self._notebook(name, assignment)
        return self._gradebook.find_notebook(name, assignment) if found is None else found  # missing: its error

    def graded_cells(self, notebook: str, assignment: str) -> list[Any]:
        """The notebook's grade and task cells with their own columns, in one query (loading them through
        ``Notebook.grade_cells`` costs one more query per cell, for ``max_score``), in the gradebook's order."""
        key = (notebook, assignment)
        if key not in self._cells:
            found = self._notebook(notebook, assignment)
            if found is None:
                self._cells[key] = []
            else:
                cells = with_polymorphic(BaseCell, [GradeCell, TaskCell])
                query = self._gradebook.db.query(cells).filter(cells.notebook_id == found.id)
                self._cells[key] = [c for c in query.all() if isinstance(c, (GradeCell, TaskCell))]
        return self._cells[key]

    def graded_cells_read(self, notebook: str, assignment: str) -> list[Any] | None:
        """``graded_cells``' answer if a lookup has read it already, else ``None`` (no query)."""
        return self._cells.get((notebook, assignment))

    def find_source_cell(self, name: str, notebook: str, assignment: str) -> Any:
        self._load_notebook(notebook, assignment)
        try:
            return self._source[(name, notebook, assignment)]
        except KeyError:
            raise MissingEntry(f"No such source cell: {assignment}/{notebook}/{name}") from None

    def find_graded_cell(self, name: str, notebook: str, assignment: str) -> Any:
        self._load_notebook(notebook, assignment)
        try:
            return self._graded[(name, notebook, assignment)]
        except KeyError:
            raise MissingEntry(f"No such graded cell: {assignment}/{notebook}/{name}") from None

    # a student's grades and comments: one query each for the whole submitted notebook
    def _load_submission(self, notebook: str, assignment: str, student: str) -> None:
        key = (notebook, assignment, student)
        if key in self._submissions:
            return
        self._submissions.add(key)
        session = self._gradebook.db
        # find_grade prefers a grade cell to a task cell of the same name, find_comment a solution cell
        for table, target, preferred in ((Grade, self._grades, "GradeCell"), (Comment, self._comments, "SolutionCell")):
            rows = (  # the submitted notebook joined as nbgrader's find_submission_notebook finds it: none, no rows
                session.query(table, BaseCell.name, BaseCell.type)
                .join(BaseCell, BaseCell.id == table.cell_id)
                .join(SubmittedNotebook, SubmittedNotebook.id == table.notebook_id)
                .join(Notebook, Notebook.id == SubmittedNotebook.notebook_id)
                .join(SubmittedAssignment, SubmittedAssignment.id == SubmittedNotebook.assignment_id)
                .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
                .join(Student, Student.id == SubmittedAssignment.student_id)
                .filter(Notebook.name == notebook, Assignment.name == assignment, Student.id == student)
                .all()
            )
            for row, name, _kind in sorted(rows, key=lambda r: r[2] == preferred):
                target[(name, notebook, assignment, student)] = row

    def find_grade(self, grade_cell: str, notebook: str, assignment: str, student: str) -> Any:
        self._load_submission(notebook, assignment, student)
        try:
            return self._grades[(grade_cell, notebook, assignment, student)]
        except KeyError:
            raise MissingEntry(f"No such grade: {assignment}/{notebook}/{grade_cell} of {student}") from None

    def find_comment(self, solution_cell: str, notebook: str, assignment: str, student: str) -> Any:
        self._load_submission(notebook, assignment, student)
        try:
            return self._comments[(solution_cell, notebook, assignment, student)]
        except KeyError:
            raise MissingEntry(f"No such comment: {assignment}/{notebook}/{solution_cell} of {student}") from None


class BulkOverwriteCells(OverwriteCells):  # type: ignore[misc]
    """``OverwriteCells``, looking up the instructor's cells in bulk."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        self.notebook_id = resources["nbgrader"]["notebook"]
        self.assignment_id = resources["nbgrader"]["assignment"]
        self.db_url = resources["nbgrader"]["db_url"]
        gradebook = Gradebook(self.db_url)
        with gradebook:
            self.gradebook = prefetched = _Prefetched(gradebook)
            try:
                nb, resources = super(OverwriteCells, self).preprocess(nb, resources)
                if self.add_missing_cells:
                    nb, resources = self.add_missing_grade_cells(nb, resources)
                    nb, resources = self.add_missing_task_cells(nb, resources)
                read = prefetched.graded_cells_read(self.notebook_id, self.assignment_id)
                if read is not None:  # nbgrader's steps asked for the cells: note them for the autograde pass
                    rows.noted.instructor[(self.notebook_id, self.assignment_id)] = _grade_cells(read)
            finally:
                self.gradebook = gradebook
        return nb, resources


class BulkSaveAutoGrades(SaveAutoGrades):  # type: ignore[misc]
    """``SaveAutoGrades``, finding a notebook's grades and comments in bulk and committing once; it notes
    the rows it wrote (``rows.noted``)."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        self.notebook_id = resources["nbgrader"]["notebook"]
        self.assignment_id = resources["nbgrader"]["assignment"]
        self.student_id = resources["nbgrader"]["student"]
        self.db_url = resources["nbgrader"]["db_url"]
        self._scores: dict[str, float] = {}
        gradebook = Gradebook(self.db_url)
        with gradebook:
            self.gradebook = prefetched = _Prefetched(gradebook)
            try:
                nb, resources = super(SaveAutoGrades, self).preprocess(nb, resources)
                key = (self.notebook_id, self.assignment_id)
                instructor = rows.noted.instructor.get(key)
                if instructor is None:  # no BulkOverwriteCells before this step read them
                    instructor = _grade_cells(prefetched.graded_cells(*key))
                cells = tuple(rows.CellGrade(*c, self._scores.get(c[0])) for c in instructor)
                gradebook.db.commit()  # what the stock per-cell commits would have stored by now
            finally:
                self.gradebook = gradebook
        rows.noted.scores(self.notebook_id, cells, nb)
        return nb, resources

    def _add_score(self, cell: NotebookNode, resources: ResourcesDict) -> None:
        super()._add_score(cell, resources)
        name = cell.metadata["nbgrader"]["grade_id"]
        grade = self.gradebook.find_grade(name, self.notebook_id, self.assignment_id, self.student_id)
        self._scores[name] = rows.grade_score(grade.manual_score, grade.auto_score, grade.extra_credit)


def _grade_cells(cells: list[Any]) -> rows.Instructor:
    """The grade cells among ``_Prefetched.graded_cells``, in its order, as plain values."""
    return tuple((c.name, float(c.max_score), str(c.cell_type)) for c in cells if isinstance(c, GradeCell))


class RecordedLatePenalties(AssignLatePenalties):  # type: ignore[misc]
    """nbgrader's ``AssignLatePenalties``, unchanged, noting the penalty it stored (``rows.noted``)."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        self._stored = 0.0  # what the gradebook holds when no penalty applies: None, read as 0
        nb, resources = super().preprocess(nb, resources)
        rows.noted.late_penalty(self.notebook_id, self._stored)
        return nb, resources

    def _check_late_penalty(self, notebook: Any, penalty: float) -> float:
        checked = super()._check_late_penalty(notebook, penalty)
        self._stored = float(checked)
        return checked  # type: ignore[no-any-return]
