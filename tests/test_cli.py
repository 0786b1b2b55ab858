"""The ``grader`` commands that work without a server: check, roster, tokens."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader import course
from grader.service.records.store import Store
from grader.student import check
from tests.service.conftest import free_port

GRADER = str(Path(sys.executable).parent / "grader")
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "submissions"


def run(*args: str, root: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, GRADER_COURSE_ROOT=str(root)) if root else dict(os.environ)
    return subprocess.run([GRADER, *args], env=env, capture_output=True, text=True, timeout=300)


def test_check_runs_the_visible_tests_locally(tmp_path: Path) -> None:
    nb = nbformat.read(FIXTURES / "ps2_autograd" / "hard-coded.ipynb", as_version=4)
    for cell in nb.cells:  # break the visible test of one task, too
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "mean_square_loss":
            cell.source = "def mean_square_loss(x):\n    return float((x * x).mean())"
    path = tmp_path / "ps2_autograd.ipynb"
    nbformat.write(nb, path)
    proc = run("check", str(path))
    assert proc.returncode == 1, proc.stderr
    assert "PASS test_cubic_slope (3 points)" in proc.stdout  # hard-coding passes the visible test
    assert "FAIL test_mean_square_loss_value (3 points)" in proc.stdout
    assert "visible test cells pass. Hidden tests run only when you submit." in proc.stdout
    assert "BEGIN HIDDEN" not in proc.stdout


def test_check_passes_a_correct_notebook_and_refuses_a_missing_file(tmp_path: Path) -> None:
    proc = run("check", str(FIXTURES / "ps1_tensors" / "correct.ipynb"))
    assert proc.returncode == 0 and "16/16 visible test cells pass" in proc.stdout
    missing = run("check", str(tmp_path / "nope.ipynb"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("homework.py", b"def describe(t):\n    return {}\n", "the file is not valid JSON"),
        ("empty.ipynb", b"", "the file is empty (0 bytes)"),
        ("cut.ipynb", (FIXTURES / "ps1_tensors" / "correct.ipynb").read_bytes()[:500], "it ends early, as if cut off"),
    ],
)
def test_check_on_a_file_that_is_not_a_notebook_answers_with_one_sentence(
    tmp_path: Path, name: str, data: bytes, says: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    proc = run("check", str(path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = [line for line in proc.stderr.splitlines() if not line.startswith("grader: course ")]
    assert line.startswith(f"grader check: {path} is not a notebook this course can check: ") and says in line, line
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_check_on_a_notebook_without_test_cells_says_so_and_no_kernel_warning_is_shown(tmp_path: Path) -> None:
    path = tmp_path / "scratch.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), path)
    proc = run("check", str(path))
    assert proc.returncode == 1 and "0/0" not in proc.stdout
    assert proc.stdout.strip() == check.NO_TESTS
    assert "without encryption" not in proc.stderr and "TCP" not in proc.stderr, proc.stderr
    assert not [p for p in tmp_path.iterdir() if p.name != "scratch.ipynb"], "check left files next to the notebook"


def test_check_agrees_with_the_graders_on_logging_and_warnings(tmp_path: Path) -> None:
    """A correct answer that logs or warns passes ``grader check`` as it passes grading (stdout, IgnorePattern)."""
    nb = nbformat.read(FIXTURES / "ps1_tensors" / "correct.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "describe":
            cell.source = (
                "import logging, warnings\n"
                "def describe(t):\n"
                "    logging.warning('describing a tensor')\n"
                "    warnings.warn('just so you know')\n"
                "    return {'shape': tuple(t.shape), 'dtype': t.dtype, 'device': t.device,"
                " 'requires_grad': t.requires_grad}"
            )
    path = tmp_path / "ps1_tensors.ipynb"
    nbformat.write(nb, path)
    proc = run("check", str(path))
    assert proc.returncode == 0, proc.stdout
    assert "PASS test_describe (2 points)" in proc.stdout


@pytest.fixture
def scratch_course(tmp_path: Path) -> Path:
    """A fresh course whose (empty) database got the service's tables from ``grader db upgrade``."""
    root = course.copy_course(tmp_path / "course")
    upgraded = run("db", "upgrade", root=root)
    assert upgraded.returncode == 0 and "service schema: empty -> " in upgraded.stdout, upgraded.stderr
    return root


