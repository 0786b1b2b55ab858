"""CPU time of a whole process tree, from a control group of its own.

``RUSAGE_CHILDREN`` misses the engine's kernels (the zygote reaps them, with SIGCHLD ignored), and
the machine-wide busy time of ``/proc/stat`` counts whatever else runs.  A process put in a cgroup
takes every descendant with it, and the group's counter keeps the CPU time of those that already
exited: cgroup v1's ``cpuacct.usage`` (nanoseconds) or v2's ``cpu.stat`` ``usage_usec``.  Making a
group needs write access to the hierarchy (root, on this project's machines); without it the
figures fall back to the machine-wide busy time, and ``CpuGroup.kind`` says which was used.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

V1 = Path("/sys/fs/cgroup/cpuacct")
V2_ROOTS = (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"))
ENVIRONMENT_VARIABLE = "GRADER_BENCH_CGROUP"  # a child measuring part of its own run reads its group here


def busy_cpu_seconds() -> float:
    """CPU time the whole machine spent busy (all cores), from /proc/stat: the fallback."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return (sum(values[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _v2_root() -> Path | None:
    for root in V2_ROOTS:
        if (root / "cgroup.procs").exists() and (root / "cgroup.controllers").exists():
            return root
    return None


class CpuGroup:
    """A cgroup for one measured run: ``enter()`` in the child (``preexec_fn``), ``seconds()`` after."""

    def __init__(self, label: str, path: str | None = None) -> None:
        self.path: Path | None = None
        self.kind = "machine-wide /proc/stat (no writable cgroup)"
        self._start = busy_cpu_seconds()
        if path:  # a group made by the parent (a child measuring part of its own run)
            self.path = Path(path)
            self.kind = "cgroup v1 cpuacct" if self.path.is_relative_to(V1) else "cgroup v2"
            self._start = self._usage()
            return
        name = f"grader-bench-{label}-{secrets.token_hex(3)}"
        candidates = [(V1 / name, "cgroup v1 cpuacct")] if (V1 / "cpuacct.usage").exists() else []
        root = _v2_root()
        if root is not None:
            candidates.append((root / name, "cgroup v2"))
        for candidate, kind in candidates:
            try:
                candidate.mkdir()
            except OSError:
                continue
            self.path, self.kind = candidate, kind
            self._start = self._usage()
            return

    @classmethod
    def inherited(cls) -> CpuGroup | None:
        """The group the parent put this process in (``ENVIRONMENT_VARIABLE``), if any."""
        path = os.environ.get(ENVIRONMENT_VARIABLE)
        return cls("inherited", path) if path else None

    def enter(self) -> None:
        """Move the calling process (and so everything it starts) into the group."""
        if self.path is not None:
            (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def environment(self) -> dict[str, str]:
        return {ENVIRONMENT_VARIABLE: str(self.path)} if self.path is not None else {}

    def _usage(self) -> float:
        assert self.path is not None
        if self.kind == "cgroup v1 cpuacct":
            return int((self.path / "cpuacct.usage").read_text()) / 1e9
        stat = dict(line.split() for line in (self.path / "cpu.stat").read_text().splitlines())
        return int(stat["usage_usec"]) / 1e6

    def seconds(self) -> float:
        """CPU seconds used by the group's processes (living and exited) since the group was made
        (subtract two readings to measure part of a run)."""
        if self.path is None:
            return busy_cpu_seconds() - self._start
        return self._usage() - self._start

    def close(self) -> None:
        """Remove the group (its processes must have exited or moved)."""
        if self.path is not None and ENVIRONMENT_VARIABLE not in os.environ:
            try:
                self.path.rmdir()
            except OSError:
                pass
