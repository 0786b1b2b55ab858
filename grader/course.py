"""The course on disk, and the stock nbgrader commands that act on it.

Everything here calls the real ``nbgrader`` command line in a subprocess,
with this environment's ``bin`` first on ``PATH`` (nbgrader creates its
gradebook by running the ``alembic`` executable found there).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
COURSE_FILES = ("nbgrader_config.py", "source", "release")
# the late policy set from the dashboard (grader.plugins.late_policy); the course secret that draws per-student variant
# values (grader.variants), so that a scratch copy draws each student's values as the course does
OPTIONAL_COURSE_FILES = ("late_policy.json", "variant_secret.txt")


class NbgraderError(RuntimeError):
    """A stock nbgrader command failed; the message carries its output."""


@dataclass(frozen=True)
class CellScore:
    """One graded test cell of one submission, as the gradebook records it."""

    student: str
    assignment: str
    notebook: str
    grade_id: str
    score: float
    max_score: float


def locate(explicit: str | Path | None = None, cwd: Path | None = None) -> tuple[Path, str]:
    """Where the course is, and how it was found, as nbgrader finds it: ``--course`` (``explicit``),
    else ``$GRADER_COURSE_ROOT``, else the current directory when it holds ``nbgrader_config.py``,
    else the repository this package is installed from."""
    if explicit:
        return Path(explicit).resolve(), "--course"
    if os.environ.get("GRADER_COURSE_ROOT"):
        return Path(os.environ["GRADER_COURSE_ROOT"]).resolve(), "$GRADER_COURSE_ROOT"
    here = (cwd or Path.cwd()).resolve()
    if (here / "nbgrader_config.py").is_file():
        return here, "the current directory"
    return REPO_ROOT, "the installed course"


_reading = threading.Lock()  # $GRADER_COURSE_ROOT is the process's: one reading at a time sets it


def read_config(root: Path) -> Any:
    """The course's ``nbgrader_config.py`` as traitlets loads it (a ``Config``, the caller's to change): the one
    reader of it, for the engine's nbgrader configuration and limits, the service's settings (``grader.service.
    config.load`` validates them), the variant secret and the late policy. The file is read as the course at
    ``root``'s own (``$GRADER_COURSE_ROOT`` is ``root`` while it runs), so that a scratch copy of the course (a
    regrade's dry run) reads its own folders, not those of the course the process serves."""
    from traitlets.config.loader import PyFileConfigLoader

    with _reading:
        previous = os.environ.get("GRADER_COURSE_ROOT")
        os.environ["GRADER_COURSE_ROOT"] = str(root)
        try:
            return PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
        finally:
            if previous is None:
                os.environ.pop("GRADER_COURSE_ROOT", None)
            else:
                os.environ["GRADER_COURSE_ROOT"] = previous


def config_digest(root: Path) -> str:
    """The digest of the course's ``nbgrader_config.py`` as it is now ("" when there is none): a serve lends its
    engine (``engine.doors.lend``) only to a command that sees the file it read."""
    import hashlib

    try:
        return hashlib.sha256((Path(root) / "nbgrader_config.py").read_bytes()).hexdigest()
    except OSError:
        return ""


def release_directory(root: Path, loaded: Any = None) -> Path:
    """The course's release folder: nbgrader's ``CourseDirectory.release_directory`` (``release`` unless
    ``nbgrader_config.py`` says otherwise); ``loaded``: that file, already read (``read_config``)."""
    loaded = read_config(root) if loaded is None else loaded
    return root / str(loaded.get("CourseDirectory", {}).get("release_directory", "release"))


def assignments(root: Path = REPO_ROOT) -> list[str]:
    """Assignment names, in course order (the folder names under source/)."""
    return sorted(p.name for p in (root / "source").iterdir() if p.is_dir() and not p.name.startswith("."))


def submitted_students(root: Path, assignment: str) -> list[str]:
    """Students with a submission of ``assignment`` under ``submitted/``, sorted."""
    folder = root / "submitted"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / assignment).is_dir())


def gradebook_url(root: Path, db_url: str | None = None) -> str:
    """The gradebook of the course at ``root``.

    ``GRADER_DB_URL`` applies to this repository's own course only: a working
    copy elsewhere (a test, a scratch course) always gets its own SQLite file.
    """
    if db_url:
        return db_url
    if root.resolve() == REPO_ROOT and os.environ.get("GRADER_DB_URL"):
        return os.environ["GRADER_DB_URL"]
    return f"sqlite:///{root / 'gradebook.db'}"


