"""Mending: match a submission's cells to the release's, so that one mangled cell never sinks a notebook.

Every week some student's notebook arrives mangled by accident: an answer cell split in two, a
cell retyped to markdown, cells dragged out of order, a stale copy of an older release, an
editor that dropped the nbgrader metadata or the cell ids.  ``mend`` matches each submitted
cell to a cell of the release:

1. by its nbgrader ``grade_id``;
2. by its cell ``id``;
3. by its content: a test or read-only cell by its exact text, an answer cell by the name of the
   function or class it defines (the release's answer cells all start with one).

Matched cells get the release's nbgrader metadata back (a student cannot edit points, flags or
ids); cells carrying an id the release does not know lose theirs and run as ordinary code;
an answer split in two (JupyterLab's Split Cell copies the nbgrader metadata into both halves)
is joined back into one cell where its halves do not stand alone (see ``_join_split_answers``);
graded cells go back into the release's order, each followed by the cells the student added
after it; answer and test cells that cannot be found are put back from the release (an empty
answer, or the test, which then runs on the student's code).  Each of these gets one sentence
for the student naming the cell.

``MendCells`` runs it first in ``Autograde.sanitize_preprocessors`` (``nbgrader_config.py``), so
stock ``nbgrader autograde`` and the engine grade the same mended notebook; its sentences go
into a markdown cell at the top of the autograded notebook, which the service shows with the
feedback.  Intake runs ``mend`` on upload, to refuse a notebook with no cell of the assignment
and to warn the student at once.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

# The release's cells are read in ``release``; the names callers use are re-exported here too.
from .release import DEFINES
from .release import ReleaseCell as ReleaseCell
from .release import read_release as read_release
from .release import release_cells as release_cells
from .release import release_notebook as release_notebook
from .release import release_path as release_path

# The keys of a cell's nbgrader metadata that decide how it is graded; the release's always win.
GRADING_KEYS = ("grade", "solution", "locked", "points", "grade_id", "task")
NOTES_KEY = "grader_notes"  # cell metadata key of the markdown cell holding the notes
NOTES_HEADING = "**Notes from the grader on how this notebook was matched to the assignment**"


@dataclass(frozen=True)
class Mended:
    """What ``mend`` did: how many cells it matched, and one sentence per change for the student."""

    matched: int  # answer and test cells of the release found in the submission
    notes: tuple[str, ...]


def _normal(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def _grade_id(cell: NotebookNode) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader")
    if not isinstance(meta, dict):
        return None
    grade_id = meta.get("grade_id")
    return grade_id if isinstance(grade_id, str) and grade_id else None


def _position(index: int) -> str:
    return f"cell {index + 1}"


def _content_matches(cell: NotebookNode, wanted: ReleaseCell) -> bool:
    source = cell.get("source", "")
    if not isinstance(source, str):
        return False
    if wanted.nbgrader.get("solution"):
        name = wanted.defines
        return name is not None and name in DEFINES.findall(source)
    return _normal(source) == _normal(wanted.source)


def _fitting(cell: NotebookNode, nb: NotebookNode) -> NotebookNode:
    """``cell`` as ``nb``'s nbformat version allows: no cell id before 4.5."""
    if (nb.get("nbformat"), nb.get("nbformat_minor", 0)) < (4, 5):
        cell.pop("id", None)
    return cell


def _new_cell(wanted: ReleaseCell, comment: str) -> NotebookNode:
    if wanted.cell_type == "code":
        cell = nbformat.v4.new_code_cell(f"# {comment}\n{wanted.source}")  # type: ignore[no-untyped-call]
    else:
        cell = nbformat.v4.new_markdown_cell(f"*{comment}*\n\n{wanted.source}")  # type: ignore[no-untyped-call]
    cell.metadata["nbgrader"] = copy.deepcopy(wanted.nbgrader)
    return cell  # type: ignore[no-any-return]


