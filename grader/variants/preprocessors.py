"""The two nbgrader preprocessors that grade each student on their own variant values.

Both run in ``Autograde.sanitize_preprocessors`` (``nbgrader_config.py``), so stock ``nbgrader
autograde`` and the engine apply them alike; both read the variant cells from the release notebook
(as ``MendCells`` does), and do nothing for a notebook that marks none.

- ``NoteVariantEdits``, before ``OverwriteCells``: when the submitted variant cell does not hold the
  student's values (edited, or copied from someone else's notebook), a note for the student says
  which values it held and that their own were used. A cell exactly as the course's release has it
  (the marks still in it: a notebook from ``release/`` itself, not from the exchange) gets no note.
- ``ApplyVariant``, after ``OverwriteCells`` (which restores the locked cell as released): writes
  the student's values into the cell, putting the cell back first if the submission lost it.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from ..plugins import mending
from . import secret as course_secret
from .spec import VARIANT_KEY, VariantCell, find_cells, render, student_values, submitted_values


def _release(pre: NbGraderPreprocessor, resources: Any) -> tuple[NotebookNode | None, Path]:
    from nbgrader.coursedir import CourseDirectory

    info = resources["nbgrader"]
    coursedir = CourseDirectory(parent=pre)
    root = Path(coursedir.root)
    path = mending.release_path(root, info["assignment"], info["notebook"], coursedir.release_directory)
    if not path.is_file():
        return None, root
    return mending.release_notebook(path), root


# find_cells of each cached release notebook, by its identity; the entry holds the notebook, so an
# id is never reused while it is here (mending.release_notebook keeps at most 8 releases too).
_found: dict[int, tuple[NotebookNode, list[VariantCell]]] = {}


def _variant_cells(release: NotebookNode, assignment: str) -> list[VariantCell]:
    entry = _found.get(id(release))
    if entry is None or entry[0] is not release:
        if len(_found) >= 8:
            _found.clear()
        entry = _found[id(release)] = (release, find_cells(release, assignment))
    return list(entry[1])


def _cells_and_values(pre: NbGraderPreprocessor, resources: Any) -> tuple[list[VariantCell], dict[str, Any]]:
    release, root = _release(pre, resources)
    assignment = str(resources["nbgrader"]["assignment"])
    cells = _variant_cells(release, assignment) if release is not None else []
    if not cells:
        return [], {}
    secret = course_secret.require(root, pre.config if pre.config.get("Variants") else None)
    info = resources["nbgrader"]
    return cells, student_values(secret, info["assignment"], info["student"], cells)


def _find(nb: NotebookNode, grade_id: str) -> int | None:
    for index, cell in enumerate(nb.cells):
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
            return index
    return None


def _locate(nb: NotebookNode, cell: VariantCell) -> int | None:
    """Where ``cell`` is in the submission: by its grade id, else (an editor dropped its nbgrader metadata) the
    first code cell without a grade id that assigns every one of its names."""
    at = _find(nb, cell.grade_id)
    if at is not None:
        return at
    names = {v.name for v in cell.variants}
    for index, candidate in enumerate(nb.cells):
        info = candidate.get("metadata", {}).get("nbgrader", {})
        source = str(candidate.get("source", ""))
        if (
            candidate.get("cell_type") == "code"
            and not info.get("grade_id")
            and _skeleton(source, names) == (_skeleton(cell.source, names))
        ):
            return index
    return None


def _skeleton(source: str, names: set[str]) -> list[str]:
    """The cell's lines but those assigning a variant's name, stripped: what fetching it did not change."""
    assigns = re.compile(r"^\s*(" + "|".join(sorted(map(re.escape, names))) + r")\s*=")
    return [line.strip() for line in source.splitlines() if line.strip() and not assigns.match(line)]


def _show(values: dict[str, Any]) -> str:
    return ", ".join(f"{name} = {value!r}" for name, value in values.items())


class NoteVariantEdits(NbGraderPreprocessor):  # type: ignore[misc]
    """Tell the student when their variant cell does not hold their own values."""

    def preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        cells, values = _cells_and_values(self, resources)
        if not cells:
            return nb, resources
        notes = []
        for cell in cells:
            at = _locate(nb, cell)
            mine = {v.name: values[v.name] for v in cell.variants}
            if at is None:
                notes.append(
                    f"The cell `{cell.grade_id}` with your assignment's values was missing: it was put back "
                    f"with your values ({_show(mine)})."
                )
                continue
            submitted = str(nb.cells[at].get("source", ""))
            if submitted == cell.source:
                continue  # the course's own release, as nbgrader made it (no student's values in it yet)
            found = submitted_values(submitted)
            held = {name: found.get(name, "(missing)") for name in mine}
            if held != mine:
                notes.append(
                    f"The cell `{cell.grade_id}` in your notebook says {_show(held)}, but your assignment's values "
                    f"are {_show(mine)}: you were graded on yours. Fetch the assignment again to see them."
                )
        notes += _reassigned(nb, cells, {_locate(nb, c) for c in cells})
        if notes:
            for note in notes:
                self.log.warning("%s", note)
            _add_notes(nb, notes)
        return nb, resources


class ApplyVariant(NbGraderPreprocessor):  # type: ignore[misc]
    """Write the student's own values into each variant cell, as released to them."""

    def preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        cells, values = _cells_and_values(self, resources)
        release, _ = _release(self, resources) if cells else (None, None)
        for cell in cells:
            at = _locate(nb, cell)
            assert release is not None
            if at is not None and not nb.cells[at].get("metadata", {}).get("nbgrader"):
                nb.cells[at].metadata["nbgrader"] = copy.deepcopy(release.cells[cell.index].metadata["nbgrader"])
            if at is None:
                restored = copy.deepcopy(release.cells[cell.index])
                restored["outputs"], restored["execution_count"] = [], None
                if (nb.get("nbformat"), nb.get("nbformat_minor", 0)) < (4, 5):
                    restored.pop("id", None)
                at = _position(nb, release, cell.index)
                nb.cells.insert(at, restored)
            nb.cells[at].source = render(cell, values)
            nb.cells[at].metadata[VARIANT_KEY] = resources["nbgrader"]["student"]
        names = set(values)
        located = {_locate(nb, c) for c in cells}
        if any(
            _assigning(str(c.get("source", "")), names) or DYNAMIC.search(str(c.get("source", "")))
            for _, c in _student_cells(nb, located)
        ):
            _pin(nb, values)
        return nb, resources


