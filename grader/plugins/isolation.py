"""Run student code away from the course: a private working directory and a clean environment.

``PrivateExecute`` replaces nbgrader's ``Execute`` preprocessor (configured in
``nbgrader_config.py``, so the stock ``nbgrader autograde`` and the service both
use it).  The kernel starts in an empty temporary directory outside the course
tree, so no relative path from where the student's code runs reaches
``source/``, the gradebook or other students' files, and with an environment
holding only what a Python kernel needs, so no secret or token set for the
grader leaks into ``os.environ``.  Everything else is nbgrader's own code,
which is why scores stay identical to stock nbgrader's.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

from nbgrader.preprocessors import Execute

from . import kernel_logging

# What a kernel needs from the grader's environment; everything else stays out.
KEPT_VARIABLES = (
    "PATH",
    "LANG",
    "LC_ALL",
    "TZ",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "NBGRADER_EXECUTION",  # "autograde" while nbgrader autogrades: notebooks may skip slow demos
)


def kernel_environment(home: str) -> dict[str, str]:
    env = {name: os.environ[name] for name in KEPT_VARIABLES if name in os.environ}
    env.update(HOME=home, TMPDIR=home, PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


class PrivateExecute(Execute):  # type: ignore[misc]
    """nbgrader's Execute, with the kernel in a private directory and a clean environment."""

    def preprocess(self, nb: Any, resources: Any = None, km: Any = None) -> Any:
        resources = dict(resources or {})
        metadata = dict(resources.get("metadata") or {})
        original = metadata.get("path")
        sandbox = tempfile.mkdtemp(prefix="grader-kernel-")
        try:
            os.chmod(sandbox, 0o700)
            workdir, self._private_home = os.path.join(sandbox, "work"), os.path.join(sandbox, "home")
            os.mkdir(workdir)
            os.mkdir(self._private_home)  # IPython writes its profile under HOME: keep it out of the cwd
            resources["metadata"] = {**metadata, "path": workdir}
            nb, resources = super().preprocess(nb, resources, km)
        finally:
            shutil.rmtree(sandbox, ignore_errors=True)
        resources["metadata"] = {**resources.get("metadata", {}), "path": original}
        return nb, resources

    def _clean(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        arguments: list[str] = list(getattr(self, "extra_arguments", []))
        if kernel_logging.EXEC_LINE not in " ".join(arguments):
            self.extra_arguments = [*arguments, f"--IPKernelApp.exec_lines={kernel_logging.EXEC_LINE}"]
        return {**kwargs, "env": kernel_environment(getattr(self, "_private_home", tempfile.gettempdir()))}

    # nbclient's sync entry point wraps the base class's coroutine, so both are overridden.
    def start_new_kernel(self, **kwargs: Any) -> Any:
        return super().start_new_kernel(**self._clean(kwargs))

    async def async_start_new_kernel(self, **kwargs: Any) -> Any:
        return await super().async_start_new_kernel(**self._clean(kwargs))
