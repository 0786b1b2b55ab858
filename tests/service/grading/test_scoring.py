"""Scoring from the rows nbgrader has just written (issue 18, direction 1): the same grade as reading
them back from the gradebook and ``autograded/``, and not one SQL statement to get it.

In process, with the real engine (a warm zygote) and a real SQLite gradebook written by nbgrader's
own preprocessors. Each attempt is scored twice: from ``Execution.written`` and, with it removed,
by the read-back path (which is also the path of a run that did not complete).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator

import pytest

from grader.service.config import ServiceConfig
from grader.service.grading import execution, intake, scoring
from grader.service.records.models import Execution, Grade, Submission
from tests.fixtures.sql import sent_statements

from ..conftest import fixture_bytes
from .course import Graded, started

A = "ps2_autograd"
NOTEBOOK = "ps2_autograd"


class Course(Graded):
    def run(self, student: str, fixture: str) -> tuple[Submission, Execution]:
        accepted = intake.accept(self.store, self.config, student, A, fixture_bytes(A, fixture), confirm_late=True)
        submission = self.store.submission(accepted.id)
        assert submission is not None
        return submission, execution.run(
            self.config, self.engine, submission, NOTEBOOK, self.store.notebook(submission)
        )

    def both(self, submission: Submission, ran: Execution) -> tuple[Grade, Grade]:
        assert ran.completed and ran.written is not None
        fast = scoring.score(self.config, submission, NOTEBOOK, ran)
        read_back = scoring.score(self.config, submission, NOTEBOOK, dataclasses.replace(ran, written=None))
        return fast, read_back


@pytest.fixture(scope="module")
def grading(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Course]:
    with started(tmp_path_factory.mktemp("scoring"), A) as graded:
        yield Course(graded.root, graded.config, graded.store, graded.engine)


def _set_due(config: ServiceConfig, due: dt.datetime | None) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(config.db_url) as gradebook:
        gradebook.update_or_create_assignment(A, duedate=due)


@pytest.mark.parametrize(
    "fixture",
    ["correct", "grad-not-zeroed", "answer-cell-deleted", "cells-retyped-markdown", "hard-coded", "metadata-forged"],
)
def test_scores_from_the_rows_nbgrader_wrote_are_the_rows_read_back(grading: Course, fixture: str) -> None:
    submission, ran = grading.run(f"rows-{fixture}", fixture)
    fast, read_back = grading.both(submission, ran)
    assert fast == read_back
    assert fast.tests and len(fast.tests) == len({t.name for t in fast.tests})


def test_the_late_penalty_noted_is_the_one_nbgrader_stored(grading: Course) -> None:
    _set_due(grading.config, dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(hours=30))
    try:
        submission, ran = grading.run("rows-late", "correct")
    finally:
        _set_due(grading.config, None)
    fast, read_back = grading.both(submission, ran)
    assert fast == read_back
    assert fast.late_penalty == pytest.approx(0.2 * fast.score) and fast.late_penalty > 0  # two started days late


def test_a_manual_score_a_ta_gave_wins_as_in_the_gradebook(grading: Course) -> None:
    """``Grade.score`` is the gradebook's expression (manual over auto, plus extra credit); the noted
    score follows it when a TA has graded a cell by hand before the student resubmits."""
    from nbgrader.api import Gradebook

    submission, ran = grading.run("rows-manual", "grad-not-zeroed")
    first, _ = grading.both(submission, ran)
    failed = next(t for t in first.tests if not t.passed)
    with Gradebook(grading.config.db_url) as gradebook:
        grade = gradebook.find_grade(failed.name, NOTEBOOK, A, "rows-manual")
        grade.manual_score, grade.extra_credit = failed.max_points / 2, 0.25
        gradebook.db.commit()
    submission, ran = grading.run("rows-manual", "grad-not-zeroed")
    fast, read_back = grading.both(submission, ran)
    assert fast == read_back
    assert next(t for t in fast.tests if t.name == failed.name).points == failed.max_points / 2 + 0.25


def test_scoring_a_completed_run_reads_nothing_back(grading: Course, monkeypatch: pytest.MonkeyPatch) -> None:
    submission, ran = grading.run("rows-quiet", "correct")
    monkeypatch.setattr(scoring.nbformat, "read", _refuse)
    with sent_statements() as statements:
        grade = scoring.score(grading.config, submission, NOTEBOOK, ran)
    assert statements == []
    assert grade.score == grade.max_score > 0


def _refuse(*args: object, **kwargs: object) -> None:
    raise AssertionError("scoring read the autograded notebook back from disk")
