"""The similarity report of the service's submissions: each student's attempt that counts (``grader.similarity``).

Computed on demand and kept in memory while the set of counting attempts is unchanged, so the staff page,
its CSV and the pair pages of one assignment score the pairs once.
"""

from __future__ import annotations

import threading
from pathlib import Path

import sqlalchemy as sa

from ...similarity import compare, report, sources, variants
from ..config import ServiceConfig
from ..records import files, schema
from ..records.models import Submission
from ..records.store import Store
from ..rules.counting import counting_ids

WHERE = "the service's database (the attempt that counts of each student)"
Found = tuple[list[compare.Pair], tuple[variants.ForeignValues, ...], str]
_cache: dict[tuple[str, tuple[tuple[str, str], ...]], Found] = {}
_lock = threading.Lock()


def _counting(store: Store, config: ServiceConfig, assignment: str) -> list[Submission]:
    attempts = store.submissions(assignment=assignment)
    chosen = counting_ids(attempts, config.counting)
    return sorted((s for s in attempts if s.id in chosen), key=lambda s: s.student)


def counting_submissions(
    store: Store, config: ServiceConfig, assignment: str, students: set[str] | None = None
) -> list[sources.Submission]:
    """The answer code of each student's attempt that counts (of ``students`` only, when given)."""
    plate = sources.boilerplate(config.course_root, assignment)
    return [
        sources.parse(s.student, files.get(store.engine, s.location), plate)
        for s in _counting(store, config, assignment)
        if students is None or s.student in students
    ]


def has_submissions(db_url: str, assignment: str) -> bool:
    """Whether ``db_url`` holds the service's tables and at least one graded attempt of ``assignment``."""
    url = sa.engine.make_url(db_url)
    if url.get_backend_name() == "sqlite" and not (url.database and Path(url.database).is_file()):
        return False  # connecting would create an empty file
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if schema.revision(conn) is None:
                return False
        return any(s.status == "graded" for s in Store(db_url).submissions(assignment=assignment))
    finally:
        engine.dispose()


def build(store: Store, config: ServiceConfig, assignment: str, threshold: float) -> report.Report:
    """The report over the counting attempts; pairs scored once per set of counting attempts."""
    counted = _counting(store, config, assignment)
    sources.require_two([s.student for s in counted], assignment, WHERE)
    key = (assignment, tuple((s.student, s.sha256) for s in counted))
    with _lock:
        found = _cache.get(key)
    if found is None:
        plate = sources.boilerplate(config.course_root, assignment)
        listed = [sources.parse(s.student, files.get(store.engine, s.location), plate) for s in counted]
        found = (compare.pairs(listed, plate), *report.foreign_values(config.course_root, assignment, listed, plate))
        with _lock:
            _cache.clear()
            _cache[key] = found
    pairs, foreign, note = found
    above = tuple(p for p in pairs if p.score >= threshold)
    return report.Report(assignment, len(counted), threshold, above, len(pairs) - len(above), foreign, note)


def pair(store: Store, config: ServiceConfig, assignment: str, a: str, b: str) -> tuple[compare.CellView, ...]:
    """Both students' counting attempts side by side, the shared code marked."""
    plate = sources.boilerplate(config.course_root, assignment)
    by_student = sources.by_student(counting_submissions(store, config, assignment, {a, b}))
    missing = [s for s in (a, b) if s not in by_student]
    if missing:
        raise sources.SimilarityError(f"{assignment}: no graded attempt of {', '.join(missing)} to compare")
    return compare.side_by_side(by_student[a], by_student[b], plate)