def test_a_command_on_a_database_without_the_service_tables_says_what_to_run(tmp_path: Path) -> None:
    root = course.copy_course(tmp_path / "course")
    proc = run("tokens", "issue", "tara", root=root)
    assert proc.returncode == 2
    assert "has no grading service tables yet: start `grader serve` once" in proc.stderr
    assert proc.stdout == ""


def test_roster_adds_students_to_the_gradebook_and_issues_tokens(scratch_course: Path) -> None:
    from nbgrader.api import Gradebook

    roster = scratch_course / "roster.csv"
    roster.write_text("id,first_name,last_name,email\nada,Ada,Lovelace,ada@example.org\nalan,Alan,Turing,\n")
    proc = run("roster", str(roster), root=scratch_course)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == "student_id,token" and [line.split(",")[0] for line in lines[1:]] == ["ada", "alan"]
    store = Store(course.gradebook_url(scratch_course))
    token = lines[1].split(",")[1]
    user = store.user_for_token(token)
    assert user is not None and (user.id, user.role) == ("ada", "student")
    with Gradebook(course.gradebook_url(scratch_course)) as gradebook:
        ada = gradebook.find_student("ada")
        assert (ada.first_name, ada.last_name, ada.email) == ("Ada", "Lovelace", "ada@example.org")
    revoke = run("tokens", "revoke", "ada", root=scratch_course)
    assert "ada: 1 token(s) revoked" in revoke.stdout
    assert store.user_for_token(token) is None


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("name\nada\n", "must name the columns, with 'id'"),
        ("id\nada\nada\n", "duplicate ids ['ada']"),
        ("id\n../etc\n", "may not contain"),
        ("id,email\n,x@y\n", "line 2: empty id"),
    ],
)
def test_bad_roster_is_refused_whole(scratch_course: Path, text: str, error: str) -> None:
    roster = scratch_course / "roster.csv"
    roster.write_text(text)
    proc = run("roster", str(roster), root=scratch_course)
    assert proc.returncode == 2 and error in proc.stderr
    assert proc.stdout == ""


def test_tokens_issue_with_role(scratch_course: Path) -> None:
    proc = run("tokens", "issue", "tara", "--role", "ta", root=scratch_course)
    name, role, token = proc.stdout.split()
    assert (name, role) == ("tara", "ta")
    user = Store(course.gradebook_url(scratch_course)).user_for_token(token)
    assert user is not None and user.is_staff


def test_tokens_issue_for_someone_off_the_roster_warns_and_still_issues(scratch_course: Path) -> None:
    """A student's token for an id the gradebook does not list (a typo, a student not imported yet) works, as
    `grader serve`'s demo-student does, but `grader tokens issue` names them and `grader roster`; nothing else
    is written (the gradebook gains no student); staff tokens and students on the roster warn about nothing."""
    from nbgrader.api import Gradebook

    roster = scratch_course / "roster.csv"
    roster.write_text("id\nada\n")
    assert run("roster", str(roster), root=scratch_course).returncode == 0
    proc = run("tokens", "issue", "stranger", "ada", "nobdy", root=scratch_course)
    assert proc.returncode == 0, proc.stderr
    (line,) = [line for line in proc.stderr.splitlines() if not line.startswith("grader: course ")]
    assert line == (
        "grader tokens: warning: stranger, nobdy are not on the course roster (no such students in the gradebook); "
        "their tokens are issued and work, but check the spelling, or add them with `grader roster ROSTER.csv` "
        "(columns id,first_name,last_name,email)."
    )
    store = Store(course.gradebook_url(scratch_course))
    issued = [row.split("\t") for row in proc.stdout.splitlines()]
    assert [(name, role) for name, role, _ in issued] == [
        ("stranger", "student"),
        ("ada", "student"),
        ("nobdy", "student"),
    ]
    for name, _, token in issued:
        user = store.user_for_token(token)
        assert user is not None and user.id == name
    with Gradebook(course.gradebook_url(scratch_course)) as gradebook:
        assert [s.id for s in gradebook.students] == ["ada"]
    one = run("tokens", "issue", "stranger", root=scratch_course)
    assert one.returncode == 0 and one.stdout.startswith("stranger\tstudent\t")
    assert (
        "grader tokens: warning: stranger is not on the course roster (no such student in the gradebook); the token "
        "is issued and works, but check"
    ) in one.stderr
    for quiet in (("ada",), ("tara", "--role", "ta")):
        proc = run("tokens", "issue", *quiet, root=scratch_course)
        assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr


