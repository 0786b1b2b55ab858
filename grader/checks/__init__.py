"""Assertions the course's hidden tests call inside student kernels.

Imports only the standard library and torch.  Every check returns None or
raises AssertionError with a message in the style of
``torch.testing.assert_close``; none writes to stderr (warnings raised by
student code are silenced), and none prints a reference value.
"""

from . import misconceptions
from ._report import call, fail, quiet
from .devices import assert_preserves_device, assert_preserves_dtype, simulated_cuda
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
    "assert_grad_close",
    "assert_grad_zeroed",
    "assert_graph_attached",
    "assert_has_grad",
    "assert_leaf",
    "assert_manual",
    "assert_no_graph",
    "assert_preserves_device",
    "assert_preserves_dtype",
    "assert_shape",
    "assert_tensor",
    "call",
    "fail",
    "misconceptions",
    "numeric_gradient",
    "quiet",
    "scale_factor",
    "simulated_cuda",
    "tensors_in",
]
