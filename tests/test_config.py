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
    assert config.AssignLatePenalties.plugin_class == "grader.plugins.late_policy.PercentPerDay"


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


def test_the_service_reads_nbgrader_s_release_directory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from grader.errors import ConfigurationError
    from grader.service import config as service_config

    root = course.copy_course(tmp_path / "course")
    assert service_config.load(root).release_directory == "release"
    with (root / "nbgrader_config.py").open("a") as f:
        f.write('\nc.CourseDirectory.release_directory = "published"\n')
    assert service_config.load(root).release_directory == "published"
    with pytest.raises(ConfigurationError, match="unknown GraderService setting"):
        service_config.load(root, release_directory="elsewhere")


def test_the_exchange_and_the_zygote_serve_the_configured_release_directory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``"release"`` was hard-coded in the exchange API and the zygote (issue 16)."""
    from grader.engine.forking.zygote import course_cells
    from grader.service import config as service_config
    from grader.service.web import exchange_api

    root = course.copy_course(tmp_path / "course")
    (root / "release").rename(root / "published")
    with (root / "nbgrader_config.py").open("a") as f:
        f.write('\nc.CourseDirectory.release_directory = "published"\n')
    assert course.release_directory(root) == root / "published"
    config = service_config.load(root)
    assert exchange_api.released(config) == course.assignments(root)
    payload = exchange_api.release_payload(config, "ps1_tensors")
    assert [f["path"] for f in payload["files"]] == ["ps1_tensors.ipynb"]
    release_only = "raise NotImplementedError()"  # the release's stubs: only the release folder has them
    assert any(release_only in cell for cell in course_cells(str(root)))


def test_the_late_policy_file_overrides_the_config_for_stock_nbgrader_too(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from grader.plugins import late_policy

    root = course.copy_course(tmp_path / "course")
    assert late_policy.current(root)["percent_per_day"] == 10.0
    late_policy.save(root, {"percent_per_day": "5", "unit": "hour", "grace_minutes": "0", "max_percent": "50"})
    loaded = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    assert (loaded.PercentPerDay.percent_per_day, loaded.PercentPerDay.unit) == (5.0, "hour")
    for bad, message in (
        ({"percent_per_day": "x"}, "percent per day must be a number"),
        ({"unit": "week"}, "unit must be 'day' or 'hour'"),
        ({"max_percent": "-1"}, "max percent must be between 0 and 100"),
        ({"colour": "red"}, "unknown late-policy setting"),
    ):
        values = {"percent_per_day": "5", "unit": "hour", "grace_minutes": "0", "max_percent": "50", **bad}
        with pytest.raises(late_policy.PolicyError, match=message):
            late_policy.save(root, values)
    assert late_policy.current(root)["max_percent"] == 50.0  # unchanged by the refused ones
