"""The operating-system sandbox a forked kernel enters before it runs a student's first cell.

Linux only, without Docker.  In order, inside the freshly forked child:

1. new mount and network namespaces (``unshare``): the network namespace has
   only a loopback interface that is down, so every connection fails; in the
   mount namespace the course's private paths (source notebooks with the
   hidden tests, submissions, autograded notebooks, feedback, the gradebook,
   the service's data, the configuration, the grader's own code) and the
   runtime socket directories are covered by empty read-only file systems
   (what exists when the kernel is forked: before its first kernel the engine
   makes the folders a grading writes into and keeps a SQLite gradebook's
   journal from other users, ``close_course``);
2. resource limits (``setrlimit``): address space, CPU seconds, processes,
   open files, file size, no core dumps;
3. an unprivileged user of its own (``setuid``), a different uid per kernel
   running at once, owning only the kernel's private directory: it cannot
   signal the grader, read a root-only file or touch another kernel's files.

Steps 1 and 3 need root.  Run as another user, the kernel tries an
unprivileged user namespace for the network alone; whatever could not be done
is returned by ``enter``, one sentence per step starting with the step's name
(``STEPS``), and the kernel sends it to the grader in its first message.

Fail closed (``refused``): the grader forks one kernel at start-up, the probe,
and logs the steps this machine cannot provide (``Zygote.sandbox_off``; not
root, no user namespaces, a container without ``CAP_SYS_ADMIN``).  From then
on every kernel's report is compared with the probe's: a kernel missing a step
the probe had, or missing a step that is always required (the resource limits;
the kernel's own user when the grader is root), is killed before it is sent any
cell, and the grading is an infrastructure failure naming the step (retried by
the service, then failed with that reason).  A required step the probe itself
misses stops the start-up.  So a step is either logged at start-up as missing
for every kernel, or present in every kernel that runs student code.

Test hook: ``FAIL_STEP_VARIABLE`` in a kernel's requested environment makes the
named step fail in that kernel (``OSError``, as if the system refused it); it is
removed from the environment before any cell runs.  Only the grader writes that
environment (``grader.plugins.isolation.kernel_environment`` keeps a fixed list of
variables); the tests use it to prove that such a kernel runs no student code.
"""

from __future__ import annotations

import ctypes
import errno as errnos
import functools
import os
import resource
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000

# Paths of a course that student code must never read (relative to the course root).
PRIVATE_COURSE_PATHS = (
    "source",
    "submitted",
    "autograded",
    "feedback",
    "service-data",
    "gradebook.db",
    "gradebook.db-wal",  # SQLite's write-ahead log and its index (the service's Store uses WAL): the
    "gradebook.db-shm",  # newest rows are there before they reach gradebook.db
    "gradebook.db-journal",
    "variant_secret.txt",  # grader.variants' default; a secret_file elsewhere is added by hidden_paths
    "nbgrader_config.py",
    "grader",
    "tests",
    ".git",
)
# Where local services keep their Unix sockets (PostgreSQL's trusts local connections).
RUNTIME_PATHS = ("/run", "/var/run", "/var/lib/postgresql")
# Shared scratch space: each kernel gets its own empty one, so nothing passes between students.
SCRATCH_PATHS = ("/tmp", "/var/tmp", "/dev/shm")
SCRATCH_SIZE = "256m"

# The steps of the sandbox, as ``enter`` names them when one could not be applied.
NAMESPACES = "network and file-system namespaces"  # as root: both, and the private paths hidden
NETWORK = "network namespace"  # not root: an unprivileged user namespace for the network alone
HIDING = "hiding the course's private files"
LIMITS = "resource limits"
OWN_USER = "a separate unprivileged user per kernel"
STEPS = (NAMESPACES, NETWORK, HIDING, LIMITS, OWN_USER)
FAIL_STEP_VARIABLE = "GRADER_TEST_FAIL_SANDBOX_STEP"  # test hook: see the module's docstring

