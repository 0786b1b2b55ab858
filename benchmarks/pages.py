"""How fast the dashboard's pages render with a full course's data, against stock nbgrader's own tools.

    .venv/bin/python benchmarks/pages.py                          # 500 students x 3 assignments x 5 attempts
    .venv/bin/python benchmarks/pages.py --students 5 --attempts 2   # what the test runs

Builds a course copy whose service holds STUDENTS x 3 assignments x ATTEMPTS graded submissions
(per-test results with the checks' misconception messages, arrivals spread around the deadline)
and whose nbgrader gradebook holds each student's grades, then times every page in-process
(Starlette's test client: rendering, queries and templates, no network) and, in the same run,
stock nbgrader on the same gradebook: ``nbgrader export`` (the command) and the data behind the
formgrader's students page (``NbGraderAPI.get_students``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from grader import course  # noqa: E402

MESSAGES = (
    "gradients differ: 3 of 3 elements, by up to 2.0\n\nLikely cause [grad-not-zeroed]: gradients accumulate.",
    "values differ\n\nLikely cause [sum-instead-of-mean]: the gradient is too large.",
    "the update was recorded\n\nLikely cause [update-outside-no-grad]: update inside no_grad.",
    "shape (3, 1) is not the expected (3,)",
)


def grade_cells(root: Path, assignment: str) -> list[tuple[str, float]]:
    """(grade id, points) of the assignment's test cells, from the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(course.gradebook_url(root)) as gradebook:
        notebook = gradebook.find_assignment(assignment).notebooks[0]
        return [(c.name, float(c.max_score)) for c in notebook.grade_cells if not c.cell_type == "markdown"]


def populate(root: Path, students: int, attempts: int, seed: int = 0) -> dict[str, int]:
    """The service's submissions and nbgrader's grades for a whole course, inserted in bulk."""
    import sqlalchemy as sa
    from nbgrader.api import Grade, Gradebook, SubmittedAssignment, SubmittedNotebook

    from grader.service.records import store as tables
    from grader.service.records.store import Store

    rng = random.Random(seed)
    url = course.gradebook_url(root)
    store = Store(url, create=True)  # a scratch course: its empty database gets the tables
    names = [f"s{i:04d}" for i in range(students)]
    assignments = course.assignments(root)
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    due = {a: now - dt.timedelta(days=7 * (len(assignments) - i)) for i, a in enumerate(assignments)}
    with Gradebook(url) as gradebook:
        for a in assignments:
            gradebook.update_or_create_assignment(a, duedate=due[a])
        for name in names:
            gradebook.update_or_create_student(name, first_name=f"First{name}", last_name=f"Last{name}")
    rows, jobs, finals = [], [], {}
    for a in assignments:
        cells = grade_cells(root, a)
        for name in names:
            for k in range(attempts):
                received = due[a] - dt.timedelta(hours=rng.uniform(-6, 72)) + dt.timedelta(hours=k)
                tests = []
                for grade_id, points in cells:
                    passed = rng.random() < 0.7 + 0.05 * k
                    message = "" if passed else rng.choice(MESSAGES)
                    tests.append(
                        {
                            "name": grade_id,
                            "points": points if passed else 0.0,
                            "max_points": points,
                            "passed": passed,
                            "message": message,
                        }
                    )
                score = sum(t["points"] for t in tests)
                late = received > due[a]
                penalty = round(score * 0.1, 2) if late else 0.0
                finals[(name, a)] = {t["name"]: t["points"] for t in tests}
                rows.append(
                    {
                        "student": name,
                        "assignment": a,
                        "received_at": received,
                        "path": "/dev/null",
                        "sha256": "0" * 64,
                        "status": "graded",
                        "reason": "",
                        "score": score,
                        "max_score": sum(p for _, p in cells),
                        "late_penalty": penalty,
                        "results": json.dumps(tests),
                        "graded_at": received + dt.timedelta(seconds=1),
                    }
                )
    with store.transaction() as conn:
        conn.execute(tables.submissions.insert(), rows)
        ids = [r.id for r in conn.execute(sa.select(tables.submissions.c.id))]
        jobs = [{"submission_id": i, "status": "graded", "attempts": 1, "enqueued_at": now, "error": ""} for i in ids]
        conn.execute(tables.jobs.insert(), jobs)
    # nbgrader's gradebook: every student's submission of every assignment, with the last attempt's points
    with Gradebook(url) as gradebook:
        for a in assignments:
            for name in names:
                gradebook.add_submission(a, name)
        session = gradebook.db
        query = (
            session.query(Grade, SubmittedAssignment.student_id, SubmittedNotebook.assignment_id)
            .join(SubmittedNotebook, SubmittedNotebook.id == Grade.notebook_id)
            .join(SubmittedAssignment, SubmittedAssignment.id == SubmittedNotebook.assignment_id)
        )
        by_id = {s.id: s.assignment.name for s in session.query(SubmittedAssignment)}
        for grade, student, submitted in query:
            grade.auto_score = finals.get((student, by_id[submitted]), {}).get(grade.name, 0.0)
        session.commit()
    return {"submissions": len(rows), "students": students, "assignments": len(assignments)}


