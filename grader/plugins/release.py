"""The release notebook a submission is matched against: its nbgrader cells, read once while unchanged.

``read_release`` gives the release's cells that carry nbgrader metadata (``ReleaseCell``: grade id,
cell id, type, source, metadata, and the function or class an answer cell defines), and
``release_notebook`` the notebook itself; both are cached by the file's size and mtime, since every
graded notebook needs its release (``mending.MendCells``, intake, the variant preprocessors).
``release_path`` says where an assignment's release notebook is.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbformat.notebooknode import NotebookNode

DEFINES = re.compile(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)


@dataclass(frozen=True)
class ReleaseCell:
    """A cell of the release that carries nbgrader metadata."""

    index: int
    grade_id: str
    cell_id: str | None
    cell_type: str
    source: str
    nbgrader: dict[str, Any] = field(hash=False, compare=False)

    @property
    def graded(self) -> bool:
        return bool(self.nbgrader.get("grade")) or bool(self.nbgrader.get("solution"))

    @property
    def defines(self) -> str | None:
        """The function or class an answer cell is about (its first definition)."""
        if not self.nbgrader.get("solution"):
            return None
        found = DEFINES.search(self.source)
        return found.group(1) if found else None

    @property
    def label(self) -> str:
        if self.nbgrader.get("solution"):
            about = f" (`{self.defines}`)" if self.defines else ""
            return f"answer cell `{self.grade_id}`{about}"
        if self.nbgrader.get("grade") and self.cell_type == "code":
            return f"test cell `{self.grade_id}`"
        return f"read-only cell `{self.grade_id}`"


def release_cells(release: NotebookNode) -> list[ReleaseCell]:
    cells = []
    for index, cell in enumerate(release.cells):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if isinstance(meta, dict) and meta.get("grade_id"):
            cells.append(ReleaseCell(index, meta["grade_id"], cell.get("id"), cell.cell_type, cell.source, dict(meta)))
    return cells


def release_notebook(path: Path) -> NotebookNode:
    """The release notebook, read once while the file is unchanged (by size and mtime).

    Every graded notebook needs its release (``MendCells``, the variant preprocessors); reading and
    validating it each time cost more than some notebooks' own cells. Callers never modify it:
    they deep-copy what they insert.
    """
    stat = os.stat(path)
    return _release_notebook(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _release_notebook(path: str, mtime_ns: int, size: int) -> NotebookNode:
    return nbformat.read(path, as_version=4)  # type: ignore[no-any-return, no-untyped-call]


@functools.lru_cache(maxsize=8)
def _release_cells(path: str, mtime_ns: int, size: int) -> list[ReleaseCell]:
    return release_cells(_release_notebook(path, mtime_ns, size))


def read_release(path: Path) -> list[ReleaseCell]:
    """The release notebook's nbgrader cells, cached while the file is unchanged."""
    stat = os.stat(path)
    return _release_cells(str(path), stat.st_mtime_ns, stat.st_size)


def release_path(root: Path, assignment: str, notebook: str, release_directory: str = "release") -> Path:
    return root / release_directory / assignment / f"{notebook}.ipynb"