# Kernels run as uid = gid = FIRST_KERNEL_UID + zygote pid * KERNEL_SLOTS + slot: no two kernels alive
# at once share a uid, even under two zygotes (the service and a TA's batch run on one machine).
FIRST_KERNEL_UID = 1_000_000
KERNEL_SLOTS = 64


def kernel_uids(zygote_pid: int) -> range:
    """The uids the kernels of one zygote run as."""
    first = FIRST_KERNEL_UID + zygote_pid * KERNEL_SLOTS
    return range(first, first + KERNEL_SLOTS)


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 0  # address space; 0 for none
    cpu_seconds: int = 0  # CPU time of the kernel process; 0 for none
    processes: int = 64  # processes and threads of the kernel's uid (a fork bomb stops here)
    open_files: int = 256
    file_bytes: int = 256 * 1024**2


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _unshare(flags: int) -> None:
    if _libc().unshare(flags) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    result = _libc().mount(
        source.encode(), target.encode(), fstype.encode() if fstype else None, flags, data.encode() if data else None
    )
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {target}: {os.strerror(errno)}")


def hidden_paths(course_root: str | None) -> list[str]:
    """What a kernel must not see, for the course at ``course_root``: also what does not exist yet, since
    the zygote reads this once at its start, and ``submitted/``, the gradebook or the course secret may
    be made after it (a course's first submission, a service's first run); ``_hide`` covers what exists
    when each kernel is forked."""
    paths = [os.path.join(course_root, p) for p in PRIVATE_COURSE_PATHS] if course_root else []
    if course_root:
        paths.append(_secret_file(course_root))
    return list(dict.fromkeys(paths + list(RUNTIME_PATHS)))


# Private directories a grading writes into while kernels run: made before the first kernel, so that
# every kernel finds them there to cover (a path made after a kernel was forked is not covered in it).
WRITTEN_WHILE_GRADING = ("submitted", "autograded", "feedback")
SQLITE_FILES = ("", "-wal", "-shm", "-journal")  # a SQLite database, its write-ahead log, its index, its journal
OTHERS = 0o007  # a file's permission bits for users other than its owner and group


def close_course(course_root: str, database: str | None) -> None:
    """Before the first kernel of a grading process: what the grading writes later stays out of kernels' reach.

    Makes ``WRITTEN_WHILE_GRADING`` (owned as the course root is), and takes the other users' permissions
    off the SQLite ``database`` (the gradebook's file, wherever it is) and off its write-ahead log, index
    and journal where they exist. SQLite gives those the database's permissions when it makes them, a
    rollback journal comes and goes with every write, so no mount can cover it, and the kernel's own user
    is one of those others. Only as root, where each kernel has a user of its own (``OWN_USER``);
    otherwise the kernel runs as the grader's user, and ``enter`` says so.
    """
    if os.geteuid() != 0:
        return
    try:
        owner = os.stat(course_root)
        for name in WRITTEN_WHILE_GRADING:
            folder = os.path.join(course_root, name)
            if not os.path.isdir(folder):
                os.mkdir(folder)
                os.chown(folder, owner.st_uid, owner.st_gid)
        for path in [database + suffix for suffix in SQLITE_FILES] if database else []:
            if os.path.isfile(path):
                mode = os.stat(path).st_mode
                if mode & OTHERS:
                    os.chmod(path, mode & 0o7777 & ~OTHERS)
    except OSError as error:  # fail closed: no kernel runs while these would be within its reach
        from ...errors import ConfigurationError

        raise ConfigurationError(
            f"cannot keep the course's private files from the kernels ({error}): the grader needs to create "
            f"{', '.join(WRITTEN_WHILE_GRADING)} in {course_root} and to change the gradebook's permissions"
        ) from error


