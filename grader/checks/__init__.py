"""Assertions the course's hidden tests call inside student kernels.

Imports only the standard library and torch.  Every check returns None or
raises AssertionError with a message in the style of
``torch.testing.assert_close``; none writes to stderr (warnings raised by
student code are silenced), and none prints a reference value.
"""

from . import misconceptions
from ._report import call, fail, quiet
from .costs import call_on_meta
from .devices import assert_preserves_device, assert_preserves_dtype, simulated_cuda
from .functions import (
    assert_function_class,
    assert_function_keeps_device,
    assert_gradcheck,
    assert_gradgradcheck,
    assert_saved_for_backward,
    assert_uses_grad_output,
    backward_grads,
    call_function,
    function_hint,
)
from .gradients import (
    assert_grad_close,
    assert_grad_zeroed,
    assert_graph_attached,
    assert_has_grad,
    assert_leaf,
    assert_no_graph,
    numeric_gradient,
)
from .manual import assert_manual
from .misconceptions import Misconception
from .modules import (
    assert_module,
    assert_module_state,
    assert_registered,
    assert_same_parameters,
    assert_state,
    call_module,
    changed_in_place,
    module_hint,
    plain_tensors,
)
from .placement import assert_module_follows_device, assert_module_follows_dtype, assert_module_keeps_device
from .tensors import (
    assert_close,
    assert_device,
    assert_dtype,
    assert_floating,
    assert_shape,
    assert_tensor,
    scale_factor,
    tensors_in,
)

__all__ = [
    "Misconception",
    "assert_close",
    "assert_device",
    "assert_dtype",
    "assert_floating",
    "assert_function_class",
    "assert_function_keeps_device",
    "assert_grad_close",
    "assert_grad_zeroed",
    "assert_gradcheck",
    "assert_gradgradcheck",
    "assert_graph_attached",
    "assert_has_grad",
    "assert_leaf",
    "assert_manual",
    "assert_module",
    "assert_module_follows_device",
    "assert_module_follows_dtype",
    "assert_module_keeps_device",
    "assert_module_state",
    "assert_no_graph",
    "assert_preserves_device",
    "assert_preserves_dtype",
    "assert_registered",
    "assert_same_parameters",
    "assert_saved_for_backward",
    "assert_shape",
    "assert_state",
    "assert_tensor",
    "assert_uses_grad_output",
    "backward_grads",
    "call",
    "call_function",
    "call_module",
    "call_on_meta",
    "changed_in_place",
    "fail",
    "function_hint",
    "misconceptions",
    "module_hint",
    "numeric_gradient",
    "plain_tensors",
    "quiet",
    "scale_factor",
    "simulated_cuda",
    "tensors_in",
]
