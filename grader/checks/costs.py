"""Tests that cost no more than what they check.

Two ways a hidden test can skip work its verdict does not depend on, without changing any verdict:

- ``call_on_meta``: a call whose large results are checked only by shape and dtype.  The tensors of
  at least ``elements`` elements that the student's code makes with a factory (``torch.rand``,
  ``zeros``, ``full``...) without naming a device are made on PyTorch's ``meta`` device: the shape
  and dtype asked for, no memory, no values.  Every smaller tensor is real, so a test can still read
  its values.  Where that does not hold (the code needed a large tensor's values, or a small result
  came out on ``meta``, made from a large one), the call is made again as ``call`` makes it: a
  correct answer never loses a point to it.
- ``capped``: a reference step handed to student code that should call it a known number of times.
  Each call beyond that number returns the previous result again without doing the work, so code that
  ignores its step count costs what a correct answer costs, and a test that counts the calls (a
  history's length) still sees every one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import torch
from torch.overrides import TorchFunctionMode

from ._report import Hint, call, quiet

T = TypeVar("T")

# The factories ``call_on_meta`` makes large tensors of on ``meta`` (torch's functions, not methods).
FACTORIES = frozenset({torch.rand, torch.randn, torch.randint, torch.zeros, torch.ones, torch.empty, torch.full})
LARGE = 1_000_000  # elements: an image batch such as (32, 3, 224, 224) is 4.8 million


class _LargeOnMeta(TorchFunctionMode):
    """Inside it, a factory call with no device of its own makes a tensor of ``elements`` or more on ``meta``."""

    def __init__(self, elements: int) -> None:
        super().__init__()
        self.elements = elements
        self.made = 0  # tensors made on meta

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if func in FACTORIES and kwargs.get("device") is None and kwargs.get("out") is None:
            try:  # on meta first: it costs nothing and says how large the tensor is
                shell = func(*args, **{**kwargs, "device": "meta"})
            except Exception:  # arguments meta does not take: the call as written says what is wrong
                shell = None
            if isinstance(shell, torch.Tensor) and shell.numel() >= self.elements:
                self.made += 1
                return shell
        return func(*args, **kwargs)


def _tensors(value: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    """The tensors in ``value`` and in the dicts, lists and tuples it holds (a few levels deep)."""
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 4 and isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item, depth + 1)
    elif depth < 4 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item, depth + 1)


def call_on_meta(
    fn: Callable[..., T],
    *args: Any,
    elements: int = LARGE,
    name: str | None = None,
    hint: Hint = None,
    fallback: Hint = None,
    **kwargs: Any,
) -> T:
    """``call(fn, *args, **kwargs)``, with its large tensors made on the ``meta`` device (see the module).

    The result's tensors of at least ``elements`` elements may be on ``meta`` (check their shape and
    dtype, not their values or device); every smaller one is as the student's code made it.  If the
    call raises that way, or a smaller tensor in the result is on ``meta``, ``fn`` is called again
    normally, and an error is then reported as ``call`` reports it.
    """
    mode = _LargeOnMeta(elements)
    try:
        with quiet(), mode:
            result = fn(*args, **kwargs)
    except Exception:  # the code needed values (or is wrong): called again as written
        pass
    else:
        if mode.made == 0 or all(not t.is_meta or t.numel() >= elements for t in _tensors(result)):
            return result
    return call(fn, *args, name=name, hint=hint, fallback=fallback, **kwargs)  # type: ignore[no-any-return]


def capped(fn: Callable[..., T], calls: int) -> Callable[..., T]:
    """``fn`` for its first ``calls`` calls; each later call returns the previous result without running ``fn``.

    For a reference step (a training step that updates parameters in place) given to student code
    asked to run ``calls`` steps: steps beyond those asked for change nothing a test compares, and a
    test that counts them (a history of one value per step) still sees each one.
    """
    if calls < 1:
        raise ValueError(f"capped: calls must be at least 1, got {calls}")
    made = 0  # calls that returned (one that raised is not counted: each such call runs ``fn`` again)
    last: list[T] = []

    def step(*args: Any, **kwargs: Any) -> T:
        nonlocal made
        if made >= calls:
            return last[0]
        result = fn(*args, **kwargs)
        made += 1
        last[:] = [result]
        return result

    step.__name__ = getattr(fn, "__name__", "step")
    step.__qualname__ = getattr(fn, "__qualname__", step.__name__)
    step.__doc__ = getattr(fn, "__doc__", None)
    return step