@functools.cache
def _secret_file(course_root: str) -> str:
    """The course secret of per-student variants, where ``nbgrader_config.py`` puts it."""
    from ...variants import secret

    try:
        return str(secret.secret_path(Path(course_root)))
    except Exception:  # no readable configuration here: the default place, already hidden
        return os.path.join(course_root, secret.DEFAULT_FILE)


def _needed() -> list[str]:
    """Where the kernel's Python lives: what it imports from after giving up root."""
    found = [sys.prefix, sys.base_prefix, sys.exec_prefix] + [p for p in sys.path if p]
    return sorted({os.path.realpath(p) for p in found if os.path.exists(p)})


def _reach(paths: list[str]) -> None:
    """Let an unprivileged kernel reach ``paths`` when an ancestor is closed to it (``/root`` is 0700
    and pyenv installs Python under it): cover that ancestor with an empty tmpfs it may traverse,
    holding only the needed entries, bound back from the original.  The rest of it stays hidden."""
    wanted: dict[str, set[str]] = {}
    for path in paths:
        parts = path.strip(os.sep).split(os.sep)
        for depth in range(1, len(parts)):
            ancestor = os.sep + os.sep.join(parts[:depth])
            if not os.stat(ancestor).st_mode & 0o001:
                wanted.setdefault(ancestor, set()).add(parts[depth])
                break
    for ancestor, children in wanted.items():
        handles = {child: os.open(os.path.join(ancestor, child), os.O_PATH) for child in children}
        try:
            _mount("none", ancestor, "tmpfs", MS_NOSUID | MS_NODEV, "size=4k,mode=711")
            for child, handle in handles.items():
                target = os.path.join(ancestor, child)
                if os.path.isdir(f"/proc/self/fd/{handle}"):
                    os.mkdir(target)
                else:
                    open(target, "w").close()
                _mount(f"/proc/self/fd/{handle}", target, None, MS_BIND | MS_REC)
        finally:
            for handle in handles.values():
                os.close(handle)


