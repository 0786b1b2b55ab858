"""The sentence that says where a student's submission stands (``grader.service.web.progress``): the notice
on ``/me`` after an upload and its status request (issue 52). Over HTTP: ``test_pages.py``; the page
updating itself in Chromium: ``test_browser.py``."""

from __future__ import annotations

from grader.service.grading.pipeline import NOT_GRADED_YET, RETRYING
from grader.service.web import progress

P1 = "ps1_tensors"


def test_the_words_for_each_status() -> None:
    base = {"id": 7, "assignment": P1, "reason": ""}
    assert progress.words({**base, "status": "queued"}) == (
        f"Submission 7 of {P1} received; it is waiting to be graded."
    )
    retried = {**base, "status": "queued", "reason": RETRYING}
    assert progress.words(retried) == (
        f"Submission 7 of {P1} received; it is waiting to be graded. Your submission is stored; the grader had a "
        "problem on our side and will try again shortly."
    )
    assert progress.words({**base, "status": "running"}) == f"Submission 7 of {P1} received; it is being graded."
    graded = {**base, "status": "graded", "score": 35.0, "max_score": 37.0, "late_penalty": 0.0, "final_score": 35.0}
    assert progress.words(graded) == f"Submission 7 of {P1} is graded: 35 of 37 points."
    late = {**graded, "late_penalty": 3.5, "final_score": 31.5}
    assert progress.words(late) == f"Submission 7 of {P1} is graded: 31.5 of 37 points (35 less a late penalty of 3.5)."
    cut = {**graded, "reason": "Your notebook could not be graded to the end; tests that could not run score 0."}
    assert progress.words(cut) == (
        f"Submission 7 of {P1} is graded: 35 of 37 points. "
        "Your notebook could not be graded to the end; tests that could not run score 0."
    )
    failed = {**base, "status": "failed", "reason": NOT_GRADED_YET}
    assert progress.words(failed) == (
        f"Submission 7 of {P1}: Your submission is stored, but it could not be graded yet because of a problem on "
        "our side, not in your notebook. The course staff have been told and will grade it; you do not need to "
        "submit again."
    )
    assert progress.words({**base, "status": "failed"}) == (
        f"Submission 7 of {P1} is stored but could not be graded. Ask your TA to regrade it."
    )
    shown = progress.of(failed)
    assert shown.finished and shown.score is None and shown.reason == failed["reason"]
    assert not progress.of({**base, "status": "running"}).finished