def put_bin_on_path() -> None:
    """This environment's ``bin`` first on ``PATH`` (for nbgrader's ``alembic``), once."""
    bin_dir = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def environment(root: Path, db_url: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["GRADER_COURSE_ROOT"] = str(root)
    env["GRADER_DB_URL"] = gradebook_url(root, db_url)
    # torch and BLAS threads: one per kernel, so parallel gradings do not oversubscribe the cores
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    env.pop("PYTHONWARNINGS", None)
    return env


def nbgrader(root: Path, *args: str, timeout: float = 3600, db_url: str | None = None) -> str:
    """Run ``nbgrader ARGS`` in the course at ``root``; return its output, raise on failure."""
    command = [str(Path(sys.executable).parent / "nbgrader"), *args]
    proc = subprocess.run(
        command,
        cwd=root,
        env=environment(root, db_url),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise NbgraderError(f"`nbgrader {' '.join(args)}` failed (exit {proc.returncode}):\n{output[-6000:]}")
    return output


def generate_releases(root: Path = REPO_ROOT, names: Iterable[str] | None = None, db_url: str | None = None) -> None:
    """``nbgrader generate_assignment --force`` for each assignment (all by default), into the course's gradebook."""
    for name in names or assignments(root):
        nbgrader(root, "generate_assignment", name, "--force", db_url=db_url)


def copy_course(destination: Path, root: Path = REPO_ROOT) -> Path:
    """A working copy of the course (config, source, release) with no run-time data."""
    destination.mkdir(parents=True, exist_ok=True)
    for name in COURSE_FILES + tuple(n for n in OPTIONAL_COURSE_FILES if (root / n).exists()):
        src = root / name
        if name == "release" and not src.exists():
            continue  # nothing released yet (an instructor validating a new course): generate_releases makes it
        if src.is_dir():
            shutil.copytree(src, destination / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        else:
            shutil.copy2(src, destination / name)
    return destination


def place_submission(root: Path, student: str, assignment: str, notebook: Path) -> Path:
    """Put a notebook where ``nbgrader autograde`` looks for it."""
    return place_notebook(root, student, assignment, notebook.read_bytes())


def place_notebook(
    root: Path, student: str, assignment: str, data: bytes, received_at: dt.datetime | None = None
) -> Path:
    """Put a notebook's bytes where ``nbgrader autograde`` looks for them; with ``received_at``
    (naive UTC), the ``timestamp.txt`` nbgrader's late policy reads."""
    target = root / "submitted" / student / assignment
    target.mkdir(parents=True, exist_ok=True)
    destination = target / f"{assignment}.ipynb"
    destination.write_bytes(data)
    if received_at is not None:
        (target / "timestamp.txt").write_text(timestamp_text(received_at))
    return destination


def timestamp_text(received_at: dt.datetime) -> str:
    """``timestamp.txt`` for a submission received at ``received_at`` (naive UTC)."""
    return f"{received_at.isoformat(sep=' ')} UTC\n"


def autograde(root: Path, assignment: str, student: str | None = None, *extra: str) -> str:
    """Stock ``nbgrader autograde`` (creating unknown students), as a TA runs it."""
    args = ["autograde", assignment, "--create", "--force", *extra]
    if student:
        args += ["--student", student]
    return nbgrader(root, *args)


def cell_scores(root: Path, assignment: str, db_url: str | None = None) -> list[CellScore]:
    """Every autograded test cell's score for ``assignment``, read through nbgrader's Gradebook API (written
    answers, which a person grades, are ``grader.service.marking``'s)."""
    from nbgrader.api import Gradebook

    url = gradebook_url(root, db_url)
    rows: list[CellScore] = []
    with Gradebook(url) as gradebook:
        for submission in gradebook.assignment_submissions(assignment):
            for notebook in submission.notebooks:
                written = {cell.name for cell in notebook.notebook.solution_cells}
                for grade in notebook.grades:
                    if grade.name in written:
                        continue
                    rows.append(
                        CellScore(
                            student=submission.student.id,
                            assignment=assignment,
                            notebook=notebook.name,
                            grade_id=grade.name,
                            score=float(grade.score),
                            max_score=float(grade.max_score),
                        )
                    )
    return rows
