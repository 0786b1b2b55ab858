"""Releases for the tests' course copies: nbgrader generates each distinct one once a session.

Dozens of tests and services start from a fresh copy of the course and call
``course.generate_releases`` on it: ``nbgrader generate_assignment`` for each assignment, about five
seconds apiece, the same output each time. For the session, ``course.generate_releases`` is wrapped
(``install``, from ``tests/conftest.py``): on a copy with no gradebook yet and the SQLite default, the
first call for a given set of inputs runs nbgrader for real and keeps what it wrote (``release/<a>/``
and ``gradebook.db``); a later call with the same inputs copies that. The inputs are the assignments
asked for and the bytes of ``nbgrader_config.py`` and of every file under their ``source/<a>/``, so a
test that edits a source notebook or the configuration gets a release of its own. Every other call
(another database, a gradebook already holding data, this repository itself) runs nbgrader as before.
``uncached`` is the real function, for the tests of the release itself.

The cache is one folder for the whole run, shared by pytest-xdist's worker processes: the controlling
process makes it (and removes it at the end) and names it in ``$GRADER_TEST_RELEASES``, which the workers
it starts inherit. A lock file per set of inputs (``fcntl.flock``) makes the first process to need a
release generate it while any other process or thread waits, then copies it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from grader import course

uncached = course.generate_releases
SHARED = "GRADER_TEST_RELEASES"
_folder: Path | None = None
_owner = False


def install(worker: bool) -> None:
    """Wrap ``course.generate_releases``; an xdist ``worker`` uses the folder its controlling process made."""
    global _folder, _owner
    shared = os.environ.get(SHARED)
    _owner = not (worker and shared)
    _folder = Path(tempfile.mkdtemp(prefix="grader-test-releases-")) if _owner else Path(str(shared))
    os.environ[SHARED] = str(_folder)
    course.generate_releases = generate_releases


def uninstall() -> None:
    course.generate_releases = uncached
    if _folder is not None and _owner:
        shutil.rmtree(_folder, ignore_errors=True)


def generate_releases(
    root: Path = course.REPO_ROOT, names: Iterable[str] | None = None, db_url: str | None = None
) -> None:
    chosen = tuple(names or course.assignments(root))
    if _folder is None or db_url or root.resolve() == course.REPO_ROOT or (root / "gradebook.db").exists():
        uncached(root, chosen, db_url)
        return
    key = _inputs(root, chosen)
    kept = _folder / key
    with (_folder / f"{key}.lock").open("w") as held:
        # flock belongs to this open file description: other processes of the run, and other threads
        # of this one (each opens the file anew), wait here; released when closed
        fcntl.flock(held, fcntl.LOCK_EX)
        if not kept.exists():
            uncached(root, chosen)
            staging = _folder / f"{key}.staging-{os.getpid()}"
            shutil.rmtree(staging, ignore_errors=True)  # what a copy that failed partway in this process left
            for name in chosen:
                shutil.copytree(root / "release" / name, staging / "release" / name)
            shutil.copy2(root / "gradebook.db", staging / "gradebook.db")
            staging.rename(kept)
            return
    for name in chosen:
        shutil.rmtree(root / "release" / name, ignore_errors=True)
        shutil.copytree(kept / "release" / name, root / "release" / name)
    shutil.copy2(kept / "gradebook.db", root / "gradebook.db")


def _inputs(root: Path, names: tuple[str, ...]) -> str:
    digest = hashlib.sha256(repr(names).encode())
    digest.update((root / "nbgrader_config.py").read_bytes())
    for name in names:
        for path in sorted((root / "source" / name).rglob("*")):
            if path.is_file():
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:24]
