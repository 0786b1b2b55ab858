"""nbgrader preprocessors that keep the instructor's test cells authoritative in a submission.

They run in ``Autograde.sanitize_preprocessors`` (see ``nbgrader_config.py``), so stock
``nbgrader autograde`` and the engine apply them alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

from .release import read_release, release_notebook, release_path

# Tags with which nbclient (and so nbgrader's Execute) would skip a cell, or expect it to fail.
EXECUTION_TAGS = frozenset({"skip-execution", "raises-exception"})


class RunEveryTestCell(NbGraderPreprocessor):  # type: ignore[misc]
    """Remove execution-changing tags from test cells.

    nbclient skips a cell tagged ``skip-execution``, and nbgrader gives full points to a test cell
    without an error: a student who tags the hidden tests would pass them all without running
    them. Cell tags are ordinary metadata the student can edit, and ``OverwriteCells`` restores
    only a test cell's source, type, points and lock; this restores that it runs.
    """

    def preprocess_cell(self, cell: NotebookNode, resources: Any, index: int) -> tuple[NotebookNode, Any]:
        tags = cell.metadata.get("tags")
        if utils.is_grade(cell) and isinstance(tags, list) and EXECUTION_TAGS.intersection(tags):
            removed = sorted(EXECUTION_TAGS.intersection(tags))
            self.log.warning("Removed the tags %s from test cell %s", removed, cell.metadata.nbgrader.get("grade_id"))
            cell.metadata["tags"] = [t for t in tags if t not in EXECUTION_TAGS]
            if not cell.metadata["tags"]:
                del cell.metadata["tags"]
        return cell, resources


class RestoreHiddenTests(NbGraderPreprocessor):  # type: ignore[misc]
    """Give each locked cell exactly as released the gradebook's source back, hidden tests included.

    ``nbgrader generate_assignment`` saves a test cell in the gradebook before ``ClearHiddenTests``
    cuts its hidden tests out of the release, so the gradebook's checksum is that of the whole cell
    and the released cell's is not. ``OverwriteCells`` compares the submitted cell with the
    gradebook's checksum: every test cell with hidden tests, in every notebook, even the release
    submitted untouched, was reported as ``Attribute 'checksum' for cell ... has changed!``, and a
    cell a student really changed was one warning among them. (So was a variant cell holding the
    student's own values, as the exchange hands it out: ``grader.variants``.) Run just before
    ``OverwriteCells``, this gives a locked cell whose checksum is the release's, or that of the
    release as this student fetched it, the gradebook's source: what ``OverwriteCells`` would have
    written into it anyway. A cell that differs from both in any way is left as it is, for
    ``OverwriteCells`` to report and restore.
    """

    def preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        from nbgrader.api import Gradebook, MissingEntry
        from nbgrader.coursedir import CourseDirectory

        info = resources["nbgrader"]
        coursedir = CourseDirectory(parent=self)
        root = Path(coursedir.root)
        path = release_path(root, info["assignment"], info["notebook"], coursedir.release_directory)
        if not path.is_file():
            return nb, resources
        released: dict[str, set[str | None]] = {}
        for cell in read_release(path):
            released.setdefault(cell.grade_id, set()).add(_checksum(cell.cell_type, cell.source, cell.nbgrader))
        for grade_id, checksum in _fetched(self, root, path, info):
            released.setdefault(grade_id, set()).add(checksum)
        untouched = [cell for cell in nb.cells if _as_released(cell, released)]
        if not untouched:
            return nb, resources
        with Gradebook(info["db_url"]) as gradebook:
            try:
                notebook = gradebook.find_notebook(info["notebook"], info["assignment"])
            except MissingEntry:
                return nb, resources  # not in the gradebook: OverwriteCells says so for each cell
            instructor = {c.name: c.source for c in notebook.source_cells if c.locked and isinstance(c.source, str)}
        for cell in untouched:
            cell.source = instructor.get(cell.metadata.nbgrader["grade_id"], cell.source)
        return nb, resources


def _fetched(pre: NbGraderPreprocessor, root: Path, path: Path, info: Any) -> list[tuple[str, str | None]]:
    """``(grade id, checksum)`` of each variant cell of the release as the student fetched it, their values in it."""
    from ..variants import secret
    from ..variants.spec import find_cells, render, student_values

    release = release_notebook(path)
    cells = find_cells(release, str(info["assignment"]))
    if not cells:
        return []
    key = secret.require(root, pre.config if pre.config.get("Variants") else None)
    values = student_values(key, info["assignment"], info["student"], cells)
    return [
        (c.grade_id, _checksum("code", render(c, values), release.cells[c.index].metadata.get("nbgrader")))
        for c in cells
    ]


def _as_released(cell: NotebookNode, released: dict[str, set[str | None]]) -> bool:
    """Whether ``cell`` is a locked cell with the checksum (source, type, flags, points) of the cell released."""
    meta = cell.get("metadata", {}).get("nbgrader")
    if not isinstance(meta, dict) or not isinstance(meta.get("grade_id"), str) or not utils.is_locked(cell):
        return False
    checksum = _checksum(cell.cell_type, cell.get("source"), meta)
    return checksum is not None and checksum in released.get(meta["grade_id"], set())


def _checksum(cell_type: str, source: Any, nbgrader: Any) -> str | None:
    """nbgrader's checksum of a cell with this type, source and nbgrader metadata; ``None`` where it has none."""
    cell = NotebookNode(cell_type=cell_type, source=source, metadata=NotebookNode(nbgrader=nbgrader))  # type: ignore[no-untyped-call]
    try:
        return str(utils.compute_checksum(cell))
    except (KeyError, TypeError, ValueError, AttributeError):  # metadata without a grade id or points
        return None
