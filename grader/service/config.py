"""The service's settings, read from the course's ``nbgrader_config.py`` (``c.GraderService.*``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import course
from ..engine.limits import Limits
from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ..engine.engine import Engine
    from ..engine.kernels.kernel import Zygote

FEEDBACK_POLICIES = ("immediate", "after_deadline", "score_only")
COUNTING = ("latest", "best")


def cpu_share() -> int:
    """The CPUs this process may run on (its affinity: a container's cpuset, ``taskset``), else the machine's."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@dataclass(frozen=True)
class ServiceConfig:
    course_root: Path
    db_url: str
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = field(default_factory=cpu_share)
    max_upload_bytes: int = 5 * 1024 * 1024
    notebook_timeout_s: float = Limits.notebook_timeout_s
    memory_limit_bytes: int = Limits.memory_limit_bytes
    resident_limit_bytes: int = Limits.resident_limit_bytes
    max_attempts: int = 3
    feedback_policy: dict[str, str] = field(default_factory=dict)
    hard_deadline_hours: dict[str, float] = field(default_factory=dict)
    max_submissions: int = 0
    counting: str = "latest"
    min_seconds_between_submissions: float = 0.0
    # scale-out (DEPLOYMENT.md): a broker URL makes `grader serve` publish jobs to `grader worker`s
    broker_url: str = ""
    submission_files: str = ""  # "folder" | "database"; default: "database" with a broker, else "folder"
    lease_s: float = 60.0  # a running job whose worker has not been heard from for this long is taken over
    sweep_interval_s: float = 5.0  # how often `grader serve` looks for jobs to publish (again)
    republish_after_s: float = 120.0  # a queued job nobody claimed for this long is published again
    after_record: tuple[str, ...] = ()  # hooks run after each recorded grade (``hooks``): "canvas-csv", "mod:fn"
    # LTI grade passback (hook "lti-ags", ``lti.outbox``): the first retry while the LMS is down, doubling up to the max
    lti_retry_s: float = 30.0
    lti_retry_max_s: float = 3600.0
    # timed exams (``rules.exams``): assignment -> {opens, closes, duration_minutes, grace_minutes, checks_allowed,
    # scores_before_release, honour}
    exams: dict[str, Any] = field(default_factory=dict)
    anonymous_grading: bool = True  # written answers: students' names hidden while grading (a TA may show them)
    hub_course: str = ""  # under JupyterHub: the course id of the hub groups (default: nbgrader_config.py)
    release_directory: str = "release"  # nbgrader's CourseDirectory.release_directory, not a GraderService setting

    @property
    def files(self) -> str:
        """Where notebooks are kept (``files``): in the database when workers on other machines read them."""
        return self.submission_files or ("database" if self.broker_url else "folder")

    @property
    def data_dir(self) -> Path:
        return self.course_root / "service-data"

    @property
    def limits(self) -> Limits:
        """A notebook's limits, as the engine takes them."""
        return Limits(self.notebook_timeout_s, self.memory_limit_bytes, self.resident_limit_bytes)

    def engine(self, zygote: Zygote | None = None) -> Engine:
        """The grading engine for this course, database and limits: the one way the service builds one.
        ``zygote``: this course's, launched early (``launch_zygote``); the engine then owns it."""
        from ..engine.engine import Engine

        return Engine(self.course_root, self.db_url, self.limits, zygote=zygote)

    def launch_zygote(self) -> Zygote:
        """This course's zygote, launched now without waiting: its start-up (importing torch, warming the
        checks: seconds) runs while the process imports and prepares the rest. Give it to ``engine``, and
        close it if anything fails before the engine has it."""
        from ..engine.kernels.kernel import Zygote

        zygote = Zygote(self.course_root)
        zygote.launch()
        return zygote

    def policy(self, assignment: str) -> str:
        return self.feedback_policy.get(assignment, "immediate")


def load(
    root: Path | None = None, db_url: str | None = None, broker_url: str | None = None, **overrides: Any
) -> ServiceConfig:
    """Settings for the course at ``root`` (``GRADER_COURSE_ROOT``, else this repository); bad values fail here.

    The database and broker URLs come from the arguments (``--db-url``, ``--broker-url``), else from
    ``GRADER_DB_URL`` and ``GRADER_BROKER_URL``, else ``GraderService.broker_url``; no broker is the
    embedded default.
    """
    root = (root or Path(os.environ.get("GRADER_COURSE_ROOT") or course.REPO_ROOT)).resolve()
    config_file = root / "nbgrader_config.py"
    if not config_file.exists():
        raise ConfigurationError(f"{config_file} not found: the service needs the course's nbgrader_config.py")
    loaded = course.read_config(root)
    section = {key: value for key, value in loaded.get("GraderService", {}).items()}
    section.update(overrides)
    broker_url = broker_url or os.environ.get("GRADER_BROKER_URL")
    if broker_url:
        section["broker_url"] = broker_url
    known = set(ServiceConfig.__dataclass_fields__) - {"course_root", "db_url", "release_directory"}
    unknown = set(section) - known
    if unknown:
        raise ConfigurationError(f"unknown GraderService setting(s) in nbgrader_config.py: {sorted(unknown)}")
    db_url = course.gradebook_url(root, db_url)
    release = course.release_directory(root, loaded).name
    if isinstance(section.get("after_record"), list):
        section["after_record"] = tuple(section["after_record"])
    config = ServiceConfig(course_root=root, db_url=db_url, release_directory=release, **section)
    if config.workers < 1:
        raise ConfigurationError("GraderService.workers must be at least 1")
    if config.resident_limit_bytes and config.resident_limit_bytes < 1024**3:
        raise ConfigurationError(
            "GraderService.resident_limit_bytes must be 0 (no limit) or at least 1 GiB: a kernel with torch "
            "imported is already about 0.7 GiB resident"
        )
    if config.counting not in COUNTING:
        raise ConfigurationError(f"GraderService.counting must be one of {COUNTING}, not {config.counting!r}")
    _check_scale_out(config)
    _check_hooks(config)
    if not 0 < config.lti_retry_s <= config.lti_retry_max_s:
        raise ConfigurationError(
            "GraderService.lti_retry_s must be positive and at most GraderService.lti_retry_max_s "
            f"(now {config.lti_retry_s} and {config.lti_retry_max_s})"
        )
    from .rules import exams

    exams.parse(config.exams)  # an exam setting that cannot be used stops the service here
    if not isinstance(config.anonymous_grading, bool):
        raise ConfigurationError(
            f"GraderService.anonymous_grading must be True or False, not {config.anonymous_grading!r}"
        )
    bad = {a: p for a, p in config.feedback_policy.items() if p not in FEEDBACK_POLICIES}
    if bad:
        raise ConfigurationError(f"GraderService.feedback_policy: {bad} not in {FEEDBACK_POLICIES}")
    return config


def _check_hooks(config: ServiceConfig) -> None:
    from . import hooks

    if isinstance(config.after_record, str) or not all(isinstance(n, str) for n in config.after_record):
        raise ConfigurationError("GraderService.after_record must be a list of hook names, e.g. ['canvas-csv']")
    hooks.after_record(config)


def _check_scale_out(config: ServiceConfig) -> None:
    from .records import files

    if config.submission_files and config.submission_files not in files.KINDS:
        raise ConfigurationError(
            f"GraderService.submission_files must be one of {files.KINDS}, not {config.submission_files!r}"
        )
    if config.broker_url and not config.broker_url.startswith(
        ("redis://", "rediss://", "redis+socket://", "amqp://", "amqps://")
    ):
        raise ConfigurationError(
            f"the broker URL must be redis://HOST:PORT/DB or amqp://USER:PASSWORD@HOST:PORT/VHOST, "
            f"not {config.broker_url!r}"
        )
    if config.broker_url and config.db_url.startswith("sqlite"):
        raise ConfigurationError(
            "with a broker, workers on other machines must reach the gradebook: give a PostgreSQL database "
            "(--db-url postgresql+psycopg2://USER@HOST:5432/DB or GRADER_DB_URL), not SQLite"
        )
    for name in ("lease_s", "sweep_interval_s", "republish_after_s"):
        if getattr(config, name) <= 0:
            raise ConfigurationError(f"GraderService.{name} must be positive")
    if config.lease_s < 3 * config.sweep_interval_s:
        raise ConfigurationError("GraderService.lease_s must be at least 3 sweep intervals (sweep_interval_s)")