def _hide(paths: list[str], private_dir: str) -> None:
    """Cover each path with an empty read-only tmpfs (a directory) or /dev/null (a file); give the
    kernel empty scratch directories of its own, its private directory (under /tmp) bound back in."""
    _mount("none", "/", None, MS_REC | MS_PRIVATE)  # nothing done here propagates to the machine
    _reach(_needed())
    own = os.open(private_dir, os.O_PATH | os.O_DIRECTORY)
    try:
        for path in paths:
            real = os.path.realpath(path)
            if private_dir == real or private_dir.startswith(real + os.sep) or not os.path.exists(real):
                continue
            try:
                if os.path.isdir(real):
                    _mount("none", real, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=555")
                else:
                    _mount("/dev/null", real, None, MS_BIND)
            except FileNotFoundError:
                # gone since it was looked at (a SQLite journal lasts one write): as for a path made after
                # the fork, what keeps it from the kernel is its permissions (``close_course``)
                continue
        # Python's own installation may live under a scratch directory (a checkout in /tmp, say):
        # it is bound back into the fresh one, and nothing else from there is.
        prefixes = sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
        for path in SCRATCH_PATHS:
            if not os.path.isdir(path) or os.path.islink(path):
                continue
            inside = [p for p in prefixes if p.startswith(os.path.realpath(path) + os.sep)]
            handles = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in inside}
            try:
                _mount("none", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={SCRATCH_SIZE},mode=1777")
                for prefix, handle in handles.items():
                    os.makedirs(prefix, exist_ok=True)
                    _mount(f"/proc/self/fd/{handle}", prefix, None, MS_BIND | MS_REC)
            finally:
                for handle in handles.values():
                    os.close(handle)
        os.makedirs(private_dir, exist_ok=True)
        _mount(f"/proc/self/fd/{own}", private_dir, None, MS_BIND)
    finally:
        os.close(own)


def step_of(missing: str) -> str:
    """The step a sentence of ``enter``'s report is about (the sentence itself if no known step)."""
    return next((step for step in STEPS if missing.startswith(step)), missing)


def required_steps(root: bool | None = None) -> frozenset[str]:
    """The steps no kernel may run without, whatever the start-up probe found."""
    if root is None:
        root = os.geteuid() == 0
    return frozenset({LIMITS, OWN_USER} if root else {LIMITS})


def refused(missing: Iterable[str], missing_at_start: Iterable[str], root: bool | None = None) -> list[str]:
    """What a kernel reported it could not do that makes it unfit to run student code: a step the
    start-up probe had, or a required one (see the module's docstring)."""
    allowed = {step_of(m) for m in missing_at_start} - required_steps(root)
    return [m for m in missing if step_of(m) not in allowed]


def _attempt(step: str, action: Callable[[], None], forced: str, off: list[str], hint: str = "") -> None:
    """Apply one step; on failure add ``"<step> (<why><hint>)"`` to ``off``."""
    try:
        if step == forced:
            raise OSError(errnos.EPERM, f"forced to fail by {FAIL_STEP_VARIABLE}")
        action()
    except OSError as error:
        off.append(f"{step} ({error.strerror or error}{hint})")


def enter(hide: list[str], private_dir: str, limits: Limits, uid: int | None) -> list[str]:
    """Enter the sandbox (see the module's docstring); returns what could not be done, in words.

    ``private_dir`` holds the kernel's working directory and home: the only place it may write
    that outlives nothing (it is removed after the notebook).
    """
    forced = os.environ.pop(FAIL_STEP_VARIABLE, "")
    off: list[str] = []
    root = os.geteuid() == 0
    if root:

        def namespaces() -> None:
            _unshare(CLONE_NEWNS | CLONE_NEWNET)
            _hide(hide, os.path.realpath(private_dir))

        _attempt(NAMESPACES, namespaces, forced, off)
    else:
        hint = "; not root and no unprivileged user namespaces"
        _attempt(NETWORK, lambda: _unshare(CLONE_NEWUSER | CLONE_NEWNET), forced, off, hint)
        off.append(f"{HIDING} (needs root)")
    _attempt(LIMITS, lambda: _limit(limits), forced, off)
    if root and uid is not None:
        _attempt(OWN_USER, lambda: _become(uid, private_dir), forced, off)
    elif not root:
        off.append(f"{OWN_USER} (needs root): student code runs as the grader's user")
    return off


def _become(uid: int, private_dir: str) -> None:
    """Give the kernel's private directory to ``uid`` and become it, for good."""
    for folder, _, files in os.walk(private_dir):
        os.chown(folder, uid, uid)
        for name in files:
            os.chown(os.path.join(folder, name), uid, uid)
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    try:  # whatever an earlier kernel of this uid left running (it may have escaped its group)
        os.kill(-1, 9)
    except OSError:
        pass


def _limit(limits: Limits) -> None:
    def cap(which: int, value: int) -> None:
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))

    if limits.memory_bytes > 0:
        cap(resource.RLIMIT_AS, limits.memory_bytes)
    if limits.cpu_seconds > 0:
        cap(resource.RLIMIT_CPU, limits.cpu_seconds)
    if limits.processes > 0:
        cap(resource.RLIMIT_NPROC, limits.processes)
    if limits.open_files > 0:
        cap(resource.RLIMIT_NOFILE, limits.open_files)
    cap(resource.RLIMIT_FSIZE, limits.file_bytes)
    cap(resource.RLIMIT_CORE, 0)


def kill_kernel_processes(zygote_pid: int) -> int:
    """Kill every process left running as one of a zygote's kernel uids (as root); how many."""
    if os.geteuid() != 0:
        return 0
    uids = kernel_uids(zygote_pid)
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid in uids:
                os.kill(int(entry), 9)
                killed += 1
        except OSError:
            continue
    return killed
