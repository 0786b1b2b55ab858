"""grader.service.stats reads misconception explanations from the checks' messages (no torch in the web app)."""

from __future__ import annotations

from pathlib import Path

from grader.checks import misconceptions
from grader.service.dashboard.stats import causes, explanations
from grader.service.records.models import TestResult as Result


def test_explanations_come_from_the_messages_the_checks_wrote() -> None:
    message = (
        "dL/dx is a whole number of times too large.\n\n"
        f"{misconceptions.SUM_NOT_MEAN}\n\nTraceback (most recent call last): ..."
    )
    tests = (
        Result("test_grad", 0.0, 4.0, False, message),
        Result("test_value", 3.0, 3.0, True, f"{misconceptions.HARD_CODED}"),  # passed: not counted
    )
    assert causes(tests) == {"sum-instead-of-mean"}
    assert explanations(tests) == {"sum-instead-of-mean": " ".join(misconceptions.SUM_NOT_MEAN.explanation.split())}


def test_queue_latency_counts_first_gradings_not_regrades(tmp_path: Path) -> None:
    """A regrade's grade is recorded long after its upload: that is not how fast the queue is (issue 19)."""
    import datetime as dt

    from grader.service.dashboard.stats import queue_report
    from grader.service.queue.leases import claim
    from grader.service.records.models import Grade
    from grader.service.records.store import Store
    from grader.service.records.tables import now

    store = Store(f"sqlite:///{tmp_path / 'g.db'}", create=True)

    def grade_next() -> int:
        job = claim(store, None, "worker-1", None, max_attempts=3)
        assert job is not None
        store.finish_job(job, Grade(job.submission_id, 1.0, 1.0, 0.0))
        return job.submission_id

    uploaded = now()
    fresh = store.add_submission("ann", "ps1", b"{}", uploaded - dt.timedelta(seconds=30), "database", tmp_path)
    old = store.add_submission("ben", "ps1", b"{ }", uploaded - dt.timedelta(minutes=50), "database", tmp_path)
    assert {grade_next(), grade_next()} == {fresh, old}
    # both first gradings are within the hour: about 30 s and about 50 min after upload
    assert sorted(round(s / 60) for s in queue_report(store).latencies) == [1, 50]

    store.enqueue([old])  # a regrade of ben's attempt: graded again now, 50 minutes after its upload
    assert grade_next() == old
    latencies = queue_report(store).latencies
    assert len(latencies) == 1 and 30 <= latencies[0] < 60  # only ann's first grading counts
    regraded = store.submission(old)
    assert regraded is not None and regraded.status == "graded"  # the regrade did record its grade
