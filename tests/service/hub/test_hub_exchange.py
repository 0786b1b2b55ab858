"""The stock student commands in a fresh folder, inside a "single-user server": only $JUPYTERHUB_API_TOKEN.

``nbgrader list`` in a folder without an ``nbgrader_config.py`` used nbgrader's default exchange, which needs
``/usr/local/share/nbgrader/exchange``: nbgrader reads config from the current folder and the Jupyter config
path only. The student config therefore goes in a Jupyter config directory (``~/.jupyter``, or
``/etc/jupyter`` in the single-user image; here ``$JUPYTER_CONFIG_DIR``), and works from any folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ..conftest import Server
from .conftest import COURSE, Hub

STUDENT_CONFIG = f"""c = get_config()
c.CourseDirectory.course_id = "{COURSE}"
c.ExchangeFactory.exchange = "grader.exchange.GraderExchange"
c.ExchangeFactory.fetch_assignment = "grader.exchange.GraderFetchAssignment"
c.ExchangeFactory.submit = "grader.exchange.GraderSubmit"
c.ExchangeFactory.list = "grader.exchange.GraderList"
c.ExchangeFactory.fetch_feedback = "grader.exchange.GraderFetchFeedback"
"""


def nbgrader(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "nbgrader"), *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADER_", "JUPYTER"))}
    return dict(env, **extra)


def test_without_config_nbgrader_falls_back_to_its_shared_folder(tmp_path: Path) -> None:
    """The cause: no config found, so nbgrader's default exchange and its /usr/local/share directory."""
    folder = tmp_path / "work"
    folder.mkdir()
    result = nbgrader(folder, clean_env(JUPYTER_CONFIG_DIR=str(tmp_path / "empty")), "list")
    assert result.returncode != 0
    assert "Unwritable directory" in result.stdout + result.stderr


def test_a_student_lists_fetches_and_submits_with_the_hub_token(
    tmp_path: Path, hub_and_service: tuple[Hub, Server]
) -> None:
    hub, srv = hub_and_service
    config_dir = tmp_path / "jupyter-config"
    config_dir.mkdir()
    (config_dir / "nbgrader_config.py").write_text(STUDENT_CONFIG)
    folder = tmp_path / "fresh"
    folder.mkdir()
    env = clean_env(
        JUPYTER_CONFIG_DIR=str(config_dir), GRADER_URL=srv.url, JUPYTERHUB_API_TOKEN=hub.user_token("alice")
    )
    listed = nbgrader(folder, env, "list")
    output = listed.stdout + listed.stderr
    assert listed.returncode == 0, output
    assert "Unwritable" not in output and "ps2_autograd" in output
    fetched = nbgrader(folder, env, "fetch_assignment", "ps2_autograd")
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    submitted = nbgrader(folder, env, "submit", "ps2_autograd")
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    assert [s.assignment for s in srv.store.submissions(student="alice")] == ["ps2_autograd"]
