"""What is compared: each student's answer code, and the boilerplate removed from all of it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

from ..authoring.fixtures import Assignment
from ..errors import GraderError
from ..variants.spec import VARIANT_KEY, VariantCell, find_cells, submitted_values

EXTRA = "extra cell"


class SimilarityError(GraderError):
    """The comparison cannot be made as asked (too few submissions, no such assignment); says why."""


@dataclass(frozen=True)
class Cell:
    name: str
    """The answer cell's grade id, or ``extra cell N`` for a code cell the student added."""
    code: str


@dataclass(frozen=True)
class Submission:
    student: str
    cells: tuple[Cell, ...]
    """The answer cells in the release's order, then the code cells the student added."""
    variant: tuple[tuple[str, Any], ...] = ()
    """The values its variant cells hold, when they differ from the release's (``grader.variants``)."""
    fetched_for: str | None = None
    """The student its variant cell was handed out to, by the cell's metadata."""


@dataclass(frozen=True)
class Boilerplate:
    """Code every student may share without having copied: the release's starter code and the solution."""

    order: tuple[str, ...]
    """The answer cells' grade ids, in the release's order."""
    release_code: frozenset[str]
    """Every code cell of the release, as given to students (an unchanged one is not the student's)."""
    texts: tuple[str, ...]
    """Starter and solution code whose fingerprints are removed from every submission."""
    variant_cells: tuple[VariantCell, ...] = ()
    """The release's cells of per-student values (``grader.variants``)."""


def boilerplate(root: Path, assignment: str) -> Boilerplate:
    """The release's code cells (starter code, provided cells) and the instructor's solution of ``assignment``."""
    spec = Assignment(root, assignment)
    if not spec.source.is_file():
        raise SimilarityError(f"no assignment {assignment!r} in {root / 'source'}")
    solutions = spec.solutions()
    release = _read(spec.release) if spec.release.is_file() else spec.source_notebook()
    code = [cell.source for cell in release.cells if cell.cell_type == "code"]
    marked = tuple(find_cells(release, assignment))
    return Boilerplate(tuple(solutions), frozenset(code), tuple(code) + tuple(solutions.values()), marked)


def answers(student: str, notebook: NotebookNode, plate: Boilerplate) -> Submission:
    """The student's answer cells by grade id (missing ones empty), then code cells the release does not have."""
    found: dict[str, str] = {}
    extra: list[str] = []
    variant: dict[str, Any] = {}
    fetched_for = None
    marked = {c.grade_id: c for c in plate.variant_cells}
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        gid = meta.get("grade_id")
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if gid in marked and source != marked[gid].source:
            held = submitted_values(source)
            variant.update({v.name: held.get(v.name) for v in marked[gid].variants})
            fetched_for = cell.get("metadata", {}).get(VARIANT_KEY) or fetched_for
        elif gid in plate.order and meta.get("solution"):
            found[gid] = source
        elif not meta and source.strip() and source not in plate.release_code:
            extra.append(source)
    cells = [Cell(gid, found.get(gid, "")) for gid in plate.order]
    cells += [Cell(f"{EXTRA} {i}", code) for i, code in enumerate(extra, 1)]
    return Submission(student, tuple(cells), tuple(variant.items()), str(fetched_for) if fetched_for else None)


def parse(student: str, data: bytes | str, plate: Boilerplate) -> Submission:
    """A submission's answers from its notebook file; an unreadable file counts as no code (its grade says why)."""
    try:
        notebook = nbformat.reads(data if isinstance(data, str) else data.decode("utf-8"), as_version=4)  # type: ignore[no-untyped-call]
    except (ValueError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
        return Submission(student, tuple(Cell(gid, "") for gid in plate.order))
    return answers(student, notebook, plate)


def from_folder(root: Path, assignment: str, plate: Boilerplate) -> list[Submission]:
    """Every student's notebook in nbgrader's ``submitted/<student>/<assignment>/`` folders."""
    found = []
    for folder in sorted((root / "submitted").glob(f"*/{assignment}")):
        notebooks = sorted(folder.glob("*.ipynb"))
        if notebooks:
            found.append(parse(folder.parent.name, notebooks[0].read_bytes(), plate))
    return found


def require_two(students: Sequence[str], assignment: str, where: str) -> None:
    """A one-sentence error when fewer than two submissions can be compared."""
    if len(students) < 2:
        one = f" ({students[0]})" if students else ""
        raise SimilarityError(
            f"{assignment}: a similarity report needs at least two submissions; {where} has "
            f"{len(students) or 'none'}{one}"
        )


def _read(path: Path) -> NotebookNode:
    nb: NotebookNode = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    return nb


def by_student(submissions: Iterable[Submission]) -> Mapping[str, Submission]:
    return {s.student: s for s in submissions}
