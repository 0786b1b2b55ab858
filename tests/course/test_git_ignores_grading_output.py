"""The TAs' guide's commands leave nothing for git to list: what they write is ignored (``.gitignore``).

``docs/tas/index.md`` grades from the command line with ``nbgrader autograde``, ``grader autograde``,
``nbgrader export`` (``grades.csv``) and ``nbgrader generate_feedback``. Run for real in a git repository
holding a copy of the course and the repository's own ``.gitignore``, none of them leaves an untracked file.
Git reads no user or system configuration here, so no global excludes file can hide one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from grader import course

BIN = Path(sys.executable).parent
CORRECT = course.REPO_ROOT / "tests" / "fixtures" / "submissions" / "ps1_tensors" / "correct.ipynb"
ENV = dict(
    os.environ,
    PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",  # nbgrader runs `alembic` from here, as the guide says
    GIT_CONFIG_GLOBAL=os.devnull,
    GIT_CONFIG_NOSYSTEM="1",
)


def run(root: Path, *command: str) -> str:
    proc = subprocess.run(command, cwd=root, env=ENV, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, f"{' '.join(command)}: {proc.stdout}{proc.stderr}"
    return proc.stdout


def test_the_repository_ignores_grades_csv() -> None:
    assert run(course.REPO_ROOT, "git", "check-ignore", "grades.csv").strip() == "grades.csv"


def test_the_guides_grading_commands_leave_nothing_untracked(tmp_path: Path) -> None:
    root = course.copy_course(tmp_path / "course")
    shutil.copy2(course.REPO_ROOT / ".gitignore", root / ".gitignore")
    run(root, "git", "init", "-q")
    run(root, "git", "add", "-A")
    run(root, "git", "-c", "user.name=TA", "-c", "user.email=ta@example.org", "commit", "-q", "-m", "the course")
    course.place_submission(root, "ada", "ps1_tensors", CORRECT)
    run(root, str(BIN / "grader"), "release", "ps1_tensors")
    run(root, str(BIN / "nbgrader"), "autograde", "ps1_tensors", "--create")
    run(root, str(BIN / "grader"), "autograde", "ps1_tensors")
    run(root, str(BIN / "nbgrader"), "export")
    run(root, str(BIN / "nbgrader"), "generate_feedback", "ps1_tensors")
    assert (root / "grades.csv").read_text().count("ada") == 1, "nbgrader export wrote no grade"
    assert (root / "feedback" / "ada" / "ps1_tensors" / "ps1_tensors.html").exists()
    assert run(root, "git", "status", "--porcelain", "--untracked-files=all") == ""
