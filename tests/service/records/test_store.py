"""The store's reads of submissions: what a ``Submission`` holds, and nothing more.

The rules read every earlier attempt of a student at each upload (``deadlines.admit``) and each job
(``gradebook.record``); each graded attempt's per-test results are a few kB that none of them use.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.service.records.models import TestResult
from grader.service.records.store import Store
from grader.service.records.tables import submissions
from tests.fixtures.sql import sent_statements


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(f"sqlite:///{tmp_path / 'grader.db'}", create=True)


@pytest.fixture
def statements() -> Iterator[list[str]]:
    with sent_statements() as sent:
        yield sent


def _graded(store: Store, tmp_path: Path, when: dt.datetime) -> int:
    submission_id = store.add_submission("ann", "ps1", b'{"cells": []}', when, "database", tmp_path / "files")
    results = [
        {"name": f"test_{i}", "points": 1.0, "max_points": 1.0, "passed": True, "message": "x" * 500} for i in range(8)
    ]
    with store.transaction() as conn:
        conn.execute(
            submissions.update()
            .where(submissions.c.id == submission_id)
            .values(status="graded", score=8.0, max_score=8.0, results=json.dumps(results))
        )
    return submission_id


def test_reading_attempts_leaves_their_results_in_the_database(
    store: Store, tmp_path: Path, statements: list[str]
) -> None:
    ids = [_graded(store, tmp_path, dt.datetime(2026, 11, 30, 12, i)) for i in range(3)]
    statements.clear()
    attempts = store.submissions(student="ann", assignment="ps1")
    one = store.submission(ids[1])
    assert [s.id for s in attempts] == ids
    assert one is not None and (one.status, one.score, one.received_at) == (
        "graded",
        8.0,
        dt.datetime(2026, 11, 30, 12, 1),
    )
    assert len(statements) == 2
    assert all("grader_submissions.results" not in s for s in statements), statements


def test_the_results_are_read_where_they_are_asked_for(store: Store, tmp_path: Path) -> None:
    submission_id = _graded(store, tmp_path, dt.datetime(2026, 11, 30))
    found = store.results(submission_id)
    assert len(found) == 8 and isinstance(found[0], TestResult) and found[0].name == "test_0"
