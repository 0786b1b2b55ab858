"""Grading one written question for a whole course in the real grading page, by keyboard, in Chromium.

    .venv/bin/python benchmarks/manual_grading.py                       # 300 students, SQLite and PostgreSQL
    .venv/bin/python benchmarks/manual_grading.py --students 20 --db sqlite   # a quick look

Builds a course copy whose nbgrader gradebook holds STUDENTS submissions of ps2_autograd (nbgrader's own
``add_submission``: every cell's grade and comment row, the written answers waiting for a person) and whose
``autograded/`` holds each student's notebook with a written answer to ``sum_gradient``: a third of the class
writes one of six common answers (graded once per group), the others their own. Then ``grader serve`` on it,
and a TA in Debian's Chromium grades the question from the first group to the last by keys only: an item's
key (sometimes two), a comment on every fifth group (``c``, the text, ``Escape``), ``s`` to save and go on.

Each action's server time is the service's own ``Server-Timing`` header (request to response headers, no
network or browser): *save* (the POST that writes the marks to nbgrader's gradebook), *next* (the page of the
next group it redirects to), *open* (the question's first page). Applying an item and typing a comment happen
in the page (no request); their cost is in the key presses, counted per answer. The same run compares stock
formgrader's way for the same work: one ``Gradebook.find_grade`` + ``find_comment`` + commit per student
(what its ``/formgrader/api/grade`` handler does for each cell it saves), timed in-process.
Target: p95 <= 100 ms per action, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from grader import course  # noqa: E402

A = "ps2_autograd"
CELL = "sum_gradient"
COMMON = (
    "The gradient is 2x: the mean divides by N = 4 and the sum does not.",
    "It is four times larger, 2x instead of x/2, because N = 4.",
    "2x",
    "dL/dx = 2x; with the mean it was 2x/4 = x/2.",
    "The sum does not divide by the number of elements, so each gradient is 4 times bigger.",
    "x/2, the same as before.",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build(root: Path, students: int, db_url: str | None, seed: int = 7) -> None:
    """The course copy with ``students`` autograded submissions of ``A`` (see the module's docstring)."""
    import nbformat
    from nbgrader.api import Gradebook

    from grader.variants import secret

    if not os.environ.get(secret.ENVIRONMENT):
        secret.create(root)  # the course's secret of per-student variants, as an instructor makes it
    course.generate_releases(root, [A], db_url=db_url)
    released = nbformat.read(root / "release" / A / f"{A}.ipynb", as_version=4)
    rng = random.Random(seed)
    url = course.gradebook_url(root, db_url)
    names = [f"s{i:04d}" for i in range(students)]
    with Gradebook(url) as gradebook, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbgrader's add_submission warns of its own session's autoflush
        for name in names:
            gradebook.update_or_create_student(name)
            submission = gradebook.add_submission(A, name)
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    if grade.cell.name == CELL:
                        grade.needs_manual_grade = True
            gradebook.db.commit()
    for number, name in enumerate(names):
        answer = rng.choice(COMMON) if number % 3 == 0 else f"Student {name}: the gradient is {rng.choice('234')}x."
        notebook = nbformat.from_dict(json.loads(json.dumps(released)))
        for cell in notebook.cells:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == CELL:
                cell.source = answer
        folder = root / "autograded" / name / A
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, folder / f"{A}.ipynb")