def test_demo_showcase_names_existing_fixture_submissions() -> None:
    from grader import demo

    assert set(demo.SHOWCASE) == set(course.assignments())
    for assignment, examples in demo.SHOWCASE.items():
        for example in examples:
            assert (demo.EXAMPLES / assignment / f"{example}.ipynb").exists(), f"{assignment}/{example}"


def test_worker_without_a_shared_database_says_what_to_give(tmp_path: Path) -> None:
    root = course.copy_course(tmp_path / "course")
    proc = run("worker", root=root)  # no --db-url: the course's own SQLite file, which other hosts cannot reach
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "grader: with a broker, workers on other machines must reach the gradebook: give a PostgreSQL database "
        "(--db-url postgresql+psycopg2://USER@HOST:5432/DB or GRADER_DB_URL), not SQLite"
    )
    proc = run("worker", "--db-url", "postgresql+psycopg2://postgres@127.0.0.1:1/nowhere", root=root)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        'grader: the database did not answer (connection to server at "127.0.0.1", port 1 failed: Connection '
        "refused): is it running, and is --db-url right?"
    )
    proc = run("serve", "--broker-url", "kafka://somewhere", root=root)
    assert proc.returncode == 2
    assert "the broker URL must be redis://HOST:PORT/DB or amqp://USER:PASSWORD@HOST:PORT/VHOST" in proc.stderr


