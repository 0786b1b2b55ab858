"""grader.checks.modules: registered parameters and buffers, .to(), and state dicts."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from grader import checks

NAME = "StandardizedLinear(3, 2)"
PARAMETERS = {"weight": (2, 3), "bias": (2,)}
BUFFERS = {"mean": (3,), "std": (3,)}


def message(fn, *args, **kwargs) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(AssertionError) as info:
        fn(*args, **kwargs)
    return str(info.value)


class Good(nn.Module):
    def __init__(self, n_in: int = 3, n_out: int = 2) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_out, n_in))
        self.bias = nn.Parameter(torch.zeros(n_out))
        self.register_buffer("mean", torch.zeros(n_in))
        self.register_buffer("std", torch.ones(n_in))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / self.std) @ self.weight.T + self.bias


class PlainWeight(Good):
    def __init__(self) -> None:
        super().__init__()
        del self.weight
        self.weight = torch.randn(2, 3, requires_grad=True)  # type: ignore[assignment]


class PlainMean(Good):
    def __init__(self) -> None:
        super().__init__()
        del self.mean
        self.mean = torch.zeros(3)


class MeanAsParameter(Good):
    def __init__(self) -> None:
        super().__init__()
        del self.mean
        self.mean = nn.Parameter(torch.zeros(3))


class WeightAsBuffer(Good):
    def __init__(self) -> None:
        super().__init__()
        del self.weight
        self.register_buffer("weight", torch.randn(2, 3))


class StdNotPersistent(Good):
    def __init__(self) -> None:
        super().__init__()
        del self.std
        self.register_buffer("std", torch.ones(3), persistent=False)


class DeviceFixedAtInit(Good):
    def __init__(self) -> None:
        super().__init__()
        self.device = torch.device("cpu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.to(self.device))


class NoSuperInit(nn.Module):
    def __init__(self) -> None:
        self.weight = nn.Parameter(torch.zeros(2, 3))


def batch(dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.randn(4, 3, dtype=dtype, device=device)


def test_a_correct_module_passes() -> None:
    checks.assert_registered(Good(), PARAMETERS, BUFFERS, name=NAME)
    checks.assert_module_follows_device(Good, batch, name=NAME)
    checks.assert_module_follows_dtype(Good, batch, name=NAME)


def test_not_a_module() -> None:
    assert message(checks.assert_module, "model", NAME) == f"{NAME}: expected an nn.Module, got a str."


def test_parameter_kept_as_a_plain_tensor() -> None:
    text = message(checks.assert_registered, PlainWeight(), PARAMETERS, BUFFERS, name=NAME)
    assert text.startswith(
        f"{NAME}.weight is a plain tensor attribute (requires_grad=True), not an nn.Parameter: it is missing "
        f"from {NAME}.parameters().\n\nLikely cause [param-as-plain-tensor]: "
    )
    text = message(checks.assert_module_follows_device, PlainWeight, batch, name=NAME)
    assert text.startswith(f"After {NAME}.to('cuda'), {NAME}.weight is still on device cpu: it is a plain tensor")
    assert "Likely cause [param-as-plain-tensor]" in text
    text = message(checks.assert_module_follows_dtype, PlainWeight, batch, name=NAME)
    assert text.startswith(f"After {NAME}.to(torch.float64), {NAME}.weight is still torch.float32:")


def test_buffer_kept_as_a_plain_tensor() -> None:
    text = message(checks.assert_registered, PlainMean(), PARAMETERS, BUFFERS, name=NAME)
    assert text.startswith(
        f"{NAME}.mean is a plain tensor attribute, not a registered buffer: it is missing from {NAME}.buffers() "
        f"and {NAME}.state_dict().\n\nLikely cause [buffer-not-registered]: "
    )
    text = message(checks.assert_module_follows_device, PlainMean, batch, name=NAME)
    assert text.startswith(f"After {NAME}.to('cuda'), {NAME}.mean is still on device cpu: it is a plain tensor")
    assert "Likely cause [buffer-not-registered]" in text


def test_buffer_and_parameter_swapped() -> None:
    text = message(checks.assert_registered, MeanAsParameter(), PARAMETERS, BUFFERS, name=NAME)
    assert text.startswith(f"{NAME}.mean is an nn.Parameter, so {NAME}.parameters() hands it to the optimizer")
    assert "Likely cause [buffer-vs-parameter]" in text
    text = message(checks.assert_registered, WeightAsBuffer(), PARAMETERS, BUFFERS, name=NAME)
    assert text.startswith(f"{NAME}.weight is registered as a buffer, not a parameter:")
    assert "Likely cause [buffer-vs-parameter]" in text


def test_non_persistent_buffer_and_wrong_shapes_and_extras() -> None:
    text = message(checks.assert_registered, StdNotPersistent(), PARAMETERS, BUFFERS, name=NAME)
    assert text.startswith(f"{NAME}.std is a buffer registered with persistent=False: {NAME}.state_dict() leaves")
    text = message(checks.assert_registered, Good(2, 3), PARAMETERS, BUFFERS, name=NAME)
    assert text.startswith(f"{NAME}.weight has shape (3, 2), expected shape (2, 3).")
    extra = Good()
    extra.scale = nn.Parameter(torch.ones(1))
    text = message(checks.assert_registered, extra, PARAMETERS, BUFFERS, name=NAME)
    assert text == f"{NAME} has parameter(s) the task does not ask for: scale."
    text = message(checks.assert_registered, nn.Linear(3, 2), {"w": (2, 3)}, name=NAME)
    assert text == f"{NAME} has no parameter named 'w'; its parameters: weight, bias."


def test_device_remembered_in_init() -> None:
    text = message(checks.assert_module_follows_device, DeviceFixedAtInit, batch, name=NAME)
    assert text.startswith(
        f"After {NAME}.to('cuda'), calling {NAME}(x) on CUDA input raised FakeTensorDeviceMismatchError"
    )
    assert "Likely cause [device-fixed-at-init]" in text


def test_missing_super_init_is_named() -> None:
    text = message(checks.call_module, NoSuperInit, name=NAME)
    assert text.startswith(f"Calling {NAME} raised AttributeError: cannot assign parameters before Module.__init__()")
    assert "Likely cause [super-init-missing]" in text


def test_state_checks_name_shared_memory_and_missing_buffers() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    copies = {k: v.detach().clone() for k, v in model.state_dict().items()}
    live = model.state_dict()
    deep = copy.deepcopy(model.state_dict())
    parameters_only = {k: v.detach().clone() for k, v in model.named_parameters()}
    with checks.changed_in_place(model):
        checks.assert_state(copies, model, before, name="snapshot(model)")
        checks.assert_state(deep, model, before, name="snapshot(model)")
        text = message(checks.assert_state, live, model, before, name="snapshot(model)")
        assert text.startswith(
            "snapshot(model)['0.weight'] (a tensor of shape (4, 3), dtype torch.float32, device cpu) does not "
            "match the reference."
        )
        assert "Likely cause [state-shares-memory]" in text
        text = message(checks.assert_state, parameters_only, model, before, name="snapshot(model)")
        assert text.startswith(
            "snapshot(model) lacks 3 of the 7 entries of the model's state_dict(): "
            "1.running_mean, 1.running_var, 1.num_batches_tracked.\n\nLikely cause [parameters-only-state]: "
        )
    # the block put the values back
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    text = message(checks.assert_state, {**copies, "2.weight": torch.ones(1)}, model, before, name="s")
    assert text == "s has key(s) the model's state_dict() does not: 2.weight."


def test_module_state_after_loading_names_buffers_left_behind() -> None:
    source, model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)), nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    with torch.no_grad():
        source[1].running_mean.fill_(2.0)
    state = {k: v.clone() for k, v in source.state_dict().items()}
    with torch.no_grad():
        for key, p in model.named_parameters():
            p.copy_(state[key])
    text = message(checks.assert_module_state, model, state, name="the restored model")
    assert text.startswith(
        "the restored model.state_dict()['1.running_mean'] (a tensor of shape (4,), dtype torch.float32, device cpu) "
        "does not match the reference."
    )
    assert "Likely cause [parameters-only-state]" in text
    model.load_state_dict(state)
    checks.assert_module_state(model, state)
    text = message(checks.assert_module_state, model, {"w": torch.ones(1)}, name="m")
    assert text.startswith("m.state_dict() has the keys 0.weight, 0.bias, 1.weight")


def test_parameters_replaced_on_load() -> None:
    model = nn.Linear(2, 1)
    before = dict(model.named_parameters())
    model.load_state_dict({"weight": torch.ones(1, 2), "bias": torch.ones(1)})
    checks.assert_same_parameters(model, before)
    model.load_state_dict({"weight": torch.ones(1, 2), "bias": torch.ones(1)}, assign=True)
    text = message(checks.assert_same_parameters, model, before, name="model", action="restore(model, state)")
    assert text.startswith("After restore(model, state), model.weight is another tensor object than before")
    assert "Likely cause [load-replaces-parameters]" in text


def test_loading_onto_a_gpu_model() -> None:
    state = nn.Linear(3, 2).state_dict()

    def assign(model: nn.Module) -> None:
        model.load_state_dict(state, assign=True)

    checks.assert_module_keeps_device(lambda m: m.load_state_dict(state), lambda: nn.Linear(3, 2))
    text = message(checks.assert_module_keeps_device, assign, lambda: nn.Linear(3, 2), name="model", what="restore()")
    assert text.startswith("model was on the GPU (cuda); after restore(), model.weight is on device cpu.")
    assert "Likely cause [load-replaces-parameters]" in text


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_real_cuda_module_is_checked_too() -> None:
    text = message(checks.assert_module_follows_device, PlainMean, batch, name=NAME)
    assert "buffer-not-registered" in text
