"""Tests that cost no more than what they check: large results made without their values.

``call_on_meta`` is for a call whose large results are checked only by shape and dtype.  The tensors
of at least ``elements`` elements that the student's code makes with a factory (``torch.rand``,
``zeros``, ``full``...) without naming a device are made on PyTorch's ``meta`` device: the shape and
dtype asked for, no memory, no values.  Every smaller tensor is real, so a test can still read its
values.  Where that does not hold (the code needed a large tensor's values, or a small result came
out on ``meta``, made from a large one), the call is made again as ``call`` makes it: a correct
answer never loses a point to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
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
    """The tensors in ``value`` and in the mappings and sequences it holds (a few levels deep)."""
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 4 and isinstance(value, Mapping):
        for item in value.values():
            yield from _tensors(item, depth + 1)
    elif depth < 4 and isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
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
