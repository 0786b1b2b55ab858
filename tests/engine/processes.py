"""Whether a kernel's process is gone: SIGKILL is delivered asynchronously, and a killed kernel stays a
zombie until the zygote (its parent, not the test) reaps it, so a test waits a little and counts a zombie
as gone."""

from __future__ import annotations

import time


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def gone(pid: int, within: float = 5.0) -> bool:
    """The process has died (or become a zombie) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
