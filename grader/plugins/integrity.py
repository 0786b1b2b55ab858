"""nbgrader preprocessors that keep the instructor's test cells authoritative in a submission.

They run in ``Autograde.sanitize_preprocessors`` (see ``nbgrader_config.py``), so stock
``nbgrader autograde`` and the engine apply them alike.
"""

from __future__ import annotations

from typing import Any

from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

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
