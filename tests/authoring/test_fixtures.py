"""The fixture format: files an instructor writes by hand beside the source notebook; errors as text."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from grader import course
from grader.authoring import fixtures
from grader.errors import AuthoringError

from . import minicourse


def test_every_assignment_keeps_its_fixtures_beside_its_source_and_none_is_released() -> None:
    for name in course.assignments():
        assignment = fixtures.Assignment(course.REPO_ROOT, name)
        found = fixtures.load(assignment)
        assert len(found) >= 20, name
        assert all(f.why and (f.full_marks or f.fails) for f in found)
        assert not (course.REPO_ROOT / "release" / name / "fixtures").exists()


def _write(root: Path, name: str, text: str) -> Path:
    folder = root / "source" / minicourse.NAME / "fixtures"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_a_cell_replacement_file_builds_the_release_with_the_students_cell(tmp_path: Path) -> None:
    root = minicourse.make(tmp_path)
    course.generate_releases(root)
    _write(
        root,
        "loss-as-tensor.toml",
        "why = 'returns the loss tensor'\n[fails]\ntest_sgd_step = 'float'\n"
        "[solutions]\nsgd_step = '''\ndef sgd_step(w, x, y, lr):\n    return 0\n'''\n",
    )
    assignment = fixtures.Assignment(root, minicourse.NAME)
    (fixture,) = fixtures.load(assignment)
    assert (fixture.name, fixture.why, fixture.fails) == (
        "loss-as-tensor",
        "returns the loss tensor",
        {"test_sgd_step": "float"},
    )
    nb = fixtures.build(assignment, fixture)
    answer = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert [c.source for c in answer] == ["def sgd_step(w, x, y, lr):\n    return 0"]
    assert "BEGIN HIDDEN TESTS" not in nbformat.writes(nb)  # built from the release, not the source


def test_edits_are_data_and_a_notebook_can_be_a_fixture(tmp_path: Path) -> None:
    root = minicourse.make(tmp_path)
    course.generate_releases(root)
    _write(
        root,
        "test-deleted.toml",
        "why = 'deleted the test'\nfull_marks = true\nedits = [['delete_cell', 'test_sgd_step']]\n",
    )
    nb = nbformat.read(root / "release" / minicourse.NAME / f"{minicourse.NAME}.ipynb", as_version=4)
    nb.metadata["grader_fixture"] = {"why": "handed in as is", "fails": {"test_sgd_step": "NotImplementedError"}}
    nbformat.write(nb, root / "source" / minicourse.NAME / "fixtures" / "untouched.ipynb")
    assignment = fixtures.Assignment(root, minicourse.NAME)
    deleted, untouched = fixtures.load(assignment)
    assert "test_sgd_step" not in {
        c.metadata.get("nbgrader", {}).get("grade_id") for c in fixtures.build(assignment, deleted).cells
    }
    assert untouched.notebook is not None and untouched.fails == {"test_sgd_step": "NotImplementedError"}
    assert "grader_fixture" not in fixtures.build(assignment, untouched).metadata


@pytest.mark.parametrize(
    ("name", "text", "sentence"),
    [
        (
            "Grad_Not_Zeroed.toml",
            "why = 'x'\nfull_marks = true\n",
            "named by the behaviour it shows, in lower case with dashes",
        ),
        ("both.toml", "why = 'x'\nfull_marks = true\n[fails]\ntest_sgd_step = 'x'\n", "; it has both"),
        ("no-why.toml", "full_marks = true\n", "`why` is missing: one line saying what this student did"),
        ("typo.toml", "why = 'x'\nfull_mark = true\n", "unknown key(s) ['full_mark']"),
        (
            "edit.toml",
            "why = 'x'\nfull_marks = true\nedits = [['remove', 'a']]\n",
            "an edit is a list [name, arguments...]",
        ),
        (
            "cell.toml",
            "why = 'x'\nfull_marks = true\n[solutions]\nsgd = 'pass'\n",
            "[solutions] names sgd, which is not an answer cell",
        ),
        (
            "meta.ipynb",
            json.dumps(nbformat.v4.new_notebook()),
            'declares what it must score in its metadata, under "grader_fixture"',
        ),
    ],
)
def test_a_mistake_in_a_fixture_file_is_one_sentence_naming_the_file(
    tmp_path: Path, name: str, text: str, sentence: str
) -> None:
    root = minicourse.make(tmp_path)
    path = _write(root, name, text)
    with pytest.raises(AuthoringError) as raised:
        fixtures.load(fixtures.Assignment(root, minicourse.NAME))
    assert str(raised.value).startswith(str(path))
    assert sentence in str(raised.value)
