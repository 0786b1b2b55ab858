"""``grader similarity ASSIGNMENT`` on nbgrader's submitted/ folders: the table, the CSV, bad input."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader import course

from .planted import ASSIGNMENT, independent, notebook, renamed

GRADER = str(Path(sys.executable).with_name("grader"))


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A course copy whose submitted/ holds five independent students and one renamed copy of student-01."""
    root = course.copy_course(tmp_path_factory.mktemp("similarity") / "course")
    students = dict(list(independent().items())[:5])
    students["zed"] = {gid: renamed(code) for gid, code in students["student-01"].items()}
    for student, cells in students.items():
        path = root / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(notebook(cells), path)  # type: ignore[no-untyped-call]
    return root


def run(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [GRADER, "similarity", *args, "--course", str(root)], capture_output=True, text=True, timeout=120, env=env
    )


def test_the_command_prints_the_pairs_and_writes_the_csv(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "pairs.csv"
    done = run(root, ASSIGNMENT, "--csv", str(out))
    assert done.returncode == 0, done.stderr
    assert (
        f"grader similarity: comparing {root / 'submitted'} (nbgrader's submitted/<student>/{ASSIGNMENT}/)"
        in done.stderr
    )
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{ASSIGNMENT}: 6 submissions, 1 pair(s) at or above 50% similar")
    row = next(line for line in lines if line.startswith("student-01"))
    assert row.split()[:3] == ["student-01", "zed", "100%"]
    assert "A pair is a lead to look at, never a verdict." in done.stdout
    text = out.read_text()
    assert text.startswith("student_a,student_b,score,share_a,share_b,shared_chars,cells\nstudent-01,zed,")
    assert text.endswith("\n") and text.count("\n") == 2  # the header, one pair, each a whole line
    rows = list(csv.DictReader(text.splitlines()))
    assert [(r["student_a"], r["student_b"]) for r in rows] == [("student-01", "zed")]
    assert float(rows[0]["score"]) > 0.9 and "train_step" in rows[0]["cells"].split()
    assert not (root / "gradebook.db").exists()  # looking for the service's database created none


def test_the_report_is_the_same_in_every_process(root: Path, tmp_path: Path) -> None:
    """Python salts its str hashes per process (PYTHONHASHSEED): the fingerprints, so the shared characters and
    the scores, must not depend on it."""
    out = tmp_path / "pairs.csv"
    found = []
    for seed in ("1", "2"):
        done = run(
            root, ASSIGNMENT, "--threshold", "0.2", "--csv", str(out), env={**os.environ, "PYTHONHASHSEED": seed}
        )
        assert done.returncode == 0, done.stderr
        found.append((done.stdout, out.read_text()))
    assert found[0] == found[1]
    assert "student-01" in found[0][1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ps2_autograd"], "grader: ps2_autograd: a similarity report needs at least two submissions; "),
        ([ASSIGNMENT, "--threshold", "lots"], "grader: the threshold must be a number such as 0.5 or 50%, not 'lots'"),
        (["ps9_nothing"], "grader: no assignment 'ps9_nothing' in "),
    ],
)
def test_bad_input_is_one_sentence_and_exit_2(root: Path, args: list[str], message: str) -> None:
    done = run(root, *args)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_a_notebook_with_another_students_variant_values_is_flagged_with_the_evidence(tmp_path: Path) -> None:
    """carol submitted bob's notebook: its shop is bob's, not hers (grader.variants); the report says so."""
    import os

    from grader import variants

    root = course.copy_course(tmp_path / "course")
    key = os.environ["GRADER_VARIANT_SECRET"].encode()
    students = dict(list(independent().items())[:3])
    base = notebook(students["student-01"])
    cells = variants.find_cells(base, ASSIGNMENT)

    def shop(student: str) -> dict[str, object]:
        return dict(variants.student_values(key, ASSIGNMENT, student, cells))

    bob = next(f"bob-{n}" for n in range(100) if shop(f"bob-{n}") != shop("carol"))
    handed = {
        "alice": variants.personalise(notebook(students["student-02"]), key, ASSIGNMENT, "alice"),
        bob: variants.personalise(notebook(students["student-01"]), key, ASSIGNMENT, bob),
    }
    handed["carol"] = handed[bob]
    for student, nb in handed.items():
        path = root / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)  # type: ignore[no-untyped-call]
    done = run(root, ASSIGNMENT)
    assert done.returncode == 0, done.stderr
    values = ", ".join(f"{k} = {v!r}" for k, v in shop(bob).items())
    assert (
        f"carol's notebook holds {values}, which are not carol's own values but {bob}'s; the cell's metadata says "
        f"it was handed out to {bob}." in done.stdout.splitlines()
    )
    assert "alice's notebook" not in done.stdout and f"{bob}'s notebook" not in done.stdout
