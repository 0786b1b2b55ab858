"""Building and raising assertion messages, and running student code quietly.

Messages follow ``torch.testing.assert_close``: what was compared, then the
metadata (shape, dtype, device), then how many elements differ and by how
much.  They never include a reference value, only differences.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn

from .misconceptions import (
    DEVICE_NOT_KEPT,
    DTYPE_CHANGED,
    GRAD_READ_BEFORE_BACKWARD,
    GRAPH_CUT,
    INTEGER_REQUIRES_GRAD,
    NUMPY_NOT_DETACHED,
    SHAPE_MISMATCH,
    UPDATE_TRACKED,
    VIEW_NON_CONTIGUOUS,
    Misconception,
)

Hint = Misconception | str | None

# Substrings of PyTorch error messages and the misconception each reveals.
_KNOWN_ERRORS: tuple[tuple[str, Misconception], ...] = (
    ("Only Tensors of floating point", INTEGER_REQUIRES_GRAD),
    ("view size is not compatible", VIEW_NON_CONTIGUOUS),
    ("leaf Variable that requires grad is being used in an in-place", UPDATE_TRACKED),
    ("Can't call numpy() on Tensor that requires grad", NUMPY_NOT_DETACHED),
    ("can't convert cuda", NUMPY_NOT_DETACHED),
    ("does not require grad and does not have a grad_fn", GRAPH_CUT),
    ("Expected all tensors to be on the same device", DEVICE_NOT_KEPT),
    ("is not on the expected device", DEVICE_NOT_KEPT),
    ("found at least two devices", DEVICE_NOT_KEPT),
    ("to have the same dtype", DTYPE_CHANGED),
    ("expected scalar type", DTYPE_CHANGED),
    ("result type Float can't be cast", DTYPE_CHANGED),
    ("Double did not match Float", DTYPE_CHANGED),
    ("Float did not match Double", DTYPE_CHANGED),
    ("'NoneType' object has no attribute 'zero_'", GRAD_READ_BEFORE_BACKWARD),
    ("'NoneType' object has no attribute 'clone'", GRAD_READ_BEFORE_BACKWARD),
    ("'NoneType' object has no attribute 'item'", GRAD_READ_BEFORE_BACKWARD),
    ("'NoneType' object has no attribute 'detach'", GRAD_READ_BEFORE_BACKWARD),
    ("float() argument must be a string or a real number, not 'NoneType'", GRAD_READ_BEFORE_BACKWARD),
    ("must match the size of tensor", SHAPE_MISMATCH),
    ("shapes cannot be multiplied", SHAPE_MISMATCH),
    ("is invalid for input of size", SHAPE_MISMATCH),
)


def fail(lines: list[str] | str, hint: Hint = None) -> NoReturn:
    """Raise the AssertionError a student reads, with the hint last."""
    text = [lines] if isinstance(lines, str) else list(lines)
    if hint is not None:
        text.append("")
        text.append(str(hint))
    raise AssertionError("\n".join(text))


def diagnose(error: BaseException, first: Sequence[tuple[str, Misconception]] = ()) -> Misconception | None:
    """The misconception a torch error reveals: ``first`` (a check module's own fragments), then the known ones."""
    message = str(error).lower()  # torch's wording changes case between releases
    for fragment, misconception in (*first, *_KNOWN_ERRORS):
        if fragment.lower() in message:
            return misconception
    return None


def error_line(error: BaseException) -> str:
    """An exception's first line, for a message that quotes it."""
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence warnings: nbgrader gives zero to a test cell that writes to stderr."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def call(
    fn: Callable[..., Any],
    *args: Any,
    name: str | None = None,
    hint: Hint = None,
    fallback: Hint = None,
    passthrough: tuple[type[BaseException], ...] = (),
    **kwargs: Any,
) -> Any:
    """Call student code quietly; an exception becomes a readable AssertionError.

    The message names the function and the exception, and the misconception
    when the error text reveals one: ``hint`` overrides that guess, ``fallback``
    is used only when the error text reveals nothing. ``passthrough`` exceptions are the
    caller's to handle, raised as they are.
    """
    label = name or getattr(fn, "__name__", "the function")
    try:
        with quiet():
            return fn(*args, **kwargs)
    except AssertionError:
        raise
    except Exception as error:
        if isinstance(error, passthrough):
            raise
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        fail(
            f"Calling {label}() raised {type(error).__name__}: {first_line}",
            hint if hint is not None else (diagnose(error) or fallback),
        )


def describe(value: Any) -> str:
    """Metadata of a value, never its contents."""
    import torch

    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}, dtype {value.dtype}, device {value.device}"
    return f"a {type(value).__name__}"
