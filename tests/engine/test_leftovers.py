"""Zygote folders left by a grading process that was killed outright are removed by the next one to start."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.engine.kernels import kernel, leftovers

MARK_AND_DIE = (
    "import os, sys, tempfile\n"
    "from grader.engine.kernels import leftovers\n"
    "folder = tempfile.mkdtemp(prefix=leftovers.PREFIX, dir=sys.argv[1])\n"
    "leftovers.mark(folder)\n"
    "os.kill(os.getpid(), 9)  # killed outright: nothing cleans up\n"
)


def _killed_owners_folder(directory: Path) -> Path:
    """A zygote folder whose owner, a real process, was SIGKILLed."""
    done = subprocess.run([sys.executable, "-c", MARK_AND_DIE, str(directory)], check=False)
    assert done.returncode == -9
    (folder,) = directory.glob(f"{leftovers.PREFIX}*")
    return folder


def test_a_killed_owners_folder_is_removed_and_a_running_owners_is_kept(tmp_path: Path) -> None:
    dead = _killed_owners_folder(tmp_path)
    (dead / "zygote.log").write_text("what the zygote logged")
    alive = Path(tempfile.mkdtemp(prefix=leftovers.PREFIX, dir=tmp_path))
    leftovers.mark(str(alive))
    assert (alive / leftovers.OWNER).read_text() == leftovers.identity(os.getpid())
    assert leftovers.sweep(str(tmp_path)) == [str(dead)]
    assert not dead.exists() and alive.is_dir()
    assert leftovers.sweep(str(tmp_path)) == []


def test_an_owner_that_cannot_be_seen_or_not_yet_named_keeps_its_folder(tmp_path: Path) -> None:
    me = leftovers.identity(os.getpid())
    assert me is not None
    pid, started, namespace = me.split()
    cases = {
        "reused-id": f"{pid} {int(started) + 1} {namespace}",  # this id, started later: the owner is gone
        "other-namespace": "1 1 pid:[1]",  # another container's process: not visible from here
        "garbled": "not an owner",
    }
    for name, owner in cases.items():
        (tmp_path / f"{leftovers.PREFIX}{name}").mkdir()
        (tmp_path / f"{leftovers.PREFIX}{name}" / leftovers.OWNER).write_text(owner)
    (tmp_path / f"{leftovers.PREFIX}being-made").mkdir()  # no owner named yet
    (tmp_path / f"{leftovers.PREFIX}a-file").write_text("")  # not a folder
    (tmp_path / "grader-kernel-x").mkdir()  # not a zygote's
    assert leftovers.sweep(str(tmp_path)) == [str(tmp_path / f"{leftovers.PREFIX}reused-id")]
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(
        ["grader-kernel-x", *(f"{leftovers.PREFIX}{n}" for n in ("other-namespace", "garbled", "being-made", "a-file"))]
    )


def test_a_zygote_sweeps_before_it_makes_its_own_folder_and_names_itself_its_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = _killed_owners_folder(tmp_path)
    zygote = kernel.Zygote()  # never started: nothing runs
    own = Path(zygote.socket_path).parent
    assert not dead.exists()
    assert own.parent == tmp_path and (own / leftovers.OWNER).read_text() == leftovers.identity(os.getpid())
    zygote.close()
    assert list(tmp_path.iterdir()) == []
