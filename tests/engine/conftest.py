"""A real zygote for the engine's tests, and a helper that runs cells in a freshly forked kernel."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from grader.engine.kernels.forked import CellRun, Kernel
from grader.engine.kernels.kernel import Zygote, sandbox
from grader.plugins.isolation import kernel_environment


@pytest.fixture(scope="session")
def zygote() -> Iterator[Zygote]:
    with Zygote() as running:
        yield running


@dataclass
class Session:
    kernel: Kernel
    home: str
    workdir: str

    def run(self, code: str, timeout: float | None = 30, grace: float = 4, test: bool = False) -> CellRun:
        return self.kernel.execute(code, timeout, grace, test=test)


@contextmanager
def fresh(zygote: Zygote, memory_bytes: int = 10 * 1024**3) -> Iterator[Session]:
    """A kernel forked for this test, in its own sandbox, removed afterwards."""
    root, workdir, home = sandbox()
    kernel = zygote.spawn(str(workdir), str(home), kernel_environment(str(home)), memory_bytes)
    try:
        yield Session(kernel, str(home), str(workdir))
    finally:
        kernel.close()
        shutil.rmtree(root, ignore_errors=True)


def stdout(run: CellRun) -> str:
    """What a cell printed to stdout."""
    return "".join(str(o.get("text", "")) for o in run.outputs if o.get("name") == "stdout")


@pytest.fixture
def session(zygote: Zygote) -> Iterator[Session]:
    with fresh(zygote) as running:
        yield running