PIN_KEY = "grader_variant_pin"  # cell metadata of the cells that set the student's values again
# code that can set a name without an assignment: a call of one of these (not a method: model.eval()), or a
# namespace reached by its dunder or module
DYNAMIC = re.compile(
    r"(?<![.\w])(globals|locals|vars|exec|eval|setattr|__import__)\s*\(|__dict__|__builtins__|__main__|sys\.modules"
    r"|\bbuiltins\b"
)


def _assigning(source: str, names: set[str]) -> list[str]:
    """The variant names ``source`` assigns: ``NAME =``, ``NAME +=``, ``NAME: T =``, ``a, NAME = ...``,
    ``NAME :=``, ``for NAME in``, ``global NAME``, ``import x as NAME``, ``del NAME``."""
    found = []
    for name in sorted(names):
        n = re.escape(name)
        patterns = (
            rf"^\s*(?:[\w\s,()\[\]*]*[,(\[]\s*)?\*?{n}\s*(?:,[\w\s,()\[\]*]*)?[)\]]?\s*(?:=(?!=)|[-+*/%@&|^]=|//=|\*\*=|>>=|<<=)",
            rf"^\s*{n}\s*:[^=\n]+=",
            rf"\b{n}\s*:=",
            rf"\bfor\b[^\n]*\b{n}\b[^\n]*\bin\b",
            rf"\b(?:global|nonlocal|del)\b[^\n]*\b{n}\b",
            rf"\bas\s+{n}\b",
        )
        if any(re.search(p, source, re.M) for p in patterns):
            found.append(name)
    return found


def _student_cells(nb: NotebookNode, skip: set[int | None]) -> list[tuple[int, NotebookNode]]:
    """The code cells whose source is the student's: not a test cell, not a variant cell."""
    return [
        (i, c)
        for i, c in enumerate(nb.cells)
        if c.get("cell_type") == "code" and i not in skip and not c.get("metadata", {}).get("nbgrader", {}).get("grade")
    ]


def _pin(nb: NotebookNode, values: dict[str, Any]) -> None:
    """Before each test cell, a cell that sets the student's own values again: an answer cell that assigns one of
    the names (or may, through ``globals()``, ``exec`` ...) changes neither what the tests expect nor what the
    student's functions read while the tests run. Only in such a notebook: the others run as released."""
    line = f"{', '.join(values)} = {', '.join(repr(v) for v in values.values())}"
    old = (nb.get("nbformat"), nb.get("nbformat_minor", 0)) < (4, 5)
    at = 0
    while at < len(nb.cells):
        cell = nb.cells[at]
        if cell.get("cell_type") == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            pin = nbformat.v4.new_code_cell(f"{line}  # your own values (grader.variants)")  # type: ignore[no-untyped-call]
            pin.metadata[PIN_KEY] = True
            if old:
                pin.pop("id", None)
            else:  # the same id under stock nbgrader and the engine: named after the test cell it serves
                pin["id"] = f"pin-{cell.get('id') or at}"[:64]
            nb.cells.insert(at, pin)
            at += 1
        at += 1


def _position(nb: NotebookNode, release: NotebookNode, index: int) -> int:
    """Where a lost cell of the release goes back: before the first later release cell the submission has."""
    for later in release.cells[index + 1 :]:
        grade_id = later.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        found = _find(nb, grade_id) if grade_id else None
        if found is not None:
            return found
    return len(nb.cells)


def _reassigned(nb: NotebookNode, cells: list[VariantCell], variant_cells: set[int | None]) -> list[str]:
    """Notes on the student's own cells that assign a variant's name."""
    names = {v.name for c in cells for v in c.variants}
    notes = []
    for index, cell in _student_cells(nb, variant_cells):
        assigned = _assigning(str(cell.get("source", "")), names)
        if assigned:
            info = cell.get("metadata", {}).get("nbgrader", {})
            where = f"`{info['grade_id']}`" if info.get("grade_id") else f"number {index + 1}"
            notes.append(
                f"Your cell {where} assigns {', '.join(assigned)}, which hold your assignment's own values: the "
                "tests set your own values again before each test, whatever that cell assigns."
            )
    return notes


def _add_notes(nb: NotebookNode, notes: list[str]) -> None:
    """Add ``notes`` to the notes cell at the top (``mending``'s), making it when there is none."""
    if nb.cells and mending.NOTES_KEY in nb.cells[0].get("metadata", {}):
        made = mending.notes_cell(mending.read_notes(nb) + notes)
        nb.cells[0].source = made.source
        nb.cells[0].metadata[mending.NOTES_KEY] = made.metadata[mending.NOTES_KEY]
    else:
        cell = mending.notes_cell(notes)
        if (nb.get("nbformat"), nb.get("nbformat_minor", 0)) < (4, 5):
            cell.pop("id", None)
        nb.cells.insert(0, cell)