def mend(nb: NotebookNode, release: Sequence[ReleaseCell]) -> Mended:
    """Match ``nb``'s cells to ``release`` and repair ``nb`` in place; see the module's docstring."""
    by_grade_id = {r.grade_id: r for r in release}
    by_cell_id = {r.cell_id: r for r in release if r.cell_id}
    cells = nb.cells
    matched: list[ReleaseCell | None] = [None] * len(cells)
    notes: list[str] = []
    stale: list[tuple[int, str]] = []

    for i, cell in enumerate(cells):  # 1. by grade id
        grade_id = _grade_id(cell)
        if grade_id is None:
            continue
        if grade_id in by_grade_id:
            matched[i] = by_grade_id[grade_id]
        else:
            stale.append((i, grade_id))
    claimed = {r.grade_id for r in matched if r is not None}
    how: dict[int, str] = {}
    for i, cell in enumerate(cells):  # 2. by cell id
        wanted = by_cell_id.get(cell.get("id"))
        if matched[i] is None and wanted is not None and wanted.grade_id not in claimed:
            matched[i], how[i] = wanted, "its cell id"
            claimed.add(wanted.grade_id)
    for wanted in release:  # 3. by content
        if wanted.grade_id in claimed:
            continue
        for i, cell in enumerate(cells):
            if matched[i] is None and _content_matches(cell, wanted):
                matched[i], how[i] = wanted, ("the name it defines" if wanted.defines else "its text")
                claimed.add(wanted.grade_id)
                break

    for i, grade_id in stale:
        if matched[i] is None:
            notes.append(
                f"{_position(i).capitalize()} carries the nbgrader id `{grade_id}`, which this assignment does not "
                "have (a copy of an older release, or edited metadata): it ran as an ordinary cell."
            )
        cells[i].metadata.pop("nbgrader", None)

    relabelled: dict[str, list[tuple[int, ReleaseCell]]] = {}
    for i, (cell, wanted) in enumerate(zip(cells, matched, strict=True)):
        if wanted is None:
            continue
        if i in how and wanted.graded:
            relabelled.setdefault(how[i], []).append((i, wanted))
        old = cell.metadata.get("nbgrader", {})
        if i not in how and wanted.graded and any(old.get(k) != wanted.nbgrader.get(k) for k in GRADING_KEYS):
            notes.append(f"The nbgrader metadata of the {wanted.label} had been edited; the release's was put back.")
        cell.metadata["nbgrader"] = copy.deepcopy(wanted.nbgrader)
        if cell.cell_type != wanted.cell_type and wanted.graded:
            notes.append(
                f"The {wanted.label} had been changed to a {cell.cell_type} cell; it was graded as a "
                f"{wanted.cell_type} cell."
            )
    _join_split_answers(cells, matched, notes)
    seen: dict[str, int] = {}
    for wanted in matched:
        if wanted is not None:
            seen[wanted.grade_id] = seen.get(wanted.grade_id, 0) + 1
    last = {r.grade_id: i for i, r in enumerate(matched) if r is not None}
    for i, wanted in enumerate(matched):  # a split or copied cell: only its last copy keeps the metadata
        if wanted is not None and last[wanted.grade_id] != i:
            cells[i].metadata.pop("nbgrader", None)
    for by, cells_by in relabelled.items():
        notes.append(_relabelled(by, cells_by))
    for grade_id, count in seen.items():
        wanted = by_grade_id[grade_id]
        if count > 1 and wanted.nbgrader.get("solution"):
            notes.append(f"The {wanted.label} appears in {count} cells (split or copied): all of them run, in order.")
        elif count > 1 and wanted.graded:
            notes.append(
                f"The {wanted.label} appears in {count} cells (split or copied): the last one is replaced by the "
                "instructor's test and graded, the others run as ordinary cells."
            )

    found = sum(1 for r in release if r.graded and r.grade_id in claimed)
    _restore_order(nb, matched, notes)
    _put_back_missing(nb, matched, release, claimed, notes)
    return Mended(found, tuple(notes))


