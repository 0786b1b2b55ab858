"""The mutation operators: each a way a PyTorch student errs, and the transforms that make that error.

``OPERATORS`` is the table ``mutants`` walks, in the order its mutants are numbered: a sign flipped,
``.grad`` never cleared or cleared early, ``.detach()`` or ``torch.no_grad()`` around a tracked
value (or an update's ``no_grad`` removed), ``sum`` for ``mean`` and back, a loop one step off, a
term dropped, a cast removed or added, an in-place operation, an argument ignored, the other
``dim``, ``view`` for ``reshape``, ``requires_grad`` left off, ``backward()`` forgotten. Each names
what a student did, which nodes it applies to, its transforms (``transforms``) and the
misconception codes a message may name for it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from .transforms import (
    CASTS,
    IN_PLACE,
    Transform,
    _add_cast,
    _call_attr,
    _detach_value,
    _drop_cast,
    _drop_clone,
    _drop_keyword,
    _drop_no_grad_decorator,
    _drop_requires_grad_call,
    _drop_statement,
    _ignore_argument,
    _in_place,
    _is_backward,
    _is_zeroing,
    _keep_left,
    _move_up,
    _no_grad_with,
    _other_dim,
    _range_off_by_one,
    _rename_call,
    _sub_to_add,
    _swap_augop,
    _under_no_grad,
    _unwrap_no_grad,
)


@dataclass(frozen=True)
class Operator:
    name: str
    what: str
    """What a student did, in words."""
    applies: Callable[[ast.AST], bool]
    transforms: tuple[Transform, ...]
    codes: frozenset[str] = frozenset()


# --- the operators -----------------------------------------------------------------------------

OPERATORS: tuple[Operator, ...] = (
    Operator(
        "sign-flipped",
        "a sign flipped in an update",
        lambda n: isinstance(n, ast.AugAssign | ast.BinOp),
        (lambda t, n, p: _swap_augop(t, n, p) if isinstance(n, ast.AugAssign) else _sub_to_add(t, n, p),),
    ),
    Operator(
        "grad-never-zeroed",
        "`.grad` never cleared",
        _is_zeroing,
        (_drop_statement,),
        frozenset({"grad-not-zeroed", "grad-accumulated"}),
    ),
    Operator(
        "grad-zeroed-early",
        "`.grad` cleared one step too early",
        _is_zeroing,
        (_move_up,),
        frozenset({"grad-zeroed-before-update", "grad-zeroed-before-read", "grad-not-zeroed"}),
    ),
    Operator(
        "detached",
        "`.detach()` around what must be tracked",
        lambda n: isinstance(n, ast.Return | ast.Assign),
        (_detach_value,),
        frozenset({"graph-cut", "not-a-leaf", "requires-grad-changed", "backward-not-differentiable"}),
    ),
    Operator(
        "no-grad-around",
        "`torch.no_grad()` around what must be tracked",
        lambda n: isinstance(n, ast.Assign),
        (_under_no_grad,),
        frozenset({"graph-cut", "grad-disabled-globally"}),
    ),
    Operator(
        "no-grad-removed",
        "the update done outside `torch.no_grad()`",
        lambda n: _no_grad_with(n) or isinstance(n, ast.FunctionDef),
        (lambda t, n, p: _unwrap_no_grad(t, n, p) if isinstance(n, ast.With) else _drop_no_grad_decorator(t, n, p),),
        frozenset({"update-outside-no-grad", "graph-recorded-in-inference", "param-replaced"}),
    ),
    Operator(
        "sum-for-mean",
        "`sum` where the statement asks for `mean`",
        lambda n: _call_attr(n, "mean"),
        (_rename_call("mean", "sum"),),
        frozenset({"sum-instead-of-mean"}),
    ),
    Operator(
        "mean-for-sum",
        "`mean` where the statement asks for `sum`",
        lambda n: _call_attr(n, "sum"),
        (_rename_call("sum", "mean"),),
    ),
    Operator(
        "loop-off-by-one",
        "a loop one step short or long",
        lambda n: isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "range",
        (_range_off_by_one(-1), _range_off_by_one(+1)),
    ),
    Operator(
        "term-dropped",
        "a bias (an added term) dropped",
        lambda n: isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add),
        (_keep_left,),
    ),
    Operator(
        "cast-removed",
        "a dtype or device cast removed",
        lambda n: (
            _call_attr(n, *CASTS) or (isinstance(n, ast.Call) and any(k.arg in ("dtype", "device") for k in n.keywords))
        ),
        (_drop_cast, lambda t, n, p: _drop_keyword("dtype", "device")(t, n, p) if isinstance(n, ast.Call) else None),
        frozenset({"dtype-changed", "device-not-kept", "view-non-contiguous", "integer-requires-grad"}),
    ),
    Operator(
        "cast-added",
        "a dtype or device cast added",
        lambda n: isinstance(n, ast.Return),
        (_add_cast("double"), _add_cast("cpu")),
        frozenset({"dtype-changed", "device-not-kept"}),
    ),
    Operator(
        "in-place",
        "an in-place operation on an input or a leaf",
        lambda n: _call_attr(n, *IN_PLACE, "clone"),
        (lambda t, n, p: _drop_clone(t, n, p) if _call_attr(n, "clone") else _in_place(t, n, p),),
        frozenset({"input-mutated", "not-a-leaf", "param-replaced", "update-outside-no-grad", "state-shares-memory"}),
    ),
    Operator(
        "argument-ignored",
        "an argument ignored in favour of a constant",
        lambda n: isinstance(n, ast.FunctionDef),
        (_ignore_argument,),
        frozenset({"hard-coded", "argument-ignored"}),
    ),
    Operator(
        "other-dim",
        "the other dimension",
        lambda n: isinstance(n, ast.keyword) and n.arg == "dim",
        (_other_dim,),
        frozenset({"wrong-dim", "channels-last", "shape-mismatch"}),
    ),
    Operator(
        "view-for-reshape",
        "`view` where the tensor may not be contiguous",
        lambda n: _call_attr(n, "reshape", "flatten"),
        (_rename_call("reshape", "view"),),
        frozenset({"view-non-contiguous"}),
    ),
    Operator(
        "requires-grad-dropped",
        "`requires_grad` left off",
        lambda n: (
            _call_attr(n, "requires_grad_")
            or (isinstance(n, ast.Call) and any(k.arg == "requires_grad" for k in n.keywords))
        ),
        (
            lambda t, n, p: (
                _drop_requires_grad_call(t, n, p)
                if _call_attr(n, "requires_grad_")
                else _drop_keyword("requires_grad")(t, n, p)
            ),
        ),
        frozenset({"requires-grad-changed", "grad-before-backward", "not-a-leaf"}),
    ),
    Operator(
        "backward-forgotten",
        "`backward()` never called",
        _is_backward,
        (_drop_statement,),
        frozenset({"grad-before-backward"}),
    ),
)
