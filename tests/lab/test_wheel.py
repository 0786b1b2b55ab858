"""What ``pip install`` of the wheel puts in an environment for the Lab: grader.lab enabled, and the
prebuilt Lab extension (``grader/lab/labextension/``, built from ``labextension-src/``) as is."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import REPO

BUNDLE = REPO / "grader" / "lab" / "labextension"
SOURCE = REPO / "grader" / "lab" / "labextension-src"


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_wheel_installs_the_prebuilt_extension_and_enables_grader_lab(installed: Path) -> None:
    target = installed / "share" / "jupyter" / "labextensions" / "grader-course-grades"
    assert files(target) == files(BUNDLE)
    meta = json.loads((target / "package.json").read_text())
    assert (target / meta["jupyterlab"]["_build"]["load"]).is_file()
    source = json.loads((SOURCE / "package.json").read_text())
    bare = [{k: v for k, v in package.items() if k != "jupyterlab"} for package in (meta, source)]
    assert bare[0] == bare[1]  # the bundle was built from this source's package.json
    code = b"".join(data for name, data in files(target).items() if name.endswith(".js"))
    assert b"grader:course-grades" in code and b"allow-same-origin" in code and b"Course grades" in code
    config = json.loads((installed / "etc" / "jupyter" / "jupyter_server_config.d" / "grader.json").read_text())
    assert config == {"ServerApp": {"jpserver_extensions": {"grader.lab": True}}}


def test_no_build_tree_is_committed() -> None:
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "grader/lab"], cwd=REPO, capture_output=True, text=True).stdout
    assert "node_modules" not in tracked