def _compiles(source: str) -> bool:
    """Whether a code cell's source compiles, IPython's magics and all (as the kernel would run it)."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        python = TransformerManager().transform_cell(source)  # type: ignore[no-untyped-call]
        compile(python, "<cell>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except Exception:  # SyntaxError, or whatever IPython's transforms raise on broken input
        return False
    return True


def _continues(before: str, after: str) -> bool:
    """Whether ``after`` is the rest of the code ``before`` began: a split inside a statement.

    True when the two joined compile and one of them cannot stand alone: ``before`` does not compile
    (a split inside brackets, after a decorator or a ``def`` line), ``after`` does not (an ``else:``
    or a function's ``return``), or ``after`` starts indented (the rest of a block: IPython would
    run it dedented, as top-level code). Two halves that each stand alone are left apart: run as two
    cells, an error in the first cannot stop the second from defining what it defines.
    """
    first_line = next((line for line in after.splitlines() if line.strip()), "")
    stands_alone = _compiles(before) and _compiles(after) and not first_line[:1].isspace()
    return not stands_alone and _compiles(f"{before}\n{after}")


def _split_groups(sources: Sequence[str], cell_type: str) -> list[list[int]]:
    """Which of consecutive halves of one answer belong together: every markdown half; code halves
    while each continues the one before (``_continues``)."""
    groups = [[0]]
    joined = sources[0]
    for k, source in enumerate(sources[1:], start=1):
        if cell_type != "code" or _continues(joined, source):
            groups[-1].append(k)
            joined = f"{joined}\n{source}"
        else:
            groups.append([k])
            joined = source
    return groups


def _join_split_answers(cells: list[NotebookNode], matched: list[ReleaseCell | None], notes: list[str]) -> None:
    """Join back an answer cell split inside a statement (JupyterLab's Split Cell, Ctrl+Shift+-).

    The split leaves consecutive cells with the answer's grade id; run apart, neither half of a
    function split in its body defines the function, and its tests (and those of everything after it
    in the cell) fail with ``NameError``. Halves that belong together (``_split_groups``) become
    one cell again: the first keeps its id, its source is the halves' joined by a newline (the split
    dropped the one at the cut). ``cells`` and ``matched`` are changed in place.
    """
    removed = 0  # cells joined into an earlier one so far: positions in the notes are the student's
    i = 0
    while i < len(cells):
        wanted = matched[i]
        end = i + 1
        while (
            wanted is not None
            and wanted.nbgrader.get("solution")
            and end < len(cells)
            and matched[end] is wanted
            and cells[end].cell_type == cells[i].cell_type
        ):
            end += 1
        if wanted is None or end - i < 2:
            i += 1
            continue
        sources = [str(c.get("source", "")) for c in cells[i:end]]
        kept: list[NotebookNode] = []
        for group in _split_groups(sources, cells[i].cell_type):
            first = cells[i + group[0]]
            if len(group) > 1:
                first.source = "\n".join(sources[k] for k in group)
                where = ", ".join(str(i + removed + k + 1) for k in group)
                alone = " that do not run on their own" if first.cell_type == "code" else ""
                notes.append(
                    f"The {wanted.label} had been split into {len(group)} cells (cells {where}){alone}: they were "
                    "joined back into one cell and graded as your one answer."
                )
            kept.append(first)
        cells[i:end] = kept
        matched[i:end] = [wanted] * len(kept)
        removed += (end - i) - len(kept)
        i += len(kept)


def _relabelled(by: str, found: list[tuple[int, ReleaseCell]]) -> str:
    if len(found) == 1:
        i, wanted = found[0]
        return (
            f"{_position(i).capitalize()} had lost its nbgrader metadata; it was matched to the {wanted.label} by {by}."
        )
    pairs = ", ".join(f"{_position(i)} is the {wanted.label}" for i, wanted in found)
    return (
        f"{len(found)} cells had lost their nbgrader metadata (an editor that drops it?); each was matched to the "
        f"assignment's by {by}: {pairs}."
    )


def _restore_order(nb: NotebookNode, matched: list[ReleaseCell | None], notes: list[str]) -> None:
    """Graded cells back in the release's order, each with the cells that follow it (stable)."""
    keys: list[int] = []
    current = -1
    first_late: tuple[ReleaseCell, ReleaseCell] | None = None
    highest: ReleaseCell | None = None
    for wanted in matched:
        if wanted is not None:
            if highest is not None and wanted.index < highest.index and first_late is None:
                first_late = (wanted, highest)
            if highest is None or wanted.index > highest.index:
                highest = wanted
            current = wanted.index
        keys.append(current)
    if first_late is None:
        return
    order = sorted(range(len(keys)), key=lambda i: keys[i])
    nb.cells = [nb.cells[i] for i in order]
    matched[:] = [matched[i] for i in order]
    late, before = first_late
    notes.append(
        f"Your cells were not in the assignment's order (the {late.label} came after the {before.label}); "
        "they were run in the assignment's order, each followed by the cells you added after it."
    )


