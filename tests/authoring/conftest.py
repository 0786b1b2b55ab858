"""What the authoring tests share: the real ``grader validate`` command, and one validated weak course."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from . import minicourse

Result = tuple[int, str, str, dict[str, Any] | None]


@dataclass(frozen=True)
class Validated:
    root: Path
    result: Result


@pytest.fixture(scope="session")
def weakened(tmp_path_factory: pytest.TempPathFactory) -> Validated:
    """The small course with its gradient check weakened to a shape check, validated once (the page's test
    shows the same report in a browser)."""
    root = minicourse.make(tmp_path_factory.mktemp("weakened") / "course", ("test_sgd_step", minicourse.WEAK, 4))
    return Validated(root, validate(root, minicourse.NAME))


def validate(root: Path, *args: str) -> Result:
    """Run ``grader validate``; exit status, stdout, stderr and the JSON report it wrote (if any)."""
    command = [str(Path(sys.executable).parent / "grader"), "validate", *args, "--course", str(root), "--jobs", "2"]
    proc = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=900, check=False)
    name = next(a for a in args if not a.startswith("-"))
    report = root / "validation" / f"{name}.json"
    return proc.returncode, proc.stdout, proc.stderr, json.loads(report.read_text()) if report.exists() else None
