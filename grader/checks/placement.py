"""Assertions about ``nn.Module.to()``: after a move to the GPU or another dtype, everything follows.

A module is checked on a GPU without one: it is built on the CPU as usual, then moved with
``module.to("cuda")`` inside a ``FakeTensorMode`` that accepts real tensors, so its registered
tensors become fake CUDA tensors (a shape and a device, no data) while anything ``.to()`` does not
reach stays on the CPU, exactly as on a real GPU.  With CUDA present the same runs on the GPU too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ._report import Hint, describe, error_line, fail, quiet
from .devices import fake_cuda_available
from .misconceptions import (
    BUFFER_NOT_REGISTERED,
    DEVICE_FIXED_AT_INIT,
    DEVICE_NOT_KEPT,
    DTYPE_CHANGED,
    LOAD_REPLACES_PARAMETERS,
    PARAM_AS_PLAIN_TENSOR,
)
from .modules import _devices_kept, assert_module, call_module, module_hint, plain_tensors
from .tensors import tensors_in


def _stray(
    module: nn.Module, ok: Callable[[torch.Tensor], bool], label: str, how: str, what: Callable[[torch.Tensor], str]
) -> None:
    """Fail on the first tensor attribute ``how`` (e.g. ``.to("cuda")``) left behind, with its misconception."""
    for key, value in plain_tensors(module).items():
        if not ok(value):
            hint = PARAM_AS_PLAIN_TENSOR if value.requires_grad else BUFFER_NOT_REGISTERED
            fail(f"After {label}{how}, {label}.{key} is still {what(value)}: it is a plain tensor attribute.", hint)


def _check_output(
    out: Any,
    label: str,
    given: str,
    ok: Callable[[torch.Tensor], bool],
    what: Callable[[torch.Tensor], str],
    hint: Hint,
) -> None:
    outputs = tensors_in(out)
    if not outputs:
        fail(f"{label}(x) returned {describe(out)} for {given}, expected a tensor.")
    for tensor in outputs:
        if not ok(tensor):
            fail(f"{label}(x) was given {given}, but returned a tensor {what(tensor)}.", hint)


def _module_on_device(
    make_module: Callable[[], Any],
    make_input: Callable[[torch.dtype, str], Any],
    label: str,
    device: str,
    fake: bool,
    hint: Hint,
) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    from .functions import _unjudgeable

    module = call_module(make_module, name=f"{label}'s constructor")
    assert_module(module, label)
    mode: contextlib.AbstractContextManager[Any] = (
        FakeTensorMode(allow_non_fake_inputs=True) if fake else contextlib.nullcontext()
    )
    what = "CUDA" if device == "cuda" else f"{device}-device"
    with mode:
        moved = call_module(module.to, device, name=f"{label}.to({device!r})")
        if moved is not module:
            fail(f"{label}.to({device!r}) returned another object than the module itself; nn.Module.to returns self.")
        for key, tensor in list(module.named_parameters()) + list(module.named_buffers()):
            if tensor.device.type != device:
                fail(f"After {label}.to({device!r}), {label}.{key} is on device {tensor.device}.", hint)
        _stray(module, lambda t: t.device.type == device, label, f".to({device!r})", lambda t: f"on device {t.device}")
        kept = {k: v for k, v in _devices_kept(module).items() if v.type != device}
        x = make_input(torch.float32, device)
        try:
            with quiet():
                out = module(x)
        except _unjudgeable():
            return None  # forward needs values (.item(), x[x < 0]), which fake tensors lack: other tests judge it
        except Exception as error:
            fail(
                f"After {label}.to({device!r}), calling {label}(x) on {what} input raised "
                f"{type(error).__name__}: {error_line(error)}",
                DEVICE_FIXED_AT_INIT if kept else (module_hint(error) or hint),
            )
        _check_output(
            out,
            label,
            f"{what} input after {label}.to({device!r})",
            lambda t: t.device.type == device,
            lambda t: f"on device {t.device}",
            DEVICE_FIXED_AT_INIT if kept else hint,
        )


def assert_module_follows_device(
    make_module: Callable[[], Any],
    make_input: Callable[[torch.dtype, str], Any],
    name: str | None = None,
    hint: Hint = DEVICE_NOT_KEPT,
) -> None:
    """After ``module.to("cuda")`` every tensor the module holds is on the GPU, and so is its output.

    ``make_module()`` builds a fresh module on the CPU; ``make_input(dtype, device)`` a batch for it.
    Runs with fake CUDA tensors everywhere (the meta device where this torch build cannot fake CUDA),
    and on real CUDA when a GPU is present. A plain tensor attribute left behind fails with
    ``buffer-not-registered`` or ``param-as-plain-tensor``; a device stored in ``__init__``, with
    ``device-fixed-at-init``.
    """
    label = name or str(getattr(make_module, "__name__", "the model"))
    if torch.cuda.is_available():
        _module_on_device(make_module, make_input, label, "cuda", False, hint)
    if fake_cuda_available():
        _module_on_device(make_module, make_input, label, "cuda", True, hint)
    else:
        _module_on_device(make_module, make_input, label, "meta", False, hint)


def assert_module_follows_dtype(
    make_module: Callable[[], Any],
    make_input: Callable[[torch.dtype, str], Any],
    dtype: torch.dtype = torch.float64,
    name: str | None = None,
    hint: Hint = DTYPE_CHANGED,
) -> None:
    """After ``module.to(dtype)`` every floating tensor the module holds has that dtype, and so has its output."""
    label = name or str(getattr(make_module, "__name__", "the model"))
    module = call_module(make_module, name=f"{label}'s constructor")
    assert_module(module, label)
    call_module(module.to, dtype, name=f"{label}.to({dtype})")
    for key, tensor in list(module.named_parameters()) + list(module.named_buffers()):
        if tensor.is_floating_point() and tensor.dtype != dtype:
            fail(f"After {label}.to({dtype}), {label}.{key} has dtype {tensor.dtype}.", hint)
    _stray(
        module, lambda t: not t.is_floating_point() or t.dtype == dtype, label, f".to({dtype})", lambda t: f"{t.dtype}"
    )
    out = call_module(module, make_input(dtype, "cpu"), name=f"{label}(x) after {label}.to({dtype})")
    _check_output(
        out,
        label,
        f"{dtype} input after {label}.to({dtype})",
        lambda t: not t.is_floating_point() or t.dtype == dtype,
        lambda t: f"of dtype {t.dtype}",
        hint,
    )


def _keeps_device(
    action: Callable[[nn.Module], Any], make_module: Callable[[], Any], label: str, what: str, device: str, fake: bool
) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    module = call_module(make_module, name=f"{label}'s constructor")
    assert_module(module, label)
    mode: contextlib.AbstractContextManager[Any] = (
        FakeTensorMode(allow_non_fake_inputs=True) if fake else contextlib.nullcontext()
    )
    with mode:
        call_module(module.to, device, name=f"{label}.to({device!r})")
        call_module(action, module, name=what)
        for key, tensor in list(module.named_parameters()) + list(module.named_buffers()):
            if tensor.device.type != device:
                fail(
                    f"{label} was on the GPU ({device}); after {what}, {label}.{key} is on device {tensor.device}.",
                    LOAD_REPLACES_PARAMETERS if key in dict(module.named_parameters()) else DEVICE_NOT_KEPT,
                )


def assert_module_keeps_device(
    action: Callable[[nn.Module], Any],
    make_module: Callable[[], Any],
    name: str = "the model",
    what: str = "the call",
) -> None:
    """``action(module)`` on a module moved to the GPU leaves every parameter and buffer on the GPU.

    Fake CUDA everywhere (the meta device where this torch build cannot fake CUDA), real CUDA too when
    present; ``action`` may use CPU tensors (a checkpoint loaded on the CPU).
    """
    if torch.cuda.is_available():
        _keeps_device(action, make_module, name, what, "cuda", False)
    if fake_cuda_available():
        _keeps_device(action, make_module, name, what, "cuda", True)
    else:
        _keeps_device(action, make_module, name, what, "meta", False)