def timed(fn, repeat: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(median, max) seconds of ``repeat`` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), max(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=500)
    parser.add_argument("--attempts", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5, help="timed renders per page (after one warm-up)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    from starlette.testclient import TestClient

    from grader.service import config as service_config
    from grader.service.records.store import Store
    from grader.service.web.app import create_app
    from grader.service.web.sessions import COOKIE

    base = Path(tempfile.mkdtemp(prefix="grader-pages-bench-"))
    root = course.copy_course(base / "course")
    course.generate_releases(root)
    started = time.monotonic()
    sizes = populate(root, args.students, args.attempts)
    print(
        f"{sizes['students']} students x {sizes['assignments']} assignments x {args.attempts} attempts = "
        f"{sizes['submissions']} graded submissions (built in {time.monotonic() - started:.0f} s)"
    )
    config = service_config.load(root)
    store = Store(config.db_url)
    staff, student = store.issue_token("bench-ta", "ta"), store.issue_token("s0001", "student")
    app = create_app(config, start_workers=False)
    pages = [
        ("gradebook", "/admin", staff),
        ("gradebook sorted by total", "/admin?sort=total&dir=desc", staff),
        ("gradebook filtered", "/admin?q=s00", staff),
        ("assignment (ps2_autograd)", "/admin/assignments/ps2_autograd", staff),
        ("student history", "/admin/students/s0001", staff),
        ("queue", "/admin/queue", staff),
        ("settings", "/admin/settings", staff),
        ("student's own page", "/me", student),
        ("Canvas CSV", "/admin/export/canvas.csv", staff),
        ("nbgrader CSV", "/admin/export/grades.csv", staff),
        ("Gradescope zip (ps2_autograd)", "/admin/export/ps2_autograd/gradescope.zip", staff),
    ]
    figures: dict[str, dict[str, float]] = {}
    with TestClient(app) as client:
        for label, path, token in pages:
            client.cookies.set(COOKIE, token)
            size = len(client.get(path).content)

            def fetch(path: str = path) -> None:
                response = client.get(path)
                assert response.status_code == 200, (path, response.status_code, response.text[:300])

            median, worst = timed(fetch, args.repeat)
            figures[label] = {"median_s": median, "max_s": worst, "bytes": size}

    # stock nbgrader on the same gradebook
    nbgrader = str(Path(sys.executable).parent / "nbgrader")

    def stock_export() -> None:
        subprocess.run(
            [nbgrader, "export", "--to", str(base / "stock.csv")],
            cwd=root,
            env=course.environment(root),
            check=True,
            capture_output=True,
        )

    median, worst = timed(stock_export, max(1, args.repeat // 2))
    figures["stock: nbgrader export (command)"] = {
        "median_s": median,
        "max_s": worst,
        "bytes": (base / "stock.csv").stat().st_size,
    }

    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    loaded = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    loaded.CourseDirectory.root = str(root)
    loaded.CourseDirectory.db_url = config.db_url
    api = NbGraderAPI(CourseDirectory(config=loaded), config=loaded)
    median, worst = timed(api.get_students, args.repeat)
    figures["stock: formgrader students data (NbGraderAPI.get_students)"] = {
        "median_s": median,
        "max_s": worst,
        "bytes": 0,
    }

    width = max(len(label) for label in figures)
    print(f"\n| {'page':<{width}} | median | slowest | size |")
    print(f"|{'-' * (width + 2)}|--------|---------|------|")
    for label, f in figures.items():
        size = f"{f['bytes'] / 1024:,.0f} KiB" if f["bytes"] else ""
        print(f"| {label:<{width}} | {f['median_s'] * 1000:5.0f} ms | {f['max_s'] * 1000:6.0f} ms | {size} |")
    if args.json:
        args.json.write_text(json.dumps({"sizes": sizes, "attempts": args.attempts, "pages": figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
