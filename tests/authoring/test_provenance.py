"""What a validation report records of its source, and how it tells it is out of date: real files, real git.

Each test writes the small course (``minicourse``) into a temporary folder and, where it says so, makes it
a git repository with a first commit. Git reads no user or system configuration here.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import nbformat

from grader.authoring import provenance, report
from grader.authoring.provenance import Change

from . import minicourse

NOTEBOOK = f"source/{minicourse.NAME}/{minicourse.NAME}.ipynb"
ENV = dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")


def git(root: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=root, env=ENV, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def committed_course(tmp_path: Path) -> Path:
    root = minicourse.make(tmp_path / "course")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=Ins", "-c", "user.email=ins@example.org", "commit", "-q", "-m", "gd_step")
    return root


def edit_intro(root: Path, text: str) -> None:
    path = root / NOTEBOOK
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].source = text
    nbformat.write(nb, path)


def test_a_clean_checkout_records_its_commit_and_a_digest_of_each_source_file(tmp_path: Path) -> None:
    root = committed_course(tmp_path)
    (root / "source" / minicourse.NAME / ".ipynb_checkpoints").mkdir()
    (root / "source" / minicourse.NAME / ".ipynb_checkpoints" / "gd_step-checkpoint.ipynb").write_text("{}")
    source = provenance.read(root, minicourse.NAME)
    assert source.commit == git(root, "rev-parse", "--short", "HEAD") and len(source.commit) >= 7
    assert source.dirty is False  # Jupyter's autosave is untracked, but no part of the source
    assert source.sources == {NOTEBOOK: hashlib.sha256((root / NOTEBOOK).read_bytes()).hexdigest()}
    assert report.made_from(source.commit, source.dirty) == f"commit {source.commit}"


def test_an_edited_or_untracked_source_file_makes_the_checkout_dirty(tmp_path: Path) -> None:
    root = committed_course(tmp_path)
    (root / "README.md").write_text("elsewhere in the course: not this assignment's source\n")
    assert provenance.read(root, minicourse.NAME).dirty is False
    edit_intro(root, "# One step of gradient descent")
    edited = provenance.read(root, minicourse.NAME)
    assert edited.dirty is True
    assert report.made_from(edited.commit, edited.dirty) == f"commit {edited.commit} with uncommitted changes"
    git(root, "checkout", "--", NOTEBOOK)
    fixtures = root / "source" / minicourse.NAME / "fixtures"
    fixtures.mkdir()
    (fixtures / "correct.toml").write_text('why = "the solution"\nfull_marks = true\n')
    assert provenance.read(root, minicourse.NAME).dirty is True


def test_outside_git_there_is_no_commit_and_nothing_is_called_dirty(tmp_path: Path) -> None:
    root = minicourse.make(tmp_path / "course")
    source = provenance.read(root, minicourse.NAME)
    assert (source.commit, source.dirty) == ("", False) and list(source.sources) == [NOTEBOOK]
    assert report.made_from("", False) == ""


def test_changes_since_a_report_name_each_file_edited_added_or_removed(tmp_path: Path) -> None:
    root = committed_course(tmp_path)
    fixtures = root / "source" / minicourse.NAME / "fixtures"
    fixtures.mkdir()
    (fixtures / "old.toml").write_text('why = "an old fixture"\nfull_marks = true\n')
    made = {"assignment": minicourse.NAME, "sources": provenance.read(root, minicourse.NAME).sources}
    assert provenance.changes(root, minicourse.NAME, made) == ()
    edit_intro(root, "# Changed after the report")
    (fixtures / "old.toml").unlink()
    (fixtures / "new.toml").write_text('why = "a new fixture"\nfull_marks = true\n')
    assert provenance.changes(root, minicourse.NAME, made) == (
        Change(NOTEBOOK, "edited"),
        Change(f"source/{minicourse.NAME}/fixtures/new.toml", "added"),
        Change(f"source/{minicourse.NAME}/fixtures/old.toml", "removed"),
    )


def test_a_report_from_before_the_digests_is_compared_by_modification_time(tmp_path: Path) -> None:
    root = minicourse.make(tmp_path / "course")
    path = root / NOTEBOOK
    old = {"assignment": minicourse.NAME, "when": "2026-01-05T10:00:00+00:00"}  # as grader validate wrote it
    os.utime(path, (time.time(), 1767600000 - 60))  # a minute before the report (2026-01-05T08:00:00Z)
    assert provenance.changes(root, minicourse.NAME, old) == ()
    os.utime(path, (time.time(), 1767607200 + 60))  # a minute after it
    assert provenance.changes(root, minicourse.NAME, old) == (Change(NOTEBOOK, "modified after the report"),)


def test_the_dashboard_reads_the_stored_report_with_its_changes(tmp_path: Path) -> None:
    root = committed_course(tmp_path)
    stored = {"assignment": minicourse.NAME, "sources": provenance.read(root, minicourse.NAME).sources}
    json_path = report.paths(root, minicourse.NAME)[0]
    assert report.shown(root, minicourse.NAME) is None
    json_path.parent.mkdir()
    json_path.write_text(json.dumps(stored))
    now = report.shown(root, minicourse.NAME)
    assert now is not None and now.report == stored and now.changed == ()
    edit_intro(root, "# Edited")
    later = report.shown(root, minicourse.NAME)
    assert later is not None and later.changed == (Change(NOTEBOOK, "edited"),)