def _put_back_missing(
    nb: NotebookNode,
    matched: list[ReleaseCell | None],
    release: Sequence[ReleaseCell],
    claimed: set[str],
    notes: list[str],
) -> None:
    for wanted in release:
        if wanted.grade_id in claimed or not wanted.graded:
            continue
        at = next((i for i, m in enumerate(matched) if m is not None and m.index > wanted.index), len(matched))
        if wanted.nbgrader.get("solution"):
            comment = "This answer cell was missing from your submission; the release's empty version was put back."
            notes.append(
                f"The {wanted.label} was not found in your notebook (deleted, or its metadata lost and its "
                "definition renamed): the release's empty version was put back, so its tests score 0."
            )
        else:
            comment = "This test cell was missing from your submission; it was put back and run."
            notes.append(f"The {wanted.label} was missing from your notebook: it was put back and run on your code.")
        nb.cells.insert(at, _fitting(_new_cell(wanted, comment), nb))
        matched.insert(at, wanted)


def notes_cell(notes: Sequence[str]) -> NotebookNode:
    text = "\n".join([NOTES_HEADING, ""] + [f"- {n}" for n in notes])
    cell = nbformat.v4.new_markdown_cell(text)  # type: ignore[no-untyped-call]
    cell.metadata[NOTES_KEY] = list(notes)
    return cell  # type: ignore[no-any-return]


def read_notes(nb: NotebookNode) -> list[str]:
    """The notes ``MendCells`` left in an autograded notebook."""
    for cell in nb.cells[:1]:
        found = cell.get("metadata", {}).get(NOTES_KEY)
        if isinstance(found, list):
            return [str(n) for n in found]
    return []


class MendCells(NbGraderPreprocessor):  # type: ignore[misc]
    """``mend`` against the assignment's release notebook, with the notes in a cell at the top."""

    def preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        from nbgrader.coursedir import CourseDirectory

        info = resources["nbgrader"]
        coursedir = CourseDirectory(parent=self)
        path = release_path(Path(coursedir.root), info["assignment"], info["notebook"], coursedir.release_directory)
        if not path.is_file():
            self.log.warning("No release notebook %s: cells are matched by nbgrader metadata only", path)
            return nb, resources
        nb.cells = [c for c in nb.cells if NOTES_KEY not in c.get("metadata", {})]  # never trust a student's notes
        mended = mend(nb, read_release(path))
        for note in mended.notes:
            self.log.warning("%s", note)
        if mended.notes:
            nb.cells.insert(0, _fitting(notes_cell(mended.notes), nb))
        return nb, resources
