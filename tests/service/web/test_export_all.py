"""``grader export gradescope`` without ``--assignment``: every assignment's zip, as the dashboard downloads it.

The command runs for real against the dashboard tests' service (real grading, real SQLite gradebook); each
zip it writes must hold what the assignment's download on the gradebook page holds, under the download's name.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from nbgrader.api import Gradebook

from grader import course

from ..conftest import A, Server
from .test_pages import browser

GRADER = str(Path(sys.executable).parent / "grader")


def export(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, GRADER_COURSE_ROOT=str(server.root))
    return subprocess.run(
        [GRADER, "export", "gradescope", *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_without_an_assignment_every_assignment_gets_its_zip(
    dashboard: tuple[Server, dict[str, str]], tmp_path: Path
) -> None:
    server, tokens = dashboard
    with Gradebook(course.gradebook_url(server.root)) as gradebook:
        assignments = sorted(a.name for a in gradebook.assignments)
    assert A in assignments and len(assignments) > 1
    folder = tmp_path / "gradescope"  # not there yet: the command makes it
    proc = export(server, "-o", str(folder))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{a}-gradescope-results.zip" for a in assignments)
    assert sorted(proc.stdout.splitlines()) == sorted(f"wrote {folder / p.name}" for p in folder.iterdir())
    with browser(server, tokens["ta"]) as client:
        for assignment in assignments:
            page = client.get(f"/admin/export/{assignment}/gradescope.zip")
            assert page.status_code == 200
            (name,) = re.findall(r'filename="([^"]+)"', page.headers["content-disposition"])
            assert members((folder / name).read_bytes()) == members(page.content), assignment
    assert members((folder / f"{A}-gradescope-results.zip").read_bytes()), "the graded assignment's zip is empty"


def test_without_an_assignment_it_needs_a_folder(dashboard: tuple[Server, dict[str, str]], tmp_path: Path) -> None:
    server, _ = dashboard
    said = (
        "grader export gradescope: without --assignment it writes one zip per assignment: name a folder "
        "for them with --output FOLDER"
    )
    to_stdout = export(server)
    assert to_stdout.returncode == 2 and to_stdout.stdout == ""
    assert said in to_stdout.stderr.splitlines()
    a_file = tmp_path / "grades.zip"
    a_file.write_bytes(b"kept")
    onto_a_file = export(server, "-o", str(a_file))
    assert onto_a_file.returncode == 2 and said in onto_a_file.stderr.splitlines()
    assert a_file.read_bytes() == b"kept"
