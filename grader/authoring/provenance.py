"""What a validation report was made from, and whether that is still what the course holds.

``grader validate`` records the commit, whether the assignment's source folder (``source/<assignment>/``:
the notebook with its hidden tests, the fixtures) had changes git had not committed, and a SHA-256 of every
file in that folder. The dashboard compares those digests with the files as they are now (``changes``), so
a report that no longer describes the tests says so. A report from before the digests were recorded is
compared by modification time with the moment it was made instead.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SKIPPED = frozenset({".ipynb_checkpoints", "__pycache__"})
"""Folders of the source that are no part of it (Jupyter's autosaves, Python's bytecode)."""


@dataclass(frozen=True)
class Source:
    """The assignment's source as ``grader validate`` read it."""

    commit: str
    """``git rev-parse --short HEAD`` of the course; empty outside a git repository."""
    dirty: bool
    """``git status --porcelain`` listed a change in ``source/<assignment>/`` (edited, added, deleted, untracked)."""
    sources: dict[str, str]
    """Each file of ``source/<assignment>/``, by its path from the course root, to its SHA-256."""


@dataclass(frozen=True)
class Change:
    path: str
    how: str
    """``edited``, ``added``, ``removed``, or ``modified after the report`` (a report without digests)."""


def folder(root: Path, assignment: str) -> Path:
    return root / "source" / assignment


def digests(root: Path, assignment: str) -> dict[str, str]:
    """Each file of the assignment's source folder (path from ``root``, POSIX) to its SHA-256."""
    found = {}
    for path in sorted(_files(folder(root, assignment))):
        found[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def read(root: Path, assignment: str) -> Source:
    """The commit, the dirty flag and the digests of ``assignment``'s source, now."""
    commit = _git(root, "rev-parse", "--short", "HEAD")
    status = _git(
        root,
        "status",
        "--porcelain",
        "--untracked-files=all",  # each untracked file, so that the exclusions below apply to it
        "--",
        folder(root, assignment).relative_to(root).as_posix(),
        *(f":(exclude,glob)**/{name}/**" for name in sorted(SKIPPED)),
    )
    return Source(commit=commit or "", dirty=bool(status), sources=digests(root, assignment))


def changes(root: Path, assignment: str, report: Mapping[str, Any]) -> tuple[Change, ...]:
    """What changed in the assignment's source since ``report`` (``Report.as_dict()``, as stored) was made;
    empty when it still describes the source."""
    recorded = report.get("sources")
    if isinstance(recorded, dict):
        now = digests(root, assignment)
        found = [Change(p, "edited") for p in sorted(now.keys() & recorded.keys()) if now[p] != recorded[p]]
        found += [Change(p, "added") for p in sorted(now.keys() - recorded.keys())]
        found += [Change(p, "removed") for p in sorted(recorded.keys() - now.keys())]
        return tuple(found)
    try:  # a report from before the digests: compare modification times with when it was made
        made = dt.datetime.fromisoformat(str(report.get("when"))).timestamp()
    except ValueError:
        return ()
    return tuple(
        Change(path.relative_to(root).as_posix(), "modified after the report")
        for path in sorted(_files(folder(root, assignment)))
        if path.stat().st_mtime > made
    )


def _files(top: Path) -> list[Path]:
    if not top.is_dir():
        return []
    return [
        path for path in top.rglob("*") if path.is_file() and not SKIPPED.intersection(path.relative_to(top).parts[:-1])
    ]


def _git(root: Path, *args: str) -> str | None:
    """``git -C root ARGS``'s output; None when git is missing or ``root`` is in no repository."""
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
    except OSError:
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None
