"""Two gradings of one student at once (issue 17): they take turns, all succeed, and leave one set of rows."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grader import course
from grader.authoring import grading as authoring_grading
from grader.engine.bookkeeping.autograde import student_lock
from tests.fixtures.grading import results
from tests.fixtures.spec import SUBMISSIONS

A = "ps2_autograd"
STUDENT = "same-sam"
GRADER = str(Path(sys.executable).parent / "grader")
RUNS = 8


def _rows(root: Path) -> list[tuple[str, str, float | None, float | None]]:
    """Every submission, notebook and grade row of the gradebook, as (student, grade, auto, manual)."""
    from nbgrader.api import Gradebook

    rows = []
    with Gradebook(course.gradebook_url(root)) as gradebook:
        for submission in gradebook.assignment_submissions(A):
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    rows.append((submission.student.id, grade.name, grade.auto_score, grade.manual_score))
    return sorted(rows, key=lambda row: (row[0], row[1]))


def test_eight_simultaneous_runs_for_one_student_all_succeed_with_one_set_of_rows(tmp_path: Path) -> None:
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [A])
    course.place_submission(root, STUDENT, A, SUBMISSIONS / A / "sum-instead-of-mean.ipynb")
    env = dict(os.environ, GRADER_COURSE_ROOT=str(root))
    command = [GRADER, "autograde", A, "--student", STUDENT, "--jobs", "1"]
    single = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert single.returncode == 0, f"{single.stdout}\n{single.stderr[-3000:]}"
    rows, graded = _rows(root), results(root, A)
    assert rows and any(auto == 0 for _, _, auto, _ in rows) and any(auto for _, _, auto, _ in rows)

    processes = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(RUNS)
    ]
    finished = [(p.wait(timeout=900), *p.communicate()) for p in processes]
    for status, stdout, stderr in finished:
        assert status == 0, f"{stdout}\n{stderr[-3000:]}"
        assert f"Autograded 1 submission(s) of {A}" in stdout and "0 failed." in stdout, stdout

    assert _rows(root) == rows  # one row per grade cell, each as the single run left it
    authoring_grading._messages.cache_clear()  # read the autograded notebook again: it was rewritten
    assert results(root, A) == graded
    from nbgrader.api import Gradebook

    with Gradebook(course.gradebook_url(root)) as gradebook:
        assert [s.student.id for s in gradebook.assignment_submissions(A)] == [STUDENT]
    assert (root / "autograded" / STUDENT / A / f"{A}.ipynb").is_file()


LOCK_IN_ANOTHER_PROCESS = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from grader.engine.bookkeeping.autograde import student_lock\n"
    "with student_lock(Path(sys.argv[1]), sys.argv[2]):\n"
    "    print(time.monotonic())\n"
)


def test_the_student_lock_makes_threads_and_processes_take_turns(tmp_path: Path) -> None:
    held = threading.Event()
    released: list[float] = []

    def hold() -> None:
        with student_lock(tmp_path, STUDENT):
            held.set()
            time.sleep(1.0)
            released.append(time.monotonic())

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(10)
    command = [sys.executable, "-c", LOCK_IN_ANOTHER_PROCESS, str(tmp_path), STUDENT]
    other = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert other.returncode == 0, other.stderr
    assert float(other.stdout) >= released[0]  # the other process got the lock only after this one let go
    with student_lock(tmp_path, STUDENT):  # and a second thread gets it now
        pass
    thread.join()
    with student_lock(tmp_path, "another-student"):  # another student's lock is another file
        pass
    assert len(list((tmp_path / ".locks").iterdir())) == 2


@pytest.mark.parametrize("student", ["../../etc/passwd", "a b", "ünï"])
def test_a_lock_file_name_never_comes_from_the_student_id(tmp_path: Path, student: str) -> None:
    with student_lock(tmp_path, student):
        (path,) = (tmp_path / ".locks").iterdir()
    assert path.name.endswith(".lock") and len(path.stem) == 32 and path.stem.isalnum()
