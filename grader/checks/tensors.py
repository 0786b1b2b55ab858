"""Assertions about a tensor's metadata and values."""

from __future__ import annotations

from typing import Any

import torch

from ._report import Hint, describe, fail, quiet

# Tolerances kinder than torch.testing's defaults: students legitimately
# compute the same quantity in another order (mean() vs sum()/n, a loop of
# 2000 float32 steps), which moves the last bits.
DEFAULT_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float32: (1e-4, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex64: (1e-4, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}


def assert_tensor(value: Any, name: str = "result", hint: Hint = None) -> None:
    if not isinstance(value, torch.Tensor):
        fail(f"{name}: expected a torch.Tensor, got {describe(value)}.", hint)


def assert_shape(value: Any, shape: tuple[int, ...] | torch.Size, name: str = "result", hint: Hint = None) -> None:
    assert_tensor(value, name, hint)
    if tuple(value.shape) != tuple(shape):
        fail(f"{name} has shape {tuple(value.shape)}, expected shape {tuple(shape)}.", hint)


def assert_dtype(value: Any, dtype: torch.dtype, name: str = "result", hint: Hint = None) -> None:
    assert_tensor(value, name, hint)
    if value.dtype != dtype:
        fail(f"{name} has dtype {value.dtype}, expected dtype {dtype}.", hint)


def assert_device(value: Any, device: torch.device | str, name: str = "result", hint: Hint = None) -> None:
    assert_tensor(value, name, hint)
    wanted = torch.device(device)
    if value.device.type != wanted.type or (wanted.index is not None and value.device.index != wanted.index):
        fail(f"{name} is on device {value.device}, expected device {wanted}.", hint)


def assert_floating(value: Any, name: str = "result", hint: Hint = None) -> None:
    assert_tensor(value, name, hint)
    if not (value.is_floating_point() or value.is_complex()):
        fail(f"{name} has dtype {value.dtype}, expected a floating-point dtype.", hint)


def _percent(ratio: float) -> str:
    """A ratio as a percentage with two significant digits: enough to act on, too coarse to solve for."""
    return f"{float(f'{100.0 * ratio:.2g}'):g}%"


def _index(flat_index: int, shape: torch.Size) -> tuple[int, ...]:
    out: list[int] = []
    for size in reversed(shape):
        out.append(flat_index % size)
        flat_index //= size
    return tuple(reversed(out))


def assert_close(
    actual: Any,
    expected: torch.Tensor,
    *,
    name: str = "result",
    rtol: float | None = None,
    atol: float | None = None,
    check_dtype: bool = True,
    check_device: bool = True,
    hint: Hint = None,
) -> None:
    """Compare ``actual`` with a reference tensor without revealing it.

    Metadata is compared first (type, shape, dtype, device); then values with
    per-dtype tolerances.  The message reports how many elements differ and
    the greatest absolute difference, never the reference values.
    """
    assert_shape(actual, expected.shape, name, hint)
    if check_dtype:
        assert_dtype(actual, expected.dtype, name, hint)
    if check_device:
        assert_device(actual, expected.device, name, hint)
    default_rtol, default_atol = DEFAULT_TOLERANCES.get(expected.dtype, (0.0, 0.0))
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    with quiet(), torch.no_grad():
        a = actual.detach().to("cpu", torch.complex128 if actual.is_complex() else torch.float64)
        e = expected.detach().to("cpu", torch.complex128 if expected.is_complex() else torch.float64)
        diff = (a - e).abs()
        allowed = atol + rtol * e.abs()
        nan_mismatch = torch.isnan(a) != torch.isnan(e)
        both_nan = torch.isnan(a) & torch.isnan(e)
        same_inf = torch.isinf(e) & (a == e)
        bad = ((diff > allowed) | nan_mismatch | torch.isnan(diff)) & ~both_nan & ~same_inf
        mismatched = int(bad.sum())
        if mismatched == 0:
            return None
        total = a.numel()
        # The worst element relative to what was allowed there, among those with a nonzero reference:
        # where the reference is 0, any difference the message gave would tell the student that.
        nonzero = bad & torch.isfinite(diff) & (e != 0)
        excess = torch.where(nonzero, diff / allowed.clamp_min(1e-300), torch.zeros_like(diff))
        worst = int(excess.reshape(-1).argmax()) if bool(nonzero.any()) else -1
        worst_diff = float(diff.reshape(-1)[worst]) if worst >= 0 else 0.0
        worst_ref = float(e.abs().reshape(-1)[worst]) if worst >= 0 else 0.0
    lines = [
        f"{name} ({describe(actual)}) does not match the reference.",
        f"Mismatched elements: {mismatched} / {total} ({100.0 * mismatched / total:.1f}%)",
    ]
    if not bool(torch.isfinite(a).all()):
        lines.append(f"{name} contains {int((~torch.isfinite(a)).sum())} NaN or infinite value(s).")
    else:
        # Only a rounded relative difference: an exact absolute difference plus the student's own
        # value would give the reference away.
        if worst >= 0:
            where = f" at index {_index(worst, a.shape)}" if a.dim() else ""
            lines.append(f"Greatest relative difference: {_percent(worst_diff / worst_ref)}{where}")
        lines.append(f"Allowed: absolute {atol:g} plus relative {rtol:g}")
    fail(lines, hint)


def scale_factor(actual: torch.Tensor, expected: torch.Tensor, rtol: float = 1e-3) -> float | None:
    """The constant k with actual ≈ k * expected, or None when there is none.

    Hidden tests use it to recognise a gradient that is exactly N times too
    large (a sum where the loss is a mean) or twice too large (accumulation).
    """
    if not isinstance(actual, torch.Tensor) or actual.shape != expected.shape:
        return None
    with torch.no_grad():
        a = actual.detach().to("cpu", torch.float64).reshape(-1)
        e = expected.detach().to("cpu", torch.float64).reshape(-1)
        denominator = float(e @ e)
        if denominator == 0.0 or not bool(torch.isfinite(a).all()):
            return None
        k = float(a @ e) / denominator
        if bool(torch.allclose(a, k * e, rtol=rtol, atol=rtol * float(e.abs().max()))):
            return k
    return None


def tensors_in(value: Any) -> list[torch.Tensor]:
    """Every tensor in a (nested) tuple, list or dict returned by student code."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in tensors_in(item)]
    return []
