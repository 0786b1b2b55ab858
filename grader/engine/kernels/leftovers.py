"""Zygote folders that a killed grading process left in $TMPDIR, removed by the next one to start.

Each grading process makes one folder for its zygote (``grader-zygote-*``: the socket kernels are
forked through, and the zygote's log) and removes it when it stops, even without ``close()``
(``kernel.Zygote``).  A process killed outright (SIGKILL, the out-of-memory killer, a container
stopped hard) cannot: its folder stays.  So each folder names its owner (``mark``): the process id,
the process's start time (a reused id starts later) and its pid namespace (another container's
processes are not visible from this one, and must not look dead).  A starting ``Zygote`` removes the
folders of owners that are gone (``sweep``): only its own user's, only within its own namespace, and
never a folder that does not name its owner yet (one being made) or whose owner runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

PREFIX = "grader-zygote-"
OWNER = "owner"  # in each folder: "PID START-TIME PID-NAMESPACE"


def identity(pid: int) -> str | None:
    """``"PID START-TIME PID-NAMESPACE"`` of a process this one can see, or ``None`` if there is no such process."""
    try:
        started = _started(pid)
        namespace = os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None
    return None if started is None else f"{pid} {started} {namespace}"


def _started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot), ``None`` when there is no such process.

    ``/proc/PID/stat`` is readable for every process, whoever owns it; other errors are raised."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rsplit(b")", 1)[1].split()[19].decode()  # field 22, counted after the command's ")"


def mark(folder: str) -> None:
    """Name this process as ``folder``'s owner."""
    me = identity(os.getpid())
    if me is not None:  # no /proc: nothing names the owner, and nothing will ever sweep the folder
        Path(folder, OWNER).write_text(me, encoding="ascii")


def sweep(directory: str | None = None) -> list[str]:
    """Remove the zygote folders in ``directory`` ($TMPDIR) whose owner is gone; the paths removed."""
    me = identity(os.getpid())
    if me is None:
        return []
    namespace = me.split()[2]
    removed = []
    try:
        entries = list(os.scandir(directory or tempfile.gettempdir()))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            pid, started, where = Path(entry.path, OWNER).read_text(encoding="ascii").split()
            if where != namespace or _started(int(pid)) == started:
                continue  # another namespace's (its owner cannot be seen from here), or its owner runs
        except (OSError, ValueError):
            continue  # not ours, being made, not one of these, or its owner could not be looked up
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(entry.path)
    return removed
