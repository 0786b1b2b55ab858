"""Trusted time (issue 17): ``grader autograde`` says when a timestamp.txt looks written by hand.

nbgrader's late penalty trusts ``submitted/<student>/<assignment>/timestamp.txt``; a student who can
write there could move it before the due date. The batch grades as nbgrader does (the penalty is
nbgrader's), and warns, naming the student and both times, when the stamp is earlier than the
submission's own files were last modified, later than the stamp file was written, or earlier
than the release.
"""

from __future__ import annotations

import datetime as dt
import io
import os
from pathlib import Path

import pytest

from grader import course
from grader.engine.bookkeeping import stamps
from grader.engine.doors import batch
from tests.fixtures.spec import SUBMISSIONS

A = "ps2_autograd"
RELEASED = dt.datetime(2026, 9, 1, 12, 0, 0)
STAMPED = dt.datetime(2026, 9, 20, 10, 0, 0)
CORRECT = (SUBMISSIONS / A / "correct.ipynb").read_bytes()


def _seconds(moment: dt.datetime) -> float:
    return moment.replace(tzinfo=dt.UTC).timestamp()


def _submit(root: Path, student: str, stamped: dt.datetime, notebook_at: dt.datetime, stamp_at: dt.datetime) -> Path:
    """A submission whose timestamp.txt says ``stamped``, its files last modified at the other two times."""
    notebook = course.place_notebook(root, student, A, CORRECT, received_at=stamped)
    os.utime(notebook, (_seconds(notebook_at), _seconds(notebook_at)))
    os.utime(notebook.parent / "timestamp.txt", (_seconds(stamp_at), _seconds(stamp_at)))
    return notebook.parent


def test_an_honest_stamp_raises_no_doubt(tmp_path: Path) -> None:
    folder = _submit(tmp_path, "honest", STAMPED, STAMPED - dt.timedelta(minutes=30), STAMPED)
    assert stamps.timestamp_doubts(folder, "honest", RELEASED) == ()
    unstamped = course.place_notebook(tmp_path, "unstamped", A, CORRECT).parent
    assert stamps.timestamp_doubts(unstamped, "unstamped", RELEASED) == ()


def test_a_stamp_before_the_files_were_last_modified_is_doubted(tmp_path: Path) -> None:
    edited = STAMPED + dt.timedelta(days=2, hours=3)
    folder = _submit(tmp_path, "backdated", STAMPED, edited, edited)
    (doubt,) = stamps.timestamp_doubts(folder, "backdated", RELEASED)
    assert doubt.line() == (
        "Warning: backdated's timestamp.txt says 2026-09-20 10:00:00 UTC, but its files were last modified at "
        "2026-09-22 13:00:00 UTC, after it; the late penalty trusts timestamp.txt: check it before releasing grades."
    )


def test_a_stamp_later_than_the_stamp_file_itself_is_doubted(tmp_path: Path) -> None:
    written = STAMPED - dt.timedelta(hours=5)
    folder = _submit(tmp_path, "from-the-future", STAMPED, written, written)
    (doubt,) = stamps.timestamp_doubts(folder, "from-the-future", RELEASED)
    assert "timestamp.txt itself was written at 2026-09-20 05:00:00 UTC, before it" in doubt.line()


def test_a_stamp_before_the_release_is_doubted(tmp_path: Path) -> None:
    early = RELEASED - dt.timedelta(days=3)
    folder = _submit(tmp_path, "before-release", early, early, early)
    (doubt,) = stamps.timestamp_doubts(folder, "before-release", RELEASED)
    assert "says 2026-08-29 12:00:00 UTC, but the assignment was released at 2026-09-01 12:00:00 UTC" in doubt.line()


@pytest.mark.parametrize("text", ["", "not a time at all"])
def test_an_empty_or_unreadable_stamp_is_left_to_nbgrader(tmp_path: Path, text: str) -> None:
    folder = course.place_notebook(tmp_path, "odd", A, CORRECT).parent
    (folder / "timestamp.txt").write_text(text)
    assert stamps.timestamp_doubts(folder, "odd", RELEASED) == ()


def test_the_batch_warns_per_suspicious_student_and_still_grades_as_nbgrader_does(tmp_path: Path) -> None:
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [A])
    for notebook in (course.release_directory(root) / A).glob("*.ipynb"):
        os.utime(notebook, (_seconds(RELEASED), _seconds(RELEASED)))
    _submit(root, "honest", STAMPED, STAMPED - dt.timedelta(minutes=30), STAMPED)
    _submit(root, "backdated", STAMPED, STAMPED + dt.timedelta(days=2), STAMPED + dt.timedelta(days=2))
    result = batch.run(root, A, jobs=2, out=io.StringIO())
    assert not result.failed, result.summary()
    warnings = [line for line in result.summary().splitlines() if line.startswith("Warning: ")]
    assert warnings == [
        "Warning: backdated's timestamp.txt says 2026-09-20 10:00:00 UTC, but its files were last modified at "
        "2026-09-22 10:00:00 UTC, after it; the late penalty trusts timestamp.txt: check it before releasing grades."
    ]
    from nbgrader.api import Gradebook

    with Gradebook(course.gradebook_url(root)) as gradebook:  # a warning, not a verdict: nbgrader's grade stands
        for student in ("honest", "backdated"):
            submission = gradebook.find_submission(A, student)
            written = sum(n.max_written_score for n in submission.notebooks)  # points a person gives: 0 until then
            assert submission.timestamp == STAMPED and submission.score == submission.max_score - written


