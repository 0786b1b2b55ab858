"""Lists the site writes from the repository as it is: the course's assignments and the validation reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import markdown as md

REPO = Path(__file__).resolve().parents[3]
DOCS = REPO / "docs"
VALIDATION = DOCS / "validation"


def _nbgrader(cell: dict[str, Any]) -> dict[str, Any]:
    found = cell.get("metadata", {}).get("nbgrader", {})
    return found if isinstance(found, dict) else {}


def assignment_facts(root: Path, name: str) -> tuple[str, float, int]:
    """The notebook's title (its first heading), its points and its graded test cells, from ``source/``."""
    notebook = json.loads((root / "source" / name / f"{name}.ipynb").read_text())
    title = name
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            heading = next((line for line in source.splitlines() if line.startswith("# ")), None)
            if heading:
                title = heading[2:].strip()
                break
    graded = [_nbgrader(cell) for cell in notebook["cells"] if _nbgrader(cell).get("grade")]
    points = sum(float(meta.get("points") or 0) for meta in graded)
    tests = sum(1 for meta in graded if not meta.get("solution"))
    return title, points, tests


def assignments(root: Path = REPO) -> str:
    """A table of the course's assignments, one row per folder under ``source/`` (``grader.course.assignments``)."""
    from grader import course

    out = ["| assignment | title | points | graded test cells |", "|---|---|---|---|"]
    for name in course.assignments(root):
        title, points, tests = assignment_facts(root, name)
        out.append(f"| {md.code(name)} | {md.text(title)} | {points:g} | {tests} |")
    return "\n".join(out) + "\n"


INSTRUCTOR_PAGES = ("authoring", "checks", "variants", "grading-decisions", "validate", "validation-reports")


def instructors_toctree(folder: Path = DOCS / "instructors") -> str:
    """The instructors' section: its pages in ``INSTRUCTOR_PAGES`` order, then any other page there (the
    validate page and others written alongside this site), by name; a page not there is left out."""
    present = {p.stem for p in folder.glob("*.md")} - {"index"}
    pages = [name for name in INSTRUCTOR_PAGES if name in present] + sorted(present - set(INSTRUCTOR_PAGES))
    return "\n".join(["```{toctree}", ":maxdepth: 2", "", *pages, "```", ""])


def reports(folder: Path = VALIDATION) -> list[Path]:
    """The text files under ``docs/validation/`` (written by ``grader validate`` runs), by name."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))


def validation_reports(folder: Path = VALIDATION, docs: Path = DOCS) -> str:
    """One section per report, its text shown as it is (never parsed as Markdown), with a download link.
    ``docs``: the site's source folder, which holds ``folder``."""
    found = reports(folder)
    if not found:
        return "None yet: a report placed in `docs/validation/` appears here the next time the site is built.\n"
    out = []
    for path in found:
        relative = path.relative_to(docs).as_posix()
        out += [f"## {md.code(path.relative_to(folder).as_posix())}", ""]
        out += [f"{{download}}`Download the file </{relative}>`", ""]
        out += ["```{literalinclude} /" + relative, ":language: text", "```", ""]
    return "\n".join(out)
