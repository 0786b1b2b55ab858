"""Assertions about ``nn.Module``: registered parameters and buffers, and state dicts (``.to()``: ``placement``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch import nn

from ._report import Hint, describe, diagnose, error_line, fail, quiet
from .misconceptions import (
    BUFFER_NOT_REGISTERED,
    BUFFER_VS_PARAMETER,
    LOAD_REPLACES_PARAMETERS,
    PARAM_AS_PLAIN_TENSOR,
    PARAMETERS_ONLY_STATE,
    STATE_SHARES_MEMORY,
    SUPER_INIT_MISSING,
    Misconception,
)
from .tensors import assert_close, assert_shape, assert_tensor

Shape = tuple[int, ...]

# Substrings of nn.Module's errors and the misconception each reveals (before the general table).
_MODULE_ERRORS: tuple[tuple[str, Misconception], ...] = (
    ("before module.__init__() call", SUPER_INIT_MISSING),
    ("object has no attribute '_parameters'", SUPER_INIT_MISSING),
    ("object has no attribute '_buffers'", SUPER_INIT_MISSING),
    ("object has no attribute '_modules'", SUPER_INIT_MISSING),
    ("(torch.nn.parameter or none expected)", LOAD_REPLACES_PARAMETERS),
)


def module_hint(error: BaseException) -> Misconception | None:
    """The misconception an exception raised by a module's code reveals, if any."""
    return diagnose(error, _MODULE_ERRORS)


def call_module(make: Callable[..., Any], *args: Any, name: str, hint: Hint = None) -> Any:
    """``make(*args)`` quietly (a constructor, a module call); errors name what they reveal."""
    try:
        with quiet():
            return make(*args)
    except AssertionError:
        raise
    except Exception as error:
        fail(
            f"Calling {name} raised {type(error).__name__}: {error_line(error)}",
            hint if hint is not None else module_hint(error),
        )


def assert_module(value: Any, name: str = "the model") -> None:
    if not isinstance(value, nn.Module):
        fail(f"{name}: expected an nn.Module, got {describe(value)}.")


def plain_tensors(module: nn.Module) -> dict[str, torch.Tensor]:
    """Tensors kept as ordinary attributes of the module or its submodules: neither parameters nor buffers."""
    found: dict[str, torch.Tensor] = {}
    for prefix, sub in module.named_modules():
        for attr, value in vars(sub).items():
            if isinstance(value, torch.Tensor) and not attr.startswith("__"):
                found[f"{prefix}.{attr}" if prefix else attr] = value
    return found


def _devices_kept(module: nn.Module) -> dict[str, torch.device]:
    found: dict[str, torch.device] = {}
    for prefix, sub in module.named_modules():
        for attr, value in vars(sub).items():
            if isinstance(value, torch.device):
                found[f"{prefix}.{attr}" if prefix else attr] = value
    return found


def assert_registered(
    module: Any,
    parameters: Mapping[str, Shape],
    buffers: Mapping[str, Shape] | None = None,
    name: str = "the model",
) -> None:
    """The module registers exactly these parameters and these (persistent) buffers, with these shapes.

    A tensor the task calls a parameter but kept as a plain attribute, or registered as a buffer, and
    the reverse, each fail with the misconception it shows.
    """
    assert_module(module, name)
    buffers = dict(buffers or {})
    own_parameters = dict(module.named_parameters())
    own_buffers = dict(module.named_buffers())
    plain = plain_tensors(module)
    saved = set(module.state_dict())
    for key, shape in parameters.items():
        if key not in own_parameters:
            if key in own_buffers:
                fail(
                    f"{name}.{key} is registered as a buffer, not a parameter: {name}.parameters() leaves it "
                    "out, so an optimizer would never train it.",
                    BUFFER_VS_PARAMETER,
                )
            if key in plain:
                fail(
                    f"{name}.{key} is a plain tensor attribute (requires_grad={plain[key].requires_grad}), not an "
                    f"nn.Parameter: it is missing from {name}.parameters().",
                    PARAM_AS_PLAIN_TENSOR,
                )
            fail(f"{name} has no parameter named {key!r}; its parameters: {', '.join(own_parameters) or 'none'}.")
        value = own_parameters[key]
        assert_shape(value, shape, f"{name}.{key}")
        if not value.requires_grad:
            fail(f"{name}.{key} is a parameter with requires_grad=False; a trainable parameter requires grad.")
    for key, shape in buffers.items():
        if key not in own_buffers:
            if key in own_parameters:
                fail(
                    f"{name}.{key} is an nn.Parameter, so {name}.parameters() hands it to the optimizer, which "
                    "would train it; state that is not learned is a buffer (register_buffer).",
                    BUFFER_VS_PARAMETER,
                )
            if key in plain:
                fail(
                    f"{name}.{key} is a plain tensor attribute, not a registered buffer: it is missing from "
                    f"{name}.buffers() and {name}.state_dict().",
                    BUFFER_NOT_REGISTERED,
                )
            fail(f"{name} has no buffer named {key!r}; its buffers: {', '.join(own_buffers) or 'none'}.")
        assert_shape(own_buffers[key], shape, f"{name}.{key}")
        if key not in saved:
            fail(
                f"{name}.{key} is a buffer registered with persistent=False: {name}.state_dict() leaves it out.",
                BUFFER_NOT_REGISTERED,
            )
    extra = sorted(set(own_parameters) - set(parameters))
    if extra:
        hint = BUFFER_VS_PARAMETER if set(extra) & set(buffers) else None
        fail(f"{name} has parameter(s) the task does not ask for: {', '.join(extra)}.", hint)
    extra = sorted(set(own_buffers) - set(buffers))
    if extra:
        fail(f"{name} has buffer(s) the task does not ask for: {', '.join(extra)}.")


