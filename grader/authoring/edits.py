"""Structural edits a fixture may apply to a notebook: what students and editors do to one.

Each function takes plain arguments (grade ids, text) and returns an ``Edit``, a function that changes
a notebook in place. A fixture file names them as data: ``edits = [["delete_cell", "test_x"]]``, with an
inline table last for keyword arguments (``["set_metadata", "linear", {points = 5}]``); ``EDITS`` is
that vocabulary. The cells they add get deterministic ids, so a built fixture is reproducible.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import nbformat
from nbformat import NotebookNode

Edit = Callable[[NotebookNode], None]


def grade_id(cell: NotebookNode) -> str | None:
    value = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    return str(value) if value is not None else None


def _plain_cell(source: str, cell_id: str) -> NotebookNode:
    cell: NotebookNode = nbformat.v4.new_code_cell(source)  # type: ignore[no-untyped-call]
    cell.id = cell_id.replace("_", "-")
    return cell


def _index_of(nb: NotebookNode, gid: str) -> int:
    for i, cell in enumerate(nb.cells):
        if grade_id(cell) == gid:
            return i
    raise KeyError(f"no cell with grade_id {gid!r}")


def insert_code_after(gid: str, source: str) -> Edit:
    """A plain (unmarked) code cell after the cell ``gid``: a helper cell, a scratch cell."""

    def edit(nb: NotebookNode) -> None:
        nb.cells.insert(_index_of(nb, gid) + 1, _plain_cell(source, f"helper-after-{gid}"))

    return edit


def rerun_cells(*gids: str) -> Edit:
    """Plain copies of cells appended after the last of them: the student re-ran them."""

    def edit(nb: NotebookNode) -> None:
        copies = [_plain_cell(nb.cells[_index_of(nb, g)].source, f"rerun-{g}") for g in gids]
        last = max(_index_of(nb, g) for g in gids)
        nb.cells[last + 1 : last + 1] = copies

    return edit


def delete_cell(gid: str) -> Edit:
    def edit(nb: NotebookNode) -> None:
        del nb.cells[_index_of(nb, gid)]

    return edit


def tag_cells(tag: str, *gids: str) -> Edit:
    """Add a Jupyter cell tag (``metadata.tags``) to the cells with these grade ids."""

    def edit(nb: NotebookNode) -> None:
        for gid in gids:
            cell = nb.cells[_index_of(nb, gid)]
            cell.metadata["tags"] = [*cell.metadata.get("tags", []), tag]

    return edit


def split_cell(gid: str, before_line: str) -> Edit:
    """Split the cell ``gid`` before its line ``before_line``, as JupyterLab's "Split Cell" does:
    both halves keep the cell's metadata, the second gets a new id."""

    def edit(nb: NotebookNode) -> None:
        i = _index_of(nb, gid)
        lines = nb.cells[i].source.splitlines(keepends=True)
        k = lines.index(before_line + "\n")
        second = copy.deepcopy(nb.cells[i])
        second.id = f"{nb.cells[i].id}-split"
        nb.cells[i].source = "".join(lines[:k]).rstrip("\n")
        second.source = "".join(lines[k:]).rstrip("\n")
        nb.cells.insert(i + 1, second)

    return edit


def retype_cell(gid: str, cell_type: str) -> Edit:
    """Change a cell's type (Esc M in Jupyter turns a code cell into markdown)."""

    def edit(nb: NotebookNode) -> None:
        cell = nb.cells[_index_of(nb, gid)]
        cell.cell_type = cell_type
        cell.pop("outputs", None)
        cell.pop("execution_count", None)

    return edit


def move_before(gid: str, before: str) -> Edit:
    """Drag the cell ``gid`` up to just before the cell ``before``."""

    def edit(nb: NotebookNode) -> None:
        cell = nb.cells.pop(_index_of(nb, gid))
        nb.cells.insert(_index_of(nb, before), cell)

    return edit


def drop_nbgrader_metadata() -> Edit:
    """An editor that keeps only the metadata it knows: every cell's nbgrader metadata is gone."""

    def edit(nb: NotebookNode) -> None:
        for cell in nb.cells:
            cell.metadata.pop("nbgrader", None)

    return edit


def drop_cell_ids() -> Edit:
    """An older editor that writes nbformat 4.4, which has no cell ids."""

    def edit(nb: NotebookNode) -> None:
        nb.nbformat_minor = 4
        for cell in nb.cells:
            cell.pop("id", None)

    return edit


def set_metadata(gid: str, **changes: object) -> Edit:
    """Edit a cell's nbgrader metadata (in the notebook's JSON, or Jupyter's metadata editor)."""

    def edit(nb: NotebookNode) -> None:
        nb.cells[_index_of(nb, gid)].metadata["nbgrader"].update(changes)

    return edit


def rename_cell(gid: str, new_gid: str, source: str) -> Edit:
    """The cell as an older release had it: another grade id and another text."""

    def edit(nb: NotebookNode) -> None:
        cell = nb.cells[_index_of(nb, gid)]
        cell.metadata["nbgrader"]["grade_id"] = new_gid
        cell.id = new_gid.replace("_", "-")
        cell.source = source

    return edit


def insert_graded_cell_after(gid: str, source: str, new_gid: str, points: float) -> Edit:
    """A cell the student made, with nbgrader metadata claiming it is a test worth ``points``."""

    def edit(nb: NotebookNode) -> None:
        cell = _plain_cell(source, new_gid)
        cell.metadata["nbgrader"] = {
            "grade": True,
            "grade_id": new_gid,
            "locked": True,
            "points": points,
            "schema_version": 3,
            "solution": False,
            "task": False,
        }
        nb.cells.insert(_index_of(nb, gid) + 1, cell)

    return edit


def duplicate_cell(gid: str, source: str) -> Edit:
    """A copy of the cell ``gid`` (metadata and all) right after it, with its text changed to ``source``."""

    def edit(nb: NotebookNode) -> None:
        i = _index_of(nb, gid)
        cell = copy.deepcopy(nb.cells[i])
        cell.id = f"{cell.id}-copy"
        cell.source = source
        nb.cells.insert(i + 1, cell)

    return edit


def edit_cell(gid: str, source: str, cell_id: str | None = None) -> Edit:
    """Rewrite the cell ``gid`` (a test cell's text, say), keeping its metadata; optionally its id too."""

    def edit(nb: NotebookNode) -> None:
        cell = nb.cells[_index_of(nb, gid)]
        cell.source = source
        if cell_id is not None:
            cell.id = cell_id

    return edit


EDITS: dict[str, Callable[..., Edit]] = {
    f.__name__: f
    for f in (
        insert_code_after,
        rerun_cells,
        delete_cell,
        tag_cells,
        split_cell,
        retype_cell,
        move_before,
        drop_nbgrader_metadata,
        drop_cell_ids,
        set_metadata,
        rename_cell,
        insert_graded_cell_after,
        duplicate_cell,
        edit_cell,
    )
}
"""Every edit a fixture file may name, by function name."""
