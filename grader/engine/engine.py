"""``Engine``: a zygote plus the course's nbgrader configuration."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from types import TracebackType

from traitlets.config import Config

from .. import course
from ..errors import ConfigurationError
from ..variants import marked
from .bookkeeping.autograde import Outcome, grade_one, load_config, warm_up
from .inside import sandbox
from .kernels.kernel import Zygote
from .limits import Limits

log = logging.getLogger("grader.engine")


class Engine:
    """A zygote plus the course's nbgrader configuration: grade submissions of one course, fast.

    ``start()`` takes a few seconds (the zygote imports torch); after that a
    notebook costs a fork and its cells.  Thread-safe: several threads may
    grade at once, one kernel each.
    """

    def __init__(
        self, root: Path, db_url: str | None = None, limits: Limits | None = None, zygote: Zygote | None = None
    ) -> None:
        """``limits``: the course's (``Limits.of(root)``) unless given; ``Limits(0, 0, 0)`` is none at all.
        ``zygote``: this course's, already launched (``Zygote.launch``) while the caller imported the rest;
        the engine closes it with its own."""
        self.root = Path(root)
        self.zygote = Zygote(self.root) if zygote is None else zygote
        self.db_url = db_url
        self.config_digest = ""  # ``nbgrader_config.py``'s when ``config`` was read from it (``lend``)
        # read before the configuration: a file changed meanwhile differs from the digest (``lend``), never the reverse
        self.config_digest = course.config_digest(self.root)
        loaded = course.read_config(self.root)  # read once for the limits, the secret and nbgrader's configuration
        self.limits = Limits.of(self.root, loaded) if limits is None else limits
        marked.require_secret(self.root, loaded)  # a course with per-student variants cannot grade without its secret
        self.config = self._load(loaded)
        self._started = threading.Event()

    def _load(self, loaded: Config | None = None) -> Config:
        limits = self.limits
        if loaded is None:
            self.config_digest = course.config_digest(self.root)
        return load_config(
            self.root,
            self.db_url,
            self.zygote,
            limits.notebook_timeout_s,
            limits.memory_limit_bytes,
            limits.resident_limit_bytes,
            loaded,
        )

    def reload_config(self) -> None:
        """Read ``nbgrader_config.py`` again (the late policy changed): gradings from now on use it."""
        self.config = self._load()

    def start(self) -> Engine:
        """Launch the zygote, import nbgrader's conversion machinery meanwhile, then wait for the zygote."""
        self.zygote.launch()
        warm_up()
        try:
            sandbox.close_course(str(self.root), sqlite_file(str(self.config.CourseDirectory.db_url), self.root))
        except ConfigurationError:
            self.zygote.close()  # no kernel will run: nothing of the zygote stays behind
            raise
        self.zygote.start()
        for missing in self.zygote.sandbox_off:
            log.warning("kernel sandbox: no %s", missing)
        self._started.set()
        return self

    def grade(self, assignment: str, student: str, force: bool = True, create: bool = True) -> Outcome:
        """``nbgrader autograde ASSIGNMENT --student STUDENT``: same gradebook rows, same autograded notebook."""
        if not self._started.is_set():
            self.start()
        return grade_one(self.config, assignment, student, force, create)

    def close(self) -> None:
        self.zygote.close()
        self._started.clear()

    def __enter__(self) -> Engine:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def unregistered(gradebook_url: str, assignment: str) -> str | None:
    """What to do first when ``assignment`` is not in the gradebook yet (nothing can be graded), else None."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(gradebook_url) as gradebook:
        try:
            gradebook.find_assignment(assignment)
        except MissingEntry:
            return (
                f"{assignment} is not in the gradebook yet: run `grader release {assignment}` "
                "(nbgrader generate_assignment) first"
            )
    return None


def sqlite_file(db_url: str, root: Path) -> str | None:
    """The database file of a ``sqlite:///PATH`` URL (a relative PATH is in the course ``root``, where nbgrader
    opens it); None for any other database, or SQLite in memory."""
    from sqlalchemy.engine import make_url

    url = make_url(db_url)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return str(root / str(url.database))  # an absolute PATH stays itself
