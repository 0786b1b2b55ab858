"""Fixtures: the notebooks an instructor's hidden tests must grade a known way.

An assignment may keep, beside its source notebook, a folder ``fixtures/``. Each file in it is one
fixture, named by the behaviour it shows (``grad-not-zeroed.toml``):

- a **cell-replacement file** (``.toml``): the release notebook with every answer cell filled by the
  instructor's solution, then the cells in ``[solutions]`` written this other way;
- a **fixture notebook** (``.ipynb``): a whole submission, its declaration in the notebook's metadata
  under ``grader_fixture`` (the same keys).

Each declares what it must score: ``full_marks = true``, or a ``[fails]`` table from each test cell it
must lose to the text its message must carry (a misconception code such as ``"[sum-instead-of-mean]"``);
every other test cell must keep full marks. ``why`` says in one line what the student did. Optional:
``edits`` (structural changes, ``grader.authoring.edits``) and ``notes`` (texts the grader's notes on a
mangled notebook must carry). nbgrader never releases the folder (``CourseDirectory.ignore``).
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

from ..errors import AuthoringError
from .edits import EDITS, Edit, grade_id

FOLDER = "fixtures"
METADATA_KEY = "grader_fixture"
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_KEYS = {"why", "full_marks", "fails", "solutions", "edits", "notes"}
_SOLUTION_MARKERS = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.M)


@dataclass(frozen=True)
class Fixture:
    name: str
    """File name without its suffix: the behaviour, e.g. ``grad-not-zeroed``."""
    why: str
    """One line: what this student did."""
    solutions: dict[str, str] = field(default_factory=dict)
    """grade_id of an answer cell -> the student's code for it."""
    fails: dict[str, str] = field(default_factory=dict)
    """grade_id of a test cell -> text its failure message must contain (a misconception code works)."""
    edits: tuple[Edit, ...] = ()
    """Structural changes applied after the solutions are filled in."""
    notes: tuple[str, ...] = ()
    """Texts the grader's notes on a mangled notebook must contain (``grader.plugins.mending``); none: no notes."""
    notebook: Path | None = None
    """A fixture notebook's file: the submission as it is (``solutions`` and ``edits`` are then empty)."""

    @property
    def full_marks(self) -> bool:
        return not self.fails


@dataclass(frozen=True)
class Assignment:
    """An assignment's source notebook and the cells the fixtures may name."""

    root: Path
    name: str

    @property
    def source(self) -> Path:
        return self.root / "source" / self.name / f"{self.name}.ipynb"

    @property
    def release(self) -> Path:
        return self.root / "release" / self.name / f"{self.name}.ipynb"

    @property
    def fixtures_folder(self) -> Path:
        return self.root / "source" / self.name / FOLDER

    def source_notebook(self) -> NotebookNode:
        if not self.source.is_file():
            raise AuthoringError(
                f"{self.name}: no source notebook at {self.source}; an assignment is a folder source/<name>/ "
                f"holding <name>.ipynb"
            )
        try:
            return read_notebook(self.source)
        except Exception as error:  # nbformat raises json, validation and reader errors alike
            raise AuthoringError(f"{self.source} is not a notebook nbformat can read: {error}") from error

    def solutions(self) -> dict[str, str]:
        """Code of every answer cell of the source notebook, solution markers removed."""
        return {
            str(grade_id(cell)): _SOLUTION_MARKERS.sub("", cell.source).strip("\n")
            for cell in self.source_notebook().cells
            if cell.cell_type == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("solution")
        }

    def test_cells(self) -> dict[str, float]:
        """Every graded test cell's grade id and points, in notebook order."""
        return {
            str(grade_id(cell)): float(cell.metadata["nbgrader"].get("points", 0))
            for cell in self.source_notebook().cells
            if cell.cell_type == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("grade")
        }


def read_notebook(path: Path) -> NotebookNode:
    """``nbformat.read`` at version 4, typed."""
    nb: NotebookNode = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    return nb


def instructor_solutions(assignment: str, root: Path | None = None) -> dict[str, str]:
    from ..course import REPO_ROOT

    return Assignment(root or REPO_ROOT, assignment).solutions()


def load(assignment: Assignment) -> list[Fixture]:
    """Every fixture in the assignment's ``fixtures/`` folder, by name; checked against its source notebook."""
    folder = assignment.fixtures_folder
    if not folder.is_dir():
        return []
    solutions, tests = assignment.solutions(), assignment.test_cells()
    found = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or path.is_dir() or path.name.endswith(".ipynb_checkpoints"):
            continue
        fixture = read(path)
        _check_against(path, fixture, solutions, tests)
        found.append(fixture)
    return found


