"""What a notebook run in a process can change there that a process forked later would see, to put back.

The zygote's rehearsal (``rehearsal.py``) runs the course's source notebooks in the process every
kernel forks from.  ``State.take`` before and ``State.restore`` after each notebook: torch's, NumPy's
and ``random``'s generators and settings (``_settings``), the warnings filters, the environment,
``sys.path``, the working directory; packages the notebook imported that the process had not are
forgotten.  ``remove_added`` is the guard's complement: the guard puts back what was replaced in its
namespaces, this removes what was added.
"""

from __future__ import annotations

import os
import random
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class State:
    """What a notebook can change in the process and a kernel forked later would see, to put back."""

    settings: dict[str, Any]
    environ: dict[str, str]
    path: list[str]
    cwd: str
    filters: list[Any]
    modules: frozenset[str]

    @classmethod
    def take(cls) -> State:
        return cls(
            settings={name: get() for name, (get, _) in _settings().items()},
            environ=dict(os.environ),
            path=list(sys.path),
            cwd=os.getcwd(),
            filters=list(warnings.filters),
            modules=frozenset(sys.modules),
        )

    def restore(self) -> tuple[list[str], set[str]]:
        """Put everything back: what still differs after that (nothing, unless a setter failed), and the
        packages forgotten."""
        os.chdir(self.cwd)
        if dict(os.environ) != self.environ:
            os.environ.clear()
            os.environ.update(self.environ)
        sys.path[:] = self.path
        warnings.filters[:] = self.filters  # type: ignore[index]
        warnings._filters_mutated()  # type: ignore[attr-defined]
        for name, (get, put) in _settings().items():
            try:
                if not _same(get(), self.settings[name]):  # only what changed: some setters do more than set
                    put(self.settings[name])
            except Exception:  # reported below, as a value that differs
                continue
        forgotten = self._forget_new_packages()
        now = State.take()
        differ = [name for name, value in self.settings.items() if not _same(now.settings[name], value)]
        differ += [name for name in ("environ", "path", "cwd") if getattr(now, name) != getattr(self, name)]
        return differ, forgotten

    def _forget_new_packages(self) -> set[str]:
        """Forget the modules of packages the zygote had not imported (torch's own new parts stay); their names."""
        had = {name.partition(".")[0] for name in self.modules}
        stdlib = sys.stdlib_module_names
        forgotten = set()
        for name in [m for m in sys.modules if m not in self.modules]:
            top = name.partition(".")[0]
            if top not in had and top not in stdlib:
                del sys.modules[name]
                forgotten.add(top)
        return forgotten


def remove_added(modules: dict[str, Any], saved: dict[str, dict[str, Any]]) -> list[str]:
    """Names the notebooks added to the guard's modules (``saved``: their namespaces before), removed.

    The guard's check puts back what was replaced or deleted; a name a notebook added (``torch.helper
    = ...``) would be in every kernel's snapshot.  Submodules stay: importing one binds it in its
    package, as torch's lazily imported parts do."""
    import types

    found = []
    for name, module in modules.items():
        namespace, before = vars(module), saved.get(name, {})
        for key in [k for k, v in namespace.items() if k not in before and not isinstance(v, types.ModuleType)]:
            del namespace[key]
            found.append(f"{name}.{key} was added")
    return found


def _same(a: Any, b: Any) -> bool:
    try:
        import torch

        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            return bool(torch.equal(a, b))
    except ImportError:
        pass
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    try:
        import numpy

        if isinstance(a, numpy.ndarray) or isinstance(b, numpy.ndarray):
            return bool(numpy.array_equal(a, b))
    except ImportError:
        pass
    return bool(a == b)


def _settings() -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    """Process-wide settings a notebook may change, each as (get, set)."""
    import numpy
    import torch
    from torch._tensor_str import PRINT_OPTS

    def print_options() -> dict[str, Any]:
        return dict(vars(PRINT_OPTS))

    def set_print_options(values: dict[str, Any]) -> None:
        vars(PRINT_OPTS).update(values)

    def default_device() -> Any:  # None unless a notebook called set_default_device (the getter says "cpu")
        context = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)
        return None if context is None else context.device

    def deterministic() -> tuple[bool, bool]:
        return torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()

    def set_deterministic(value: tuple[bool, bool]) -> None:
        torch.use_deterministic_algorithms(value[0], warn_only=value[1])

    return {
        "torch default dtype": (torch.get_default_dtype, torch.set_default_dtype),
        "torch default device": (default_device, torch.set_default_device),
        "torch grad mode": (torch.is_grad_enabled, torch.set_grad_enabled),
        "torch anomaly detection": (torch.is_anomaly_enabled, torch.set_anomaly_enabled),
        "torch deterministic algorithms": (deterministic, set_deterministic),
        "torch float32 matmul precision": (torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
        "torch threads": (torch.get_num_threads, torch.set_num_threads),
        "torch print options": (print_options, set_print_options),
        "torch generator": (torch.get_rng_state, torch.set_rng_state),
        "numpy generator": (numpy.random.get_state, numpy.random.set_state),
        "numpy errors": (numpy.geterr, lambda v: numpy.seterr(**v)),
        "numpy print options": (numpy.get_printoptions, lambda v: numpy.set_printoptions(**v)),
        "random generator": (random.getstate, random.setstate),
        "recursion limit": (sys.getrecursionlimit, sys.setrecursionlimit),
    }
