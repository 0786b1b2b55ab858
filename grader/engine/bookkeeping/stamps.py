"""The submission times ``grader autograde`` is given (``timestamp.txt``) and what it may trust of them.

nbgrader's late penalty trusts ``submitted/<student>/<assignment>/timestamp.txt``; a student who can
write there could move it.  ``untrusted_time``: a time no submission can have (after the grading, or
before the release's first commit), which the batch refuses to grade with; ``timestamp_doubts``: a time
that its own files or the release's file times contradict, which the batch warns about.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from pathlib import Path

from ... import course

# How far a submission's file times may stray from its timestamp.txt before the batch says so.
CLOCK_SLACK = dt.timedelta(minutes=2)


@dataclass(frozen=True)
class TimeDoubt:
    """A ``timestamp.txt`` that its own files, or the release, contradict: perhaps written by hand."""

    student: str
    stamped: dt.datetime  # what timestamp.txt says, naive UTC
    contradiction: str  # what the stamp is set against, e.g. "its files were last modified at ..."

    def line(self) -> str:
        return (
            f"Warning: {self.student}'s timestamp.txt says {_utc(self.stamped)}, but {self.contradiction}; "
            "the late penalty trusts timestamp.txt: check it before releasing grades."
        )

    def refusal(self) -> str:
        return (
            f"[NOT GRADED] its timestamp.txt says {_utc(self.stamped)}, but {self.contradiction}: a time the late "
            "penalty cannot trust. Put the time the submission was collected in timestamp.txt (or remove the file "
            "to grade it without a time), then grade it again."
        )


def release_time(root: Path, assignment: str) -> dt.datetime | None:
    """When ``assignment`` was released, naive UTC, if it was: its release folder's first commit
    (``release_commit_time``), else its oldest released notebook's modification time (which a new clone or
    release moves later)."""
    committed = release_commit_time(root, assignment)
    if committed is not None:
        return committed
    folder = course.release_directory(root) / assignment
    times = [p.stat().st_mtime for p in folder.glob("*.ipynb")] if folder.is_dir() else []
    return _naive_utc(min(times)) if times else None


def release_commit_time(root: Path, assignment: str) -> dt.datetime | None:
    """The time of the first commit of ``assignment``'s release folder, naive UTC: a release time no clone, copy or
    later release moves. None outside a git repository, in a shallow clone (its first commit is not the first),
    or for a folder never committed."""
    import subprocess

    folder = course.release_directory(root) / assignment
    if not folder.is_dir():
        return None

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    if git("rev-parse", "--is-shallow-repository") != "false\n":
        return None
    times = [int(line) for line in (git("log", "--format=%ct", "--", ".") or "").split() if line.isdigit()]
    return _naive_utc(min(times)) if times else None


def untrusted_time(folder: Path, student: str, released: dt.datetime | None) -> TimeDoubt | None:
    """A ``timestamp.txt`` time no submission can have: after now, or before ``released`` (the release's first
    commit: a file's time is no evidence here, a copy or a new release moves it)."""
    stamped = _stamped(folder / "timestamp.txt")
    if stamped is None:
        return None
    now = _naive_utc(time.time())
    if stamped > now + CLOCK_SLACK:
        return TimeDoubt(student, stamped, f"it is graded now, at {_utc(now)}, before that time")
    if released is not None and stamped < released - CLOCK_SLACK:
        return TimeDoubt(student, stamped, f"the assignment was released at {_utc(released)}, after it")
    return None


def _stamped(stamp: Path) -> dt.datetime | None:
    try:
        text = stamp.read_text(errors="replace").strip()
    except OSError:
        return None
    return parse_stamp(text)


def parse_stamp(text: str) -> dt.datetime | None:
    """``timestamp.txt``'s time as nbgrader reads it (``nbgrader.utils.parse_utc``'s rules: dateutil, a third word
    the zone), naive UTC; None when empty or unreadable. Without importing nbgrader: ``grader autograde`` reads
    the stamps before its zygote is launched, and nbgrader's import would delay that launch."""
    import dateutil.parser  # type: ignore[import-untyped]  # nbgrader's own dependency
    import dateutil.tz  # type: ignore[import-untyped]

    if not text:
        return None
    try:
        parts = text.split(" ")
        if len(parts) == 3:
            zone: object = parts[2]
            try:
                zone = int(parts[2])
            except ValueError:
                zone = dateutil.tz.gettz(parts[2])
            stamped = dateutil.parser.parse(" ".join([*parts[:2], "TZ"]), tzinfos={"TZ": zone})
        else:
            stamped = dateutil.parser.parse(text)
        offset = stamped.utcoffset()
    except (ValueError, OverflowError, TypeError):
        return None
    moment: dt.datetime = (stamped - offset).replace(tzinfo=None) if offset is not None else stamped
    return moment


def timestamp_doubts(folder: Path, student: str, released: dt.datetime | None) -> tuple[TimeDoubt, ...]:
    """What contradicts the submission ``folder``'s ``timestamp.txt``: files modified after the time it
    gives, a time after the stamp file itself was written, or a time before the release."""
    stamp = folder / "timestamp.txt"
    try:
        text = stamp.read_text(errors="replace").strip()
        written = _naive_utc(stamp.stat().st_mtime)
    except OSError:
        return ()
    stamped = parse_stamp(text)
    if stamped is None:
        return ()  # nbgrader says so itself: an empty stamp is ignored, an unreadable one fails the grading
    files = [p for p in folder.iterdir() if p.is_file() and not p.is_symlink()]
    modified = max(_naive_utc(p.stat().st_mtime) for p in files) if files else written
    doubts = []
    if modified > stamped + CLOCK_SLACK:
        doubts.append(TimeDoubt(student, stamped, f"its files were last modified at {_utc(modified)}, after it"))
    if stamped > written + CLOCK_SLACK:
        doubts.append(TimeDoubt(student, stamped, f"timestamp.txt itself was written at {_utc(written)}, before it"))
    if released is not None and stamped < released - CLOCK_SLACK:
        doubts.append(TimeDoubt(student, stamped, f"the assignment was released at {_utc(released)}, after it"))
    return tuple(doubts)


def _naive_utc(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).replace(tzinfo=None)


def _utc(moment: dt.datetime) -> str:
    return f"{moment.isoformat(sep=' ', timespec='seconds')} UTC"