@contextlib.contextmanager
def serving(root: Path, db_url: str | None) -> Iterator[str]:
    port = _free_port()
    command = [str(Path(sys.executable).parent / "grader"), "serve", "--port", str(port)]
    command += ["--db-url", db_url] if db_url else []
    log = (root / "server.log").open("wb")
    process = subprocess.Popen(command, cwd=root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                    break
            if process.poll() is not None:
                raise SystemExit(f"grader serve exited: see {root / 'server.log'}")
            time.sleep(0.3)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
        log.close()


def _server_ms(response: object) -> float:
    value = response.headers.get("server-timing", "")  # type: ignore[attr-defined]
    return float(value.split("dur=")[1]) if "dur=" in value else float("nan")


def grade_by_keyboard(root: Path, url: str, token: str) -> dict[str, object]:
    """The TA's loop in Chromium; the server's time of each action and the keys pressed."""
    from playwright.sync_api import sync_playwright

    times: dict[str, list[float]] = {"open": [], "save": [], "next": []}
    keys = 0
    groups = answers = 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{url}/login")
        page.get_by_label("Your access token").fill(token)
        page.get_by_label("Your access token").press("Enter")
        page.wait_for_url(lambda u: "/login" not in u)
        seen: list[Any] = []

        def heard(response: Any) -> None:
            seen.append(response)

        page.on("response", heard)
        opened = page.goto(f"{url}/admin/assignments/{A}/written/{CELL}")
        assert opened is not None
        times["open"].append(_server_ms(opened))
        total = int(page.locator("#progress-text").inner_text().split(" of ")[1].split()[0])
        wall = time.perf_counter()
        for number in range(total):
            size = page.locator("#answer-heading").inner_text()
            answers += int(size.split()[0]) if "identical" in size else 1
            page.locator("body").focus()
            chosen = ["1"] if number % 2 else ["1", "2"]
            for key in chosen:
                page.keyboard.press(key)
            keys += len(chosen)
            if number % 5 == 0:
                page.keyboard.press("c")
                page.keyboard.type("See the rubric.")
                page.keyboard.press("Escape")
                keys += 2  # c and Escape; the comment's own letters are typing, not keys of the page
            seen.clear()
            with page.expect_navigation():
                page.keyboard.press("s")
            keys += 1
            times["save"].append(next(_server_ms(r) for r in seen if r.request.method == "POST"))
            times["next"].append(
                next(_server_ms(r) for r in seen if r.request.method == "GET" and "/written/" in r.url)
            )
            groups += 1
            page.wait_for_load_state("load")  # the key script has run
        wall = time.perf_counter() - wall
        status = page.locator("#progress-text").inner_text()
        browser.close()
    assert status.startswith(f"{total} of {total} groups graded"), status
    return {"times": times, "keys": keys, "groups": groups, "answers": answers, "wall_s": wall}


def stock_per_student(db_url: str, students: int) -> list[float]:
    """What formgrader's grade handler does for one cell of each student, timed in-process (ms each)."""
    from nbgrader.api import Gradebook

    found = []
    with Gradebook(db_url) as gradebook:
        for i in range(students):
            started = time.perf_counter()
            grade = gradebook.find_grade(CELL, A, A, f"s{i:04d}")
            comment = gradebook.find_comment(CELL, A, A, f"s{i:04d}")
            grade.manual_score = 1.0
            comment.manual_comment = "See the rubric."
            gradebook.db.commit()
            found.append((time.perf_counter() - started) * 1000)
    return found


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(v for v in values if v == v)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))] if ordered else float("nan")


@contextlib.contextmanager
def database(kind: str) -> Iterator[str | None]:
    if kind == "sqlite":
        yield None
        return
    import sqlalchemy as sa

    name = f"grader_bench_marking_{os.getpid()}"
    admin = sa.create_engine("postgresql+psycopg2://postgres@127.0.0.1:5432/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield f"postgresql+psycopg2://postgres@127.0.0.1:5432/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def run(kind: str, students: int) -> list[tuple[str, ...]]:
    from grader.service.records.store import Store

    with tempfile.TemporaryDirectory(prefix="bench-marking-") as tmp, database(kind) as db_url:
        root = course.copy_course(Path(tmp) / "course")
        built = time.perf_counter()
        build(root, students, db_url)
        built = time.perf_counter() - built
        url_db = course.gradebook_url(root, db_url)
        Store(url_db, create=True).engine.dispose()
        with serving(root, db_url) as url:
            token = Store(url_db).issue_token("bench-ta", "ta")
            found = grade_by_keyboard(root, url, token)
        stock = stock_per_student(url_db, students)
    times = found["times"]
    assert isinstance(times, dict)
    rows = []
    for action in ("open", "save", "next"):
        values = times[action]
        rows.append(
            (
                kind,
                f"{action} (grader serve)",
                str(len(values)),
                f"{statistics.median(values):.1f}",
                f"{_pct(values, 0.95):.1f}",
                f"{max(values):.1f}",
            )
        )
    rows.append(
        (
            kind,
            "one student's cell (stock nbgrader Gradebook, formgrader's way)",
            str(len(stock)),
            f"{statistics.median(stock):.1f}",
            f"{_pct(stock, 0.95):.1f}",
            f"{max(stock):.1f}",
        )
    )
    answers, groups = int(found["answers"]), int(found["groups"])  # type: ignore[call-overload]
    print(
        f"{kind}: {students} students, {answers} answers in {groups} groups; {found['keys']} key presses "
        f"({int(found['keys']) / answers:.2f} per answer, {int(found['keys']) / groups:.2f} per group); "  # type: ignore[call-overload]
        f"the whole question graded in {float(found['wall_s']):.1f} s of browser time; course built in {built:.0f} s",  # type: ignore[arg-type]
        flush=True,
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    print(f"benchmarks/manual_grading.py --students {args.students} --db {args.db} at {commit.stdout.strip()}")
    kinds = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    rows = [row for kind in kinds for row in run(kind, args.students)]
    header = ("database", "action", "n", "p50 ms", "p95 ms", "max ms")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print()
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
