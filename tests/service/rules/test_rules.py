"""Each course rule is one function (issue 16): its behaviour, and that no other module recomputes it."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import grader
from grader.service.records.models import Submission
from grader.service.rules import counting, deadlines

SERVICE = Path(grader.__file__).parent / "service"
DUE = dt.datetime(2026, 3, 1, 12, 0)


def _attempt(n: int, score: float, penalty: float = 0.0, status: str = "graded") -> Submission:
    return Submission(n, "s", "a", DUE + dt.timedelta(hours=n), "", "", status, score=score, late_penalty=penalty)


def test_the_effective_due_date_is_the_due_date_moved_by_the_extension() -> None:
    assert deadlines.effective_due(None, dt.timedelta(days=2)) is None
    assert deadlines.effective_due(DUE, None) == DUE
    assert deadlines.effective_due(DUE, dt.timedelta(hours=5)) == DUE + dt.timedelta(hours=5)
    due = deadlines.effective_due(DUE, dt.timedelta(hours=5))
    assert not deadlines.is_late(DUE + dt.timedelta(hours=5), due)  # on the minute is on time, as nbgrader has it
    assert deadlines.is_late(DUE + dt.timedelta(hours=5, seconds=1), due)
    assert not deadlines.is_late(DUE + dt.timedelta(days=999), None)


def test_which_attempt_counts_latest_or_best_by_final_score() -> None:
    attempts = [_attempt(1, 9.0), _attempt(2, 10.0, penalty=2.0), _attempt(3, 0.0, status="failed")]
    assert counting.counting(attempts, "latest") == attempts[1]  # a failed attempt never counts
    assert counting.counting(attempts, "best") == attempts[0]  # 9 beats 10 less a 2-point penalty
    assert counting.counting([attempts[2]], "best") is None
    assert counting.final_score(10.0, 2.0) == 8.0 and counting.final_score(None, None) == 0.0
    other = Submission(4, "t", "a", DUE, "", "", "graded", score=1.0)
    ungraded = Submission(5, "u", "a", DUE, "", "", "failed")
    assert counting.counting_ids([*attempts, other, ungraded], "latest") == {2, 4}  # one per student with a grade
    assert counting.counting_ids([*attempts, other, ungraded], "best") == {1, 4}


def _sources_outside(rule: Path) -> dict[str, str]:
    return {
        str(p.relative_to(SERVICE)): p.read_text()
        for p in SERVICE.rglob("*.py")
        if p != rule and "migrations" not in p.parts
    }


def test_no_other_module_moves_a_due_date_by_an_extension() -> None:
    """Before, feedback.py and stats.py each added the extension themselves (and one forgot it)."""
    moved = re.compile(r"(due\w*|duedate)\s*\+\s*\(?\s*extension|extension\s*\+\s*\w*due")
    found = {path for path, text in _sources_outside(SERVICE / "rules" / "deadlines.py").items() if moved.search(text)}
    assert found == set()


def test_no_other_module_picks_the_attempt_that_counts() -> None:
    picks = re.compile(r"max\(\s*graded\b|key=lambda s: \(\(s\.score")
    found = {path for path, text in _sources_outside(SERVICE / "rules" / "counting.py").items() if picks.search(text)}
    assert found == set()
