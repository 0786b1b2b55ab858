"""The backups page starts with the default, SQLite, and its commands work on a real course.

The page's first section is SQLite's (the gradebook a course gets unless told otherwise, ``course.gradebook_url``),
PostgreSQL's comes after it. Its first shell block, run as written in a course with a real SQLite gradebook
and a submitted notebook, makes a copy of the gradebook that opens with its rows, and an archive of the
notebooks.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from grader import course

PAGE = Path(__file__).resolve().parents[2] / "docs" / "operators" / "backups.md"


def test_sqlite_the_default_comes_first_then_postgresql(tmp_path: Path) -> None:
    assert course.gradebook_url(tmp_path) == f"sqlite:///{tmp_path / 'gradebook.db'}"  # the default
    text = PAGE.read_text()
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[0] == "SQLite (the default)" and headings[1].startswith("PostgreSQL")
    intro = text.split("\n## ", 1)[0]
    assert "PostgreSQL" not in intro, "the page opens with PostgreSQL"
    assert text.index("sqlite3 gradebook.db") < text.index("pg_dump")


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="the sqlite3 command is not installed")
def test_the_sqlite_commands_back_up_the_gradebook_and_the_notebooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nbgrader.api import Gradebook

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")  # nbgrader's alembic
    with Gradebook(course.gradebook_url(tmp_path)) as gradebook:
        gradebook.add_student("ada", first_name="Ada")
    notebook = tmp_path / "service-data" / "submissions" / "ada" / "ps1_tensors" / "first.ipynb"
    notebook.parent.mkdir(parents=True)
    notebook.write_text('{"cells": []}')
    block = re.search(r"```bash\n(.*?)```", PAGE.read_text(), re.S)
    assert block is not None and "sqlite3" in block.group(1)
    subprocess.run(["bash", "-euc", block.group(1)], cwd=tmp_path, check=True, timeout=60)
    day = dt.date.today().isoformat()
    with sqlite3.connect(tmp_path / f"gradebook-{day}.db") as copy:
        assert copy.execute("select first_name from student where id = 'ada'").fetchall() == [("Ada",)]
    with tarfile.open(tmp_path / f"service-data-{day}.tar.gz") as archive:
        assert "service-data/submissions/ada/ps1_tensors/first.ipynb" in archive.getnames()