def test_a_time_no_submission_can_have_is_not_graded_and_says_why(tmp_path: Path) -> None:
    """Issue 52: a stamp of 2000-01-01 was graded, and that time recorded; with a due date a late notebook replayed
    with a forged time counted as on time. Such a stamp (before the release, or after the grading) is not used:
    that student is not graded, the command names them and the reason, and grades everyone else."""
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [A])
    _commit_release(root)
    forged = dt.datetime(2000, 1, 1)
    future = dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(days=3)
    _submit(root, "honest", STAMPED, STAMPED - dt.timedelta(minutes=30), STAMPED)
    _submit(root, "forger", forged, forged, forged)
    _submit(root, "time-traveller", future, future, future)
    result = batch.run(root, A, jobs=2, out=io.StringIO())
    assert not result.ok and [o.student for o in result.outcomes] == ["honest"]
    lines = result.summary().splitlines()
    assert lines[0].endswith("; 0 failed; 2 not graded, their time untrusted.")
    assert lines[1:3] == [
        "  forger: [NOT GRADED] its timestamp.txt says 2000-01-01 00:00:00 UTC, but the assignment was released at "
        "2026-09-01 12:00:00 UTC, after it: a time the late penalty cannot trust. Put the time the submission was "
        "collected in timestamp.txt (or remove the file to grade it without a time), then grade it again.",
        f"  time-traveller: [NOT GRADED] its timestamp.txt says {future:%Y-%m-%d %H:%M:%S} UTC, but it is graded now, "
        f"at {lines[2].split('graded now, at ')[1][:23]}, before that time: a time the late penalty cannot trust. Put "
        "the time the submission was collected in timestamp.txt (or remove the file to grade it without a time), "
        "then grade it again.",
    ]
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(course.gradebook_url(root)) as gradebook:  # no forged time recorded
        assert gradebook.find_submission(A, "honest").timestamp == STAMPED
        for student in ("forger", "time-traveller"):
            with pytest.raises(MissingEntry):
                gradebook.find_submission(A, student)
    trusted = batch.run(root, A, students=["forger"], jobs=1, out=io.StringIO(), trust_timestamps=True)
    assert trusted.ok  # the regrade's dry run places the service's own receipts and says so


def _commit_release(root: Path) -> None:
    """The course a git repository whose release was first committed at ``RELEASED``."""
    import subprocess

    env = {**os.environ, "GIT_AUTHOR_DATE": "2026-09-01T12:00:00Z", "GIT_COMMITTER_DATE": "2026-09-01T12:00:00Z"}
    env |= {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for command in (
        ["init", "-q"],
        ["add", "release"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "r"],
    ):
        subprocess.run(["git", *command], cwd=root, env=env, check=True, capture_output=True)


def test_the_release_time_of_a_course_in_git_is_its_first_commit_not_the_files_times(tmp_path: Path) -> None:
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [A])
    assert stamps.release_commit_time(root, A) is None  # not a git repository: file times prove nothing
    _commit_release(root)
    course.generate_releases(root, [A])  # released again: the files' times move, the first commit does not
    assert stamps.release_commit_time(root, A) == stamps.release_time(root, A) == RELEASED


def test_without_git_only_a_time_after_the_grading_is_refused(tmp_path: Path) -> None:
    """A copy of the course, or one released again, gives its release the time of that moment: a submission
    received before is no forgery, so it is graded (and warned about, as before)."""
    root = course.copy_course(tmp_path / "course")
    course.generate_releases(root, [A])
    _submit(root, "earlier", STAMPED, STAMPED, STAMPED)
    result = batch.run(root, A, jobs=1, out=io.StringIO(), borrow=False)
    assert result.ok and not result.untrusted, result.summary()


@pytest.mark.parametrize(
    "text",
    [
        "2026-09-20 10:00:00.123456 UTC",
        "2026-09-20 12:00:00 +0200",
        "2026-09-20 10:00:00 America/New_York",
        "2026-09-20T10:00:00Z",
        "2026-09-20 10:00:00",
        "2000-01-01 00:00:00 UTC",
    ],
)
def test_a_stamp_is_read_as_nbgrader_reads_it(text: str) -> None:
    """``stamps.parse_stamp`` reads ``timestamp.txt`` without importing nbgrader (the batch reads the stamps before
    its zygote is launched); it must give nbgrader's time for every form nbgrader takes."""
    from nbgrader.utils import parse_utc

    assert stamps.parse_stamp(text) == parse_utc(text)


def test_an_unreadable_stamp_is_none() -> None:
    assert stamps.parse_stamp("not a time at all") is None and stamps.parse_stamp("") is None
