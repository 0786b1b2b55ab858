"""Which attempt counts: one rule (``GraderService.counting``), used by the gradebook stage, the
dashboard, the exports, regrades and the student's own pages."""

from __future__ import annotations

from ..config import ServiceConfig
from ..records.models import Submission
from ..records.store import Store


def final_score(score: float | None, late_penalty: float | None) -> float:
    """An attempt's final score: its raw score less its late penalty (nbgrader's plugin, ``plugins.late_policy``)."""
    return (score or 0.0) - (late_penalty or 0.0)


def counting(attempts: list[Submission], rule: str) -> Submission | None:
    """Of one student's attempts, the one whose grade counts: the latest graded one, or the best
    (``GraderService.counting``)."""
    graded = [s for s in attempts if s.status == "graded"]
    if not graded:
        return None
    if rule == "best":
        return max(graded, key=lambda s: (final_score(s.score, s.late_penalty), s.received_at))
    return max(graded, key=lambda s: s.received_at)


def counting_attempt(store: Store, config: ServiceConfig, student: str, assignment: str) -> Submission | None:
    """The attempt whose grade counts, from the store."""
    return counting(store.submissions(student=student, assignment=assignment), config.counting)


def counting_ids(attempts: list[Submission], rule: str) -> set[int]:
    """Of attempts by any students at any assignments, the ids of those that count: one per student and
    assignment that has a graded attempt."""
    groups: dict[tuple[str, str], list[Submission]] = {}
    for attempt in attempts:
        groups.setdefault((attempt.student, attempt.assignment), []).append(attempt)
    chosen = (counting(group, rule) for group in groups.values())
    return {s.id for s in chosen if s is not None}
