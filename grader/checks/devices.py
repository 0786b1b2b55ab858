"""Does a student function keep its input's device and dtype?

Devices are checked without a GPU: the inputs are fake CUDA tensors
(``torch._subclasses.FakeTensorMode``), which carry a device and a shape but
no data, so a function that creates tensors on the CPU regardless of its
input fails exactly as it would on a real GPU.  When CUDA is present the same
check also runs on real CUDA tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ._report import Hint, call, fail, quiet
from .misconceptions import DEVICE_NOT_KEPT, DTYPE_CHANGED
from .tensors import tensors_in

MakeArgs = Callable[[torch.dtype, str], tuple[Any, ...]]


def _check_outputs(result: Any, name: str, what: str, ok: Callable[[torch.Tensor], bool], got: Callable[[torch.Tensor], str], hint: Hint) -> None:
    outputs = tensors_in(result)
    if not outputs:
        fail(f"{name}() returned no tensor for {what} inputs.", hint)
    for i, tensor in enumerate(outputs):
        if not ok(tensor):
            label = "the result" if len(outputs) == 1 else f"output {i}"
            fail(f"{name}() was given {what} inputs, but {label} is {got(tensor)}.", hint)


def assert_preserves_dtype(
    fn: Callable[..., Any],
    make_args: MakeArgs,
    name: str | None = None,
    dtypes: tuple[torch.dtype, ...] = (torch.float32, torch.float64),
    hint: Hint = DTYPE_CHANGED,
) -> None:
    """``fn(*make_args(dtype, "cpu"))`` returns floating tensors of that dtype."""
    label = name or getattr(fn, "__name__", "the function")
    for dtype in dtypes:
        result = call(fn, *make_args(dtype, "cpu"), name=label, hint=hint)
        _check_outputs(
            result,
            label,
            str(dtype),
            lambda t, dtype=dtype: not t.is_floating_point() or t.dtype == dtype,
            lambda t: f"{t.dtype}",
            hint,
        )


def fake_cuda_available() -> bool:
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode

        with quiet(), FakeTensorMode():
            torch.empty(1, device="cuda")
    except Exception:  # noqa: BLE001 - a build without CUDA support
        return False
    return True


def assert_preserves_device(
    fn: Callable[..., Any],
    make_args: MakeArgs,
    name: str | None = None,
    hint: Hint = DEVICE_NOT_KEPT,
) -> None:
    """``fn`` given CUDA inputs returns CUDA tensors and never mixes devices.

    Runs on fake CUDA tensors everywhere (meta tensors where this torch build
    cannot fake CUDA), and on real CUDA tensors too when a GPU is present.
    """
    label = name or getattr(fn, "__name__", "the function")
    if torch.cuda.is_available():
        result = call(fn, *make_args(torch.float32, "cuda"), name=label, hint=hint)
        _check_outputs(result, label, "CUDA", lambda t: t.device.type == "cuda", lambda t: f"on device {t.device}", hint)
    if fake_cuda_available():
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode(allow_non_fake_inputs=False):
            args = make_args(torch.float32, "cuda")
            result = call(fn, *args, name=label, hint=hint)
            _check_outputs(result, label, "CUDA", lambda t: t.device.type == "cuda", lambda t: f"on device {t.device}", hint)
        return None
    result = call(fn, *make_args(torch.float32, "meta"), name=label, hint=hint)
    _check_outputs(result, label, "meta-device", lambda t: t.device.type == "meta", lambda t: f"on device {t.device}", hint)
