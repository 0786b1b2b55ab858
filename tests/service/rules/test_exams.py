"""Timed exams: the settings, accommodations from a disability office's CSV, each student's end by the server's
clock, and what intake admits before and after it. The clock is each call's ``now`` (the server's), never a sleep.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.errors import ConfigurationError, ExamRefused, StudentError
from grader.service.records.store import Store
from grader.service.rules import exams

from ..conftest import fresh_database

A = "ps2_autograd"
OPENS = dt.datetime(2026, 12, 10, 9, 0)
SETTINGS = {A: {"opens": "2026-12-10T09:00", "closes": "2026-12-10T12:00", "duration_minutes": 90, "grace_minutes": 2}}
STUDENTS = {"ada", "bob", "cy", "dee"}


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        made = Store(f"sqlite:///{tmp_path / 'gradebook.db'}", create=True)
        yield made
        made.engine.dispose()
        return
    with fresh_database("grader_exams") as url:
        made = Store(url, create=True)
        yield made
        made.engine.dispose()


def test_the_settings_make_an_exam_and_each_unusable_one_is_a_sentence() -> None:
    (exam,) = exams.parse(SETTINGS).values()
    assert (exam.opens, exam.closes, exam.duration, exam.grace) == (
        OPENS,
        dt.datetime(2026, 12, 10, 12, 0),
        dt.timedelta(minutes=90),
        dt.timedelta(minutes=2),
    )
    assert (exam.checks_allowed, exam.scores_before_release, exam.honour) == (False, False, "")
    bad = {
        "ps1_tensors": {"opens": "2026-12-10T09:00", "closes": "2026-12-10T08:00"},
        "ps3_regression": {"opens": "tomorrow", "closes": "2026-12-10T08:00", "duration_minutes": 0, "late": 1},
    }
    with pytest.raises(ConfigurationError) as raised:
        exams.parse(bad)
    assert str(raised.value) == "; ".join(
        [
            "GraderService.exams['ps1_tensors'] needs duration_minutes, a number of minutes above 0 (it has None)",
            "GraderService.exams['ps1_tensors']: the window closes (2026-12-10 08:00) before it opens "
            "(2026-12-10 09:00)",
            "GraderService.exams['ps3_regression'] has unknown setting(s) ['late']; known: ['checks_allowed', "
            "'closes', 'duration_minutes', 'grace_minutes', 'honour', 'opens', 'scores_before_release']",
            "GraderService.exams['ps3_regression']['opens'] must be a date and time like 2026-12-10T09:00 (UTC), "
            "not 'tomorrow'",
            "GraderService.exams['ps3_regression'] needs duration_minutes, a number of minutes above 0 (it has 0)",
        ]
    )


def test_a_students_end_is_fixed_by_the_servers_clock_at_their_start(store: Store) -> None:
    exam = exams.parse(SETTINGS)[A]
    with pytest.raises(ExamRefused, match=r"^ps2_autograd opens at 2026-12-10 09:00 UTC: you cannot start it before"):
        exams.start(store, exam, "ada", OPENS - dt.timedelta(minutes=1))
    first = exams.start(store, exam, "ada", OPENS + dt.timedelta(minutes=10))
    assert first.ends_at == OPENS + dt.timedelta(minutes=100)
    again = exams.start(store, exam, "ada", OPENS + dt.timedelta(minutes=50))  # another machine: the same end
    assert again == first
    late = exams.start(store, exam, "bob", dt.datetime(2026, 12, 10, 11, 0))  # 90 minutes would pass the close
    assert late.ends_at == dt.datetime(2026, 12, 10, 12, 0)
    with pytest.raises(ExamRefused, match=r"^the window of ps2_autograd closed at 2026-12-10 12:00 UTC"):
        exams.start(store, exam, "cy", dt.datetime(2026, 12, 10, 12, 0))


def test_accommodations_from_a_csv_are_all_or_nothing_and_lengthen_the_clock(store: Store) -> None:
    table = exams.parse(SETTINGS)
    broken = "student_id,multiplier,extra_minutes,note\nada,1.5,0,DSO 17\nzed,2,0,\nbob,0,10,\ncy,x,-5,\n"
    with pytest.raises(StudentError) as raised:
        exams.import_csv(store, broken, STUDENTS, table)
    assert str(raised.value) == (
        "nothing was imported: line 3: no student 'zed' in the course. "
        "line 4: the multiplier must be a number above 0, not '0'. "
        "line 5: the multiplier must be a number above 0, not 'x'; extra_minutes must be 0 or more, not '-5'."
    )
    assert exams.accommodation(store, "ada", A) is None  # the good line was not stored either
    sent = (
        "\ufeffstudent_id,multiplier,extra_minutes,note,assignment,opens,closes\n"
        "ada,1.5,0,DSO 17,,,\n"
        "bob,1,15,another day,ps2_autograd,2026-12-11T09:00,2026-12-11T12:00\n"
    )
    assert exams.import_csv(store, sent, STUDENTS, table) == 2
    exam = table[A]
    ada = exams.start(store, exam, "ada", OPENS)
    assert ada.ends_at == OPENS + dt.timedelta(minutes=135)  # 90 x 1.5
    with pytest.raises(ExamRefused, match="opens at 2026-12-11 09:00 UTC"):  # bob sits it the next day
        exams.start(store, exam, "bob", OPENS)
    bob = exams.start(store, exam, "bob", dt.datetime(2026, 12, 11, 9, 0))
    assert bob.ends_at == dt.datetime(2026, 12, 11, 10, 45)  # 90 + 15
    later = dt.datetime(2026, 12, 11, 10, 0)
    assert exams.extend(store, exam, "bob", 10, "ta-one", later).ends_at == dt.datetime(2026, 12, 11, 10, 55)
    assert exams.events(store, A, "bob") == [
        (bob.started_at, "start", "bob", "ends 2026-12-11 10:45:00 UTC; "),
        (later, "extend", "ta-one", "+10 min: ends 2026-12-11 10:55:00 UTC"),
    ]
    with pytest.raises(StudentError, match=r"^give a number of minutes above 0, not 'ten'$"):
        exams.extend(store, exam, "bob", "ten", "ta-one", later)
    assert exams.started(store, A, "bob") == exams.Start(
        A, "bob", bob.started_at, dt.datetime(2026, 12, 11, 10, 55), None
    )


def test_a_submission_is_admitted_only_between_the_start_and_the_end_plus_grace(store: Store) -> None:
    table = exams.parse(SETTINGS)
    with pytest.raises(ExamRefused, match=r"^ps2_autograd is an exam: start it first"):
        exams.admit(store, table, "ada", A, OPENS)
    exams.start(store, table[A], "ada", OPENS)
    exams.admit(store, table, "ada", A, OPENS + dt.timedelta(minutes=91))  # within the grace
    with pytest.raises(ExamRefused) as raised:
        exams.admit(store, table, "ada", A, OPENS + dt.timedelta(minutes=92, seconds=1))
    assert [e[1] for e in exams.events(store, A, "ada")] == ["start", "refused"]
    assert str(raised.value) == (
        "your exam ps2_autograd ended at 2026-12-10 10:30:00 UTC (and its 2 minutes of grace): this submission "
        "was not accepted; what you submitted before is kept"
    )
    exams.admit(store, table, "ada", "ps1_tensors", OPENS)  # not an exam: the exam rule says nothing
