"""nbgrader_config.py: the course's single source of configuration."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from traitlets.config.loader import PyFileConfigLoader

from grader import course


@pytest.fixture(scope="module")
def config():  # type: ignore[no-untyped-def]
    return PyFileConfigLoader("nbgrader_config.py", path=str(course.REPO_ROOT)).load_config()


def test_course_identity_and_gradebook(config) -> None:  # type: ignore[no-untyped-def]
    assert config.CourseDirectory.course_id == "pytorch101"
    assert config.CourseDirectory.root == str(course.REPO_ROOT)
    assert config.CourseDirectory.db_url == f"sqlite:///{course.REPO_ROOT / 'gradebook.db'}"


def test_deliberate_grading_choices(config) -> None:  # type: ignore[no-untyped-def]
    assert config.OverwriteCells.add_missing_cells is True
    assert config.IgnorePattern.enabled is True
    assert config.GenerateAssignment.force is True
    assert config.Execute.timeout == 30
    assert config.AssignLatePenalties.plugin_class == "grader.late_policy.PercentPerDay"


def test_ignore_pattern_strips_python_warnings_and_nothing_else(config) -> None:  # type: ignore[no-untyped-def]
    pattern = re.compile(config.IgnorePattern.pattern)
    torch_warning = (
        "/tmp/ipykernel_4242/3141592653.py:4: UserWarning: Converting a tensor with requires_grad=True to a "
        "scalar may lead to unexpected behavior.\nConsider using tensor.detach() first.\n  return float(loss)\n"
    )
    assert pattern.search(torch_warning)
    assert pattern.search("x.py:1: DeprecationWarning: old\n")
    assert not pattern.search("Traceback (most recent call last):\n  File ...\nValueError: bad shape\n")
    assert not pattern.search("loss went up at step 3\n")


def test_environment_overrides_for_tests_and_deployments(tmp_path) -> None:  # type: ignore[no-untyped-def]
    code = (
        "from traitlets.config.loader import PyFileConfigLoader as L; "
        f"c = L('nbgrader_config.py', path={str(course.REPO_ROOT)!r}).load_config(); "
        "print(c.CourseDirectory.root, c.CourseDirectory.db_url)"
    )
    env = {"GRADER_COURSE_ROOT": str(tmp_path), "GRADER_DB_URL": "postgresql://db/course", "PATH": ""}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(tmp_path), "postgresql://db/course"]