def read(path: Path) -> Fixture:
    """One fixture file: a ``.toml`` cell-replacement file or an ``.ipynb`` fixture notebook."""
    name = path.name.rsplit(".", 1)[0]
    if not _NAME.match(name):
        raise AuthoringError(
            f"{path}: a fixture is named by the behaviour it shows, in lower case with dashes "
            f"(grad-not-zeroed.toml), not {path.name!r}"
        )
    if path.suffix == ".toml":
        try:
            declared = tomllib.loads(path.read_text())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise AuthoringError(f"{path} is not valid TOML: {error}") from error
        return _fixture(path, name, declared, notebook=None)
    if path.suffix == ".ipynb":
        try:
            nb = read_notebook(path)
        except Exception as error:
            raise AuthoringError(f"{path} is not a notebook nbformat can read: {error}") from error
        declared = nb.metadata.get(METADATA_KEY)
        if not isinstance(declared, Mapping):
            raise AuthoringError(
                f"{path}: a fixture notebook declares what it must score in its metadata, under "
                f'"{METADATA_KEY}": {{"why": ..., "full_marks": true}} or {{"why": ..., "fails": {{...}}}}'
            )
        return _fixture(path, name, json.loads(json.dumps(declared)), notebook=path)
    raise AuthoringError(
        f"{path}: a fixture is a .toml cell-replacement file or an .ipynb notebook, not a {path.suffix or 'bare'} file"
    )


def _fixture(path: Path, name: str, declared: dict[str, Any], notebook: Path | None) -> Fixture:
    unknown = set(declared) - _KEYS
    if unknown:
        raise AuthoringError(f"{path}: unknown key(s) {sorted(unknown)}; a fixture has {sorted(_KEYS)}")
    why = declared.get("why")
    if not isinstance(why, str) or not why.strip():
        raise AuthoringError(f"{path}: `why` is missing: one line saying what this student did")
    fails = declared.get("fails", {})
    full = declared.get("full_marks", False)
    if not isinstance(fails, dict) or not all(isinstance(v, str) and v for v in fails.values()):
        raise AuthoringError(f"{path}: `fails` maps test cell grade ids to the text their message must carry")
    if bool(full) == bool(fails):
        raise AuthoringError(
            f"{path}: say what it must score: either `full_marks = true` or a [fails] table (test cell -> "
            f'misconception code, e.g. test_loss = "[sum-instead-of-mean]"); it has '
            f"{'both' if full else 'neither'}"
        )
    solutions = declared.get("solutions", {})
    if not isinstance(solutions, dict) or not all(isinstance(v, str) for v in solutions.values()):
        raise AuthoringError(f"{path}: `solutions` maps answer cell grade ids to the student's code for that cell")
    if notebook is not None and (solutions or declared.get("edits")):
        raise AuthoringError(f"{path}: a fixture notebook is the whole submission: it takes no solutions or edits")
    notes = declared.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise AuthoringError(f"{path}: `notes` is a list of texts")
    return Fixture(
        name=name,
        why=why.strip(),
        solutions={k: v.strip("\n") for k, v in solutions.items()},
        fails=dict(fails),
        edits=tuple(_edit(path, spec) for spec in declared.get("edits", [])),
        notes=tuple(notes),
        notebook=notebook,
    )


def _edit(path: Path, spec: Any) -> Edit:
    if not isinstance(spec, list) or not spec or spec[0] not in EDITS:
        raise AuthoringError(
            f"{path}: an edit is a list [name, arguments...] with a name from {sorted(EDITS)}, not {spec!r}"
        )
    name, *args = spec
    kwargs = args.pop() if args and isinstance(args[-1], dict) else {}
    try:
        return EDITS[name](*args, **kwargs)
    except TypeError as error:
        raise AuthoringError(f"{path}: edit {name}: {error}") from error


def _check_against(path: Path, fixture: Fixture, solutions: Mapping[str, str], tests: Mapping[str, float]) -> None:
    wrong = sorted(set(fixture.fails) - set(tests))
    if wrong:
        raise AuthoringError(
            f"{path}: [fails] names {', '.join(wrong)}, which is not a test cell of the source notebook "
            f"(its test cells: {', '.join(tests)})"
        )
    wrong = sorted(set(fixture.solutions) - set(solutions))
    if wrong:
        raise AuthoringError(
            f"{path}: [solutions] names {', '.join(wrong)}, which is not an answer cell of the source notebook "
            f"(its answer cells: {', '.join(solutions)})"
        )


def build(assignment: str | Assignment, fixture: Fixture, root: Path | None = None) -> NotebookNode:
    """The fixture's notebook, as a student would submit it."""
    if isinstance(assignment, str):
        from ..course import REPO_ROOT

        assignment = Assignment(root or REPO_ROOT, assignment)
    if fixture.notebook is not None:
        nb = read_notebook(fixture.notebook)
        nb.metadata.pop(METADATA_KEY, None)
        return nb
    nb = copy.deepcopy(read_notebook(assignment.release))
    code = assignment.solutions()
    unknown = set(fixture.solutions) - set(code)
    if unknown:
        raise AuthoringError(f"{assignment.name}/{fixture.name}: no answer cell with grade_id {sorted(unknown)}")
    code.update(fixture.solutions)
    return fill(nb, code, fixture.edits)


def fill(release: NotebookNode, code: Mapping[str, str], edits: tuple[Edit, ...] = ()) -> NotebookNode:
    """``release`` (changed in place) with each answer cell's text from ``code``, then ``edits`` applied."""
    for cell in release.cells:
        gid = grade_id(cell)
        if gid is not None and gid in code and cell.metadata["nbgrader"].get("solution"):
            cell.source = code[gid].strip("\n")
    for edit in edits:
        edit(release)
    nbformat.validate(release)
    return release
