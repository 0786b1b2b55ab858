"""Detect, at run time, library shortcuts in a task that asks for manual work.

A comment or a string that mentions ``torch.optim`` trips nothing: only a
call does.  Torch functions are seen through a ``TorchFunctionMode`` (which
also sees ``nn.Linear`` and ``nn.MSELoss``, since they call ``F.linear`` and
``F.mse_loss``), optimizers through the global optimizer step hook.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from torch.optim import optimizer as _optimizer
from torch.overrides import TorchFunctionMode, resolve_name

from ._report import fail
from .misconceptions import NOT_MANUAL

SHORTCUTS: frozenset[str] = frozenset(
    {
        "torch.nn.functional.mse_loss",
        "torch.nn.functional.linear",
        "torch.linalg.lstsq",
        "torch.linalg.solve",
        "torch.linalg.pinv",
        "torch.linalg.inv",
        "torch.pinverse",
        "torch.inverse",
    }
)


class _Recorder(TorchFunctionMode):
    def __init__(self, forbidden: frozenset[str]) -> None:
        super().__init__()
        self.forbidden = forbidden
        self.seen: list[str] = []

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        qualified = resolve_name(func) or getattr(func, "__name__", "")
        if qualified in self.forbidden:
            self.seen.append(qualified)
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def assert_manual(task: str, forbidden: frozenset[str] = SHORTCUTS) -> Iterator[None]:
    """Fail if the code run inside the block calls a forbidden shortcut."""
    recorder = _Recorder(forbidden)
    optimizers: list[str] = []

    def on_step(opt: Any, args: Any, kwargs: Any) -> None:
        optimizers.append(f"torch.optim.{type(opt).__name__}.step")

    handle = _optimizer.register_optimizer_step_pre_hook(on_step)
    try:
        with recorder:
            yield
    finally:
        handle.remove()
    used = sorted(set(optimizers + recorder.seen))
    if used:
        fail(f"{task} called {', '.join(used)}.", NOT_MANUAL)
