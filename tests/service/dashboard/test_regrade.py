"""A regrade meets a fault of ours (issue 52): the dry run lists the student apart with the reason, the real run
leaves the recorded score as it was. Real engine, real nbgrader, the real ``grader autograde`` of the dry run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from grader.service.dashboard import regrade
from grader.service.grading import intake
from grader.service.grading.pipeline import Pipeline
from grader.service.queue import leases

from ..conftest import fixture_bytes
from ..grading.course import Graded, started

A = "ps2_autograd"


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graded]:
    with started(tmp_path_factory.mktemp("regrade"), A) as graded:
        for student in ("steady-sue", "extended-ed"):
            accepted = intake.accept(graded.store, graded.config, student, A, fixture_bytes(A, "correct"))
            job = leases.claim(graded.store, None, "test", None, graded.config.max_attempts)
            assert job is not None and job.submission_id == accepted.id
            Pipeline(graded.store, graded.config, graded.engine).grade_job(job)
        yield graded


def test_a_student_who_cannot_be_regraded_is_listed_apart_and_keeps_the_recorded_score(course: Graded) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(course.config.db_url) as book:  # made by hand: `grader extension` refuses it (no due date)
        book.grant_extension(A, "extended-ed", minutes=24 * 60)
    (ed,) = course.store.submissions(student="extended-ed")
    assert ed.score == ed.max_score and ed.max_score
    run = regrade.dry_run(course.store, course.config, A, jobs=2)
    assert [c.student for c in run.failed] == ["extended-ed"] and run.changed == ()
    (failed,) = run.failed
    assert (failed.before, failed.after, failed.delta) == (ed.score, None, None)
    assert failed.problem.startswith(
        "[FAULT] not graded: a fault of the grader, not of the notebook; its gradebook rows are as they were: "
        "nbgrader's Autograde.init_assignment (the student's submission in the gradebook) raised TypeError: "
        "unsupported operand type(s) for +: 'NoneType' and 'datetime.timedelta'"
    )
    lines = regrade.report(run).splitlines()
    assert lines[0].startswith(f"Dry run of a regrade of {A}: 2 students, 0 would change")
    assert lines[1] == "1 student(s) could not be regraded; a regrade leaves their recorded score as it is:"
    assert lines[2].split()[:3] == ["extended-ed", str(ed.id), f"{ed.score:g}"]
    assert "could not be regraded: [FAULT] not graded" in lines[2]
    # for real: the job fails with the reason, the recorded score stays
    assert regrade.apply(course.store, course.config, A) == 2
    pipeline = Pipeline(course.store, course.config, course.engine)
    while (job := leases.claim(course.store, None, "test", None, course.config.max_attempts)) is not None:
        pipeline.grade_job(job)
    after = course.store.submission(ed.id)
    assert after is not None and (after.status, after.score, after.graded_at) == ("graded", ed.score, ed.graded_at)
    assert "init_assignment" in course.store.job_failures("extended-ed")[ed.id]
    (sue,) = course.store.submissions(student="steady-sue")
    assert sue.status == "graded" and sue.id not in course.store.job_failures("steady-sue")
