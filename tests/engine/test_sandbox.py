"""What the sandbox hides (``grader.engine.sandbox``): also what a course makes after its zygote started."""

from __future__ import annotations

import os
from pathlib import Path

from grader.engine import sandbox
from grader.engine.kernel import Zygote
from tests.fixtures import claims

from .conftest import fresh

MADE_LATER = ("submitted", "autograded", "feedback", "gradebook.db", "variant_secret.txt")


def _bare_course(root: Path) -> Path:
    """A course before its first run: a configuration and nothing else yet."""
    (root / "source").mkdir(parents=True)
    (root / "nbgrader_config.py").write_text("c = get_config()\n")
    return root


def test_the_paths_to_hide_include_those_not_made_yet(tmp_path: Path) -> None:
    root = _bare_course(tmp_path / "course")
    hidden = sandbox.hidden_paths(str(root))
    assert [name for name in MADE_LATER if str(root / name) not in hidden] == []
    assert set(sandbox.RUNTIME_PATHS) <= set(hidden)


def _mount_points(printed: str) -> set[str]:
    """The mount points of ``/proc/self/mountinfo`` (its fifth field, octal escapes undone)."""
    return {line.split()[4].encode().decode("unicode_escape") for line in printed.splitlines() if line.strip()}


def test_what_a_course_makes_after_its_zygote_started_is_hidden_from_every_kernel(tmp_path: Path) -> None:
    """A service's zygote starts before the course's first submission makes ``submitted/`` (and, on a
    first run, before the gradebook and the course secret exist); each kernel forked afterwards has
    them covered. With the list of paths taken, once, from what existed at the zygote's start, none is."""
    root = _bare_course(tmp_path / "course")
    with Zygote(root) as zygote:
        missing = [m for m in zygote.sandbox_off if sandbox.step_of(m) == sandbox.NAMESPACES]
        claims.root_only("hiding the course's private paths needs a mount namespace", available=not missing)
        for name in ("submitted/alice/ps1_tensors", "autograded/alice/ps1_tensors", "feedback"):
            (root / name).mkdir(parents=True)
        for name in ("gradebook.db", "variant_secret.txt"):
            (root / name).write_text("private")
        with fresh(zygote) as kernel:
            run = kernel.run("print(open('/proc/self/mountinfo').read())")
    assert run.error is None, run.error
    printed = "".join(str(o.get("text", "")) for o in run.outputs if o.get("name") == "stdout")
    covered = _mount_points(printed)
    assert [name for name in MADE_LATER if os.path.realpath(root / name) not in covered] == []
