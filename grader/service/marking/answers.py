"""The students' written answers to one question, read from what nbgrader autograded, and grouped.

An answer is the source of the student's written-answer cell in ``autograded/<student>/<assignment>/``
(what ``nbgrader autograde`` and the service's workers write, and what formgrader shows). Answers that
are the same once whitespace, letter case and Markdown emphasis are set aside are one ``Group``: a TA
grades the group once, and may split a student out of it (``marks``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from ...errors import NotFound
from ...rubrics import answer_digest, written_cells

NO_ANSWER = "YOUR ANSWER HERE"
"""What nbgrader puts in a written-answer cell it releases (``ClearSolutions.text_stub``)."""


@dataclass(frozen=True)
class Answer:
    student: str
    notebook: str
    cell: str
    text: str
    cell_type: str

    @property
    def blank(self) -> bool:
        """The student left the released text as it was (nbgrader scores it 0 by itself)."""
        return normalise(self.text) in ("", normalise(NO_ANSWER))

    @property
    def digest(self) -> str:
        """The answer's fingerprint as written: a new attempt with the same digest keeps its grade."""
        return answer_digest(self.text)

    @property
    def same_as(self) -> str:
        """The fingerprint of the normalised answer: equal for answers graded as one group."""
        return hashlib.sha256(normalise(self.text).encode()).hexdigest()


@dataclass(frozen=True)
class Group:
    same_as: str
    answers: tuple[Answer, ...]

    @property
    def students(self) -> tuple[str, ...]:
        return tuple(a.student for a in self.answers)


_EMPHASIS = re.compile(r"(\*\*|__|\*|_|`)")


def normalise(text: str) -> str:
    """Whitespace collapsed, letters in one case, Markdown emphasis and code ticks dropped."""
    return re.sub(r"\s+", " ", _EMPHASIS.sub("", text)).strip().casefold()


def read(course_root: Path, assignment: str, cell: str, students: Iterable[str] | None = None) -> list[Answer]:
    """Every autograded student's answer to ``cell`` of ``assignment`` (sorted by student id)."""
    found: list[Answer] = []
    base = course_root / "autograded"
    chosen = set(students) if students is not None else None
    for folder in sorted(base.glob(f"*/{assignment}")):
        student = folder.parent.name
        if chosen is not None and student not in chosen:
            continue
        for path in sorted(folder.glob("*.ipynb")):
            answer = _answer_in(path, student, cell)
            if answer is not None:
                found.append(answer)
    return found


# Each notebook's written answers, by path, kept while its size and modification time stay the same: the grading
# page reads every student's answer to one question on each request, and parsing 300 notebooks takes seconds.
_READ: dict[Path, tuple[tuple[int, int], dict[str, tuple[str, str]]]] = {}


def _answer_in(path: Path, student: str, cell: str) -> Answer | None:
    try:
        info = path.stat()
    except OSError:
        return None
    stamp = (info.st_mtime_ns, info.st_size)
    known = _READ.get(path)
    if known is None or known[0] != stamp:
        known = (stamp, _written_in(path))
        _READ[path] = known
    found = known[1].get(cell)
    return None if found is None else Answer(student, path.stem, cell, found[0], found[1])


def _written_in(path: Path) -> dict[str, tuple[str, str]]:
    """The written answers of the notebook at ``path``: source and cell type, by grade id."""
    try:
        data = json.loads(path.read_bytes())
        if data.get("nbformat") == 4:  # as nbformat reads it (lines joined), without its validation: most of a read
            notebook = nbformat.v4.to_notebook_json(data)  # type: ignore[no-untyped-call]
        else:
            notebook = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    except Exception:  # an unreadable notebook was graded 0 already; it holds no answer to show
        return {}
    cells = written_cells(notebook)
    found: dict[str, tuple[str, str]] = {}
    for candidate in notebook.cells:  # the first cell with the id, should a student have copied it
        grade_id = candidate.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in cells:
            found.setdefault(grade_id, (str(candidate.source), str(candidate.cell_type)))
    return found


_SOURCES: dict[Path, tuple[tuple[int, int], Any]] = {}


def source(course_root: Path, assignment: str) -> Any:
    """The instructor's source notebook of ``assignment`` (parsed once while unchanged; read it, never change it)."""
    path = course_root / "source" / assignment / f"{assignment}.ipynb"
    try:
        info = path.stat()
    except OSError:
        raise NotFound(f"no assignment {assignment!r}: source/{assignment}/{assignment}.ipynb does not exist") from None
    stamp = (info.st_mtime_ns, info.st_size)
    known = _SOURCES.get(path)
    if known is None or known[0] != stamp:
        known = (stamp, nbformat.read(path, as_version=4))  # type: ignore[no-untyped-call]
        _SOURCES[path] = known
    return known[1]


def groups(answers: Iterable[Answer], apart: Collection[str] = ()) -> list[Group]:
    """Answers grouped by their normalised text, the largest group first, then by first student; the answers of
    the students in ``apart`` (split out by a TA) each a group of its own."""
    by: dict[str, list[Answer]] = {}
    for answer in answers:
        key = answer.same_as
        if answer.student in apart:  # its own group, named without the student's name (it goes in the page)
            key = hashlib.sha256(f"{key}/{answer.student}".encode()).hexdigest()
        by.setdefault(key, []).append(answer)
    made = [Group(key, tuple(members)) for key, members in by.items()]
    return sorted(made, key=lambda g: (-len(g.answers), g.answers[0].student))