def assert_state(
    state: Any,
    module: nn.Module,
    expected: Mapping[str, torch.Tensor],
    name: str = "the state",
    hint: Hint = None,
) -> None:
    """``state`` maps exactly the names of ``module.state_dict()`` to tensors equal to ``expected``'s.

    Missing buffers fail with ``parameters-only-state``; a value that no longer matches ``expected``
    but follows the module's current one, with ``state-shares-memory``.
    """
    if not isinstance(state, Mapping):
        fail(f"{name}: expected a dict of name -> tensor, got {describe(state)}.")
    wanted = list(module.state_dict())
    missing = [k for k in wanted if k not in state]
    if missing:
        buffers = {k for k, _ in module.named_buffers()}
        fail(
            f"{name} lacks {len(missing)} of the {len(wanted)} entries of the model's state_dict(): "
            f"{', '.join(missing)}.",
            PARAMETERS_ONLY_STATE if set(missing) <= buffers else hint,
        )
    unexpected = [str(k) for k in state if k not in wanted]
    if unexpected:
        fail(f"{name} has key(s) the model's state_dict() does not: {', '.join(unexpected)}.", hint)
    current = module.state_dict()
    for key in wanted:
        value = state[key]
        assert_tensor(value, f"{name}[{key!r}]", hint)
        with torch.no_grad():
            follows = (
                value.shape == current[key].shape
                and not torch.equal(current[key].detach().cpu(), expected[key].detach().cpu())
                and torch.equal(value.detach().cpu(), current[key].detach().cpu())
            )
        assert_close(
            value.detach(),
            expected[key].detach(),
            name=f"{name}[{key!r}]",
            check_device=False,
            hint=STATE_SHARES_MEMORY if follows else hint,
        )


def assert_module_state(
    module: nn.Module, expected: Mapping[str, torch.Tensor], name: str = "the model", hint: Hint = None
) -> None:
    """``module.state_dict()`` holds ``expected``'s values, as after loading them into the module.

    When only buffers (BatchNorm's running statistics) kept their old values, the message names
    ``parameters-only-state``: the loading went through ``named_parameters()``.
    """
    current = module.state_dict()
    if set(current) != set(expected):
        fail(f"{name}.state_dict() has the keys {', '.join(current)}; expected {', '.join(expected)}.", hint)
    wrong = []
    for key, value in current.items():
        try:
            assert_close(value.detach(), expected[key].detach(), name=key, check_device=False)
        except AssertionError:
            wrong.append(key)
    buffers = {k for k, _ in module.named_buffers()}
    for key in wrong:
        assert_close(
            current[key].detach(),
            expected[key].detach(),
            name=f"{name}.state_dict()[{key!r}]",
            check_device=False,
            hint=PARAMETERS_ONLY_STATE if set(wrong) <= buffers else hint,
        )


@contextlib.contextmanager
def changed_in_place(module: nn.Module, scale: float = -1.5, shift: float = 0.25) -> Iterator[None]:
    """Within the block the module's parameters and buffers hold other values, as after a training step.

    The same tensors are changed in place (``p.mul_(scale).add_(shift)`` under ``no_grad``); they are
    put back afterwards.
    """
    saved = {k: v.detach().clone() for k, v in module.state_dict().items()}
    tensors = dict(module.named_parameters()) | dict(module.named_buffers())
    with torch.no_grad():
        for tensor in tensors.values():
            if tensor.is_floating_point():
                tensor.mul_(scale).add_(shift)
    try:
        yield
    finally:
        with torch.no_grad():
            for key, tensor in tensors.items():
                if key in saved:
                    tensor.copy_(saved[key])


def assert_same_parameters(
    module: nn.Module, before: Mapping[str, torch.Tensor], name: str = "the model", action: str = "restore()"
) -> None:
    """Every parameter of ``module`` is still the very object it was before ``action`` (an optimizer holds those)."""
    now = dict(module.named_parameters())
    for key, old in before.items():
        if now.get(key) is not old:
            fail(
                f"After {action}, {name}.{key} is another tensor object than before: the parameter was replaced "
                "instead of updated in place.",
                LOAD_REPLACES_PARAMETERS,
            )
