"""Does a student function keep its input's device and dtype?

Devices are checked without a GPU: the inputs are fake CUDA tensors
(``torch._subclasses.FakeTensorMode``), which carry a device and a shape but
no data, so a function that creates tensors on the CPU regardless of its
input fails exactly as it would on a real GPU.  When CUDA is present the same
check also runs on real CUDA tensors.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from ._report import Hint, call, fail, quiet
from .misconceptions import DEVICE_NOT_KEPT, DTYPE_CHANGED
from .tensors import tensors_in

MakeArgs = Callable[[torch.dtype, str], tuple[Any, ...]]


def _check_outputs(
    result: Any,
    name: str,
    what: str,
    ok: Callable[[torch.Tensor], bool],
    got: Callable[[torch.Tensor], str],
    hint: Hint,
) -> None:
    outputs = tensors_in(result)
    if not outputs:
        fail(f"{name}() returned no tensor for {what} inputs.", hint)
    for i, tensor in enumerate(outputs):
        if not ok(tensor):
            label = "the result" if len(outputs) == 1 else f"output {i}"
            fail(f"{name}() was given {what} inputs, but {label} is {got(tensor)}.", hint)


def _label(fn: Callable[..., Any], name: str | None) -> str:
    return name or str(getattr(fn, "__name__", "the function"))


def _on_device(fn: Callable[..., Any], make_args: MakeArgs, label: str, device: str, what: str, hint: Hint) -> None:
    from torch._subclasses.fake_tensor import DataDependentOutputException

    try:
        args = make_args(torch.float32, device)
        result = call(fn, *args, name=label, fallback=hint, passthrough=(DataDependentOutputException,))
    except DataDependentOutputException:  # the function reads values (.item(), float()), which fake tensors lack:
        return  # where its results live cannot be judged this way; other tests judge the values
    _check_outputs(result, label, what, lambda t: t.device.type == device, lambda t: f"on device {t.device}", hint)


def assert_preserves_dtype(
    fn: Callable[..., Any],
    make_args: MakeArgs,
    name: str | None = None,
    dtypes: tuple[torch.dtype, ...] = (torch.float32, torch.float64),
    hint: Hint = DTYPE_CHANGED,
) -> None:
    """``fn(*make_args(dtype, "cpu"))`` returns floating tensors of that dtype."""
    label = _label(fn, name)
    for dtype in dtypes:
        result = call(fn, *make_args(dtype, "cpu"), name=label, fallback=hint)

        def same_dtype(t: torch.Tensor, dtype: torch.dtype = dtype) -> bool:
            return not t.is_floating_point() or t.dtype == dtype

        _check_outputs(result, label, str(dtype), same_dtype, lambda t: f"{t.dtype}", hint)


@functools.cache  # what this torch build can do: asked once (in the grader's zygote, before any kernel forks)
def fake_cuda_available() -> bool:
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode

        with quiet(), FakeTensorMode():
            torch.empty(1, device="cuda")
    except Exception:
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
    label = _label(fn, name)
    if torch.cuda.is_available():
        _on_device(fn, make_args, label, "cuda", "CUDA", hint)
    if not fake_cuda_available():
        _on_device(fn, make_args, label, "meta", "meta-device", hint)
        return None
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        _on_device(fn, make_args, label, "cuda", "CUDA", hint)


class _SimulatedCudaTensor(torch.Tensor):
    """A CPU tensor that refuses host-only operations the way a CUDA tensor does.

    ``.numpy()`` (and NumPy's ``__array__``) raise the error a real CUDA tensor
    raises; ``.cpu()``, ``.to("cpu")`` and ``.numpy(force=True)`` bring the data
    back as an ordinary tensor.  Everything else behaves as on the CPU, and
    results stay simulated, so ``t.detach().numpy()`` fails while
    ``t.detach().cpu().numpy()`` works.
    """

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        refused = func is torch.Tensor.__array__ or (func is torch.Tensor.numpy and not kwargs.get("force", False))
        if refused:
            raise TypeError(
                "can't convert cuda:0 device type tensor to numpy. "
                "Use Tensor.cpu() to copy the tensor to host memory first."
            )
        if func is torch.Tensor.cpu or (func is torch.Tensor.to and _targets_cpu(args[1:], kwargs)):
            with torch._C.DisableTorchFunctionSubclass():
                result = func(*args, **kwargs)
            return result.as_subclass(torch.Tensor) if isinstance(result, torch.Tensor) else result
        return super().__torch_function__(func, types, args, kwargs)  # type: ignore[no-untyped-call]


def _targets_cpu(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    target = kwargs.get("device", args[0] if args else None)
    if isinstance(target, torch.Tensor):
        return target.device.type == "cpu" and not isinstance(target, _SimulatedCudaTensor)
    try:
        return target is not None and torch.device(target).type == "cpu"
    except (TypeError, RuntimeError):
        return False


def simulated_cuda(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` as if it lived on a GPU, for the host-only operations (``.numpy()``).

    Keeps ``requires_grad`` and autograd history, so a hidden test can check
    that ``.detach().cpu().numpy()`` is used without a GPU on the machine.
    """
    return tensor.as_subclass(_SimulatedCudaTensor)