def test_serve_and_worker_that_stop_at_start_up_leave_no_zygote_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both launch the course's zygote before readying the rest (its start-up overlaps theirs), so a
    failure after that must still close it: its process and its folder under $TMPDIR."""
    root = course.copy_course(tmp_path / "course")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    proc = run("worker", "--db-url", "postgresql+psycopg2://postgres@127.0.0.1:1/nowhere", root=root)
    assert proc.returncode == 2 and "the database did not answer" in proc.stderr, proc.stderr
    assert sorted(p.name for p in scratch.iterdir()) == []
    # serve, on a second start that finds the course secret gone (drawn values would change): refused
    Store(course.gradebook_url(root), create=True)
    monkeypatch.delenv("GRADER_VARIANT_SECRET", raising=False)
    proc = run("serve", "--port", str(free_port()), root=root)  # a free port: 8000 may be taken on this machine
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "has no course secret" in proc.stderr.strip().splitlines()[-1], proc.stderr
    assert sorted(p.name for p in scratch.iterdir()) == []


def test_every_command_finds_the_course_as_nbgrader_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``grader autograde`` inside a copy of the course graded the installed checkout's ``submitted/``
    (issue 16); now: ``--course``, else ``$GRADER_COURSE_ROOT``, else the current directory when it
    holds ``nbgrader_config.py``, else the installed course, and the command says which."""
    copy = course.copy_course(tmp_path / "course")
    course.generate_releases(copy, ["ps1_tensors"])
    course.place_submission(copy, "here-hana", "ps1_tensors", FIXTURES / "ps1_tensors" / "correct.ipynb")
    env = {k: v for k, v in os.environ.items() if k != "GRADER_COURSE_ROOT"}

    def grader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([GRADER, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)

    inside = grader("autograde", "ps1_tensors", cwd=copy)
    assert inside.returncode == 0, inside.stderr
    assert f"grader: course {copy.resolve()} (the current directory)" in inside.stderr
    assert (copy / "autograded" / "here-hana" / "ps1_tensors" / "ps1_tensors.ipynb").exists()

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    explicit = grader("--course", str(copy), "release", "ps1_tensors", cwd=elsewhere)
    assert explicit.returncode == 0, explicit.stderr
    assert f"grader: course {copy.resolve()} (--course)" in explicit.stderr
    monkeypatch.delenv("GRADER_COURSE_ROOT", raising=False)
    assert course.locate(cwd=elsewhere) == (course.REPO_ROOT, "the installed course")
    assert course.locate(cwd=copy) == (copy.resolve(), "the current directory")
    monkeypatch.setenv("GRADER_COURSE_ROOT", str(elsewhere))
    assert course.locate(cwd=copy) == (elsewhere.resolve(), "$GRADER_COURSE_ROOT")
    assert course.locate(copy, cwd=elsewhere) == (copy.resolve(), "--course")


def test_tokens_list_shows_who_holds_which_token_never_the_secret(scratch_course: Path) -> None:
    issued = run("tokens", "issue", "tom", "--role", "ta", "--label", "lab 3", "--expires", "12h", root=scratch_course)
    assert issued.returncode == 0, issued.stderr
    secret = issued.stdout.split()[2]
    run("tokens", "issue", "uma", "--expires", "2099-01-31", root=scratch_course)
    listed = run("tokens", "list", root=scratch_course)
    assert listed.returncode == 0, listed.stderr
    assert secret not in listed.stdout
    header, *rows = listed.stdout.strip().splitlines()
    assert header.split() == ["id", "user", "role", "label", "created", "expires", "state"]
    tom = next(row for row in rows if " tom " in row)
    assert " ta " in tom and "lab 3" in tom and tom.endswith("active")
    uma = next(row for row in rows if " uma " in row)
    assert "2099-02-01 00:00" in uma and uma.endswith("active")
    ident = tom.split()[0]
    revoked = run("tokens", "revoke", "--id", ident, root=scratch_course)
    assert revoked.returncode == 0 and revoked.stdout.strip() == f"token {ident} of tom revoked", revoked.stderr
    assert next(
        row for row in run("tokens", "list", root=scratch_course).stdout.splitlines() if " tom " in row
    ).endswith("revoked")
    assert Store(course.gradebook_url(scratch_course)).user_for_token(secret) is None


@pytest.mark.parametrize(
    ("expires", "says"),
    [
        ("soon", "--expires takes a number of days or hours (30d, 12h) or a date (2027-01-31), not 'soon'"),
        ("2001-01-01", "--expires '2001-01-01' is in the past"),
        ("0d", "--expires '0d' must be in the future"),
    ],
)
def test_tokens_issue_with_a_bad_expiry_says_so_in_one_sentence(scratch_course: Path, expires: str, says: str) -> None:
    proc = run("tokens", "issue", "vic", "--expires", expires, root=scratch_course)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = [line for line in proc.stderr.splitlines() if not line.startswith("grader: course ")]
    assert line == f"grader tokens: {says}"


def _files(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_demo_grades_in_a_scratch_copy_makes_the_variant_secret_and_leaves_the_course_as_it_was(
    tmp_path: Path,
) -> None:
    """`grader demo` on a clone that never ran the service, whose gradebook lists one real student: the course
    secret is made (ps2 and ps3 give each student their own values), then every showcased example is graded in
    a scratch copy that the demo names and keeps; the course gains no student, no submitted/ or autograded/
    file, no rewritten release (nothing but the secret). Once the service has run, a lost secret stops the demo
    with one sentence, before any release is generated or copy made, instead of silently drawing new values."""
    from nbgrader.api import Gradebook

    from grader import demo

    root = course.copy_course(tmp_path / "course")
    course.put_bin_on_path()  # nbgrader makes a gradebook by running `alembic`
    with Gradebook(course.gradebook_url(root)) as gradebook:
        gradebook.add_student("ada")
    before = _files(root)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "GRADER_VARIANT_SECRET"}
    env.update(GRADER_COURSE_ROOT=str(root), TMPDIR=str(scratch))
    proc = subprocess.run([GRADER, "demo"], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Created the course secret that draws each student's variant values: {root / 'variant_secret.txt'}" in (
        proc.stdout
    )
    (copy,) = scratch.glob("grader-demo-*")
    assert (
        f"Grading in a scratch copy of the course, {copy}: this course's gradebook and folders stay as they are."
    ) in proc.stdout
    assert demo.where(copy) in proc.stdout
    after = _files(root)
    assert after.pop("variant_secret.txt")
    assert after == before
    with Gradebook(course.gradebook_url(root)) as gradebook:
        assert [s.id for s in gradebook.students] == ["ada"]
    for assignment, examples in demo.SHOWCASE.items():
        graded = {row.student for row in course.cell_scores(copy, assignment)}
        assert graded == set(examples), assignment
        for example in examples:
            assert (copy / "autograded" / example / assignment / f"{assignment}.ipynb").is_file()
        (correct,) = [
            line for line in proc.stdout.splitlines() if line.startswith(f"{assignment:<16} {'correct':<24} ")
        ]
        score, full = correct.split()[2].split("/")
        assert float(score) == float(full) > 0 and correct.endswith("  -"), correct
    (root / "variant_secret.txt").unlink()
    (root / "service-data").mkdir()
    again = subprocess.run([GRADER, "demo"], env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 2
    assert "This course gives students variants but has no course secret: restore" in again.stderr
    assert list(scratch.glob("grader-demo-*")) == [copy]  # no second copy
    assert "Generating the student releases" not in again.stdout  # stopped before any nbgrader run
