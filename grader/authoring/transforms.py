"""The syntax-tree side of the mutants: what the operators look for in a cell, and how they change it.

Each transform gets a deep copy of the cell's tree, the node to change (in the copy) and the nodes'
parents; it changes the tree in place and returns a short description of the change (``-= -> +=``,
``.clone() removed``), or None where it does not apply to that node. The predicates tell a tensor
expression from a Python number, a ``.grad`` being cleared, a ``torch.no_grad()`` block. The
operators that pair them with what a student did are in ``operators``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

# Each transform gets the copied tree, the node to change (in the copy) and the node's parents;
# it changes the tree in place and returns a short description, or None when it does not apply.
Parents = dict[ast.AST, ast.AST]
Transform = Callable[[ast.Module, ast.AST, Parents], str | None]


# --- what the operators look for --------------------------------------------------------------


def _call_attr(node: ast.AST, *names: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names


def _torch_call(node: ast.AST, *names: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in names
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "torch"
    )


def _is_zeroing(node: ast.AST) -> bool:
    """``x.grad.zero_()``, ``x.grad = None``, ``opt.zero_grad()`` as a statement."""
    if isinstance(node, ast.Expr):
        call = node.value
        if _call_attr(call, "zero_") and isinstance(call.func, ast.Attribute):  # type: ignore[attr-defined]
            target = call.func.value  # type: ignore[attr-defined]
            return isinstance(target, ast.Attribute) and target.attr == "grad"
        return _call_attr(call, "zero_grad")
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        return isinstance(target, ast.Attribute) and target.attr == "grad"
    return False


def _no_grad_with(node: ast.AST) -> bool:
    return isinstance(node, ast.With) and any(
        _torch_call(item.context_expr, "no_grad", "inference_mode") for item in node.items
    )


def _in_function(node: ast.AST, parents: Parents) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return True
    return False


SCALARS = ("item", "tolist", "numpy", "float", "int", "len", "bool", "str")


def _tensor_expression(node: ast.AST | None) -> bool:
    """An expression that may well be a tensor (not a Python number or a NumPy array by its look)."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name not in SCALARS
    return isinstance(node, ast.BinOp | ast.Subscript | ast.Attribute | ast.Name)


# --- transforms -------------------------------------------------------------------------------


def _replace(parents: Parents, old: ast.AST, new: ast.AST) -> None:
    parent = parents[old]
    for name, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, name, new)
            return
        if isinstance(value, list):
            for i, item in enumerate(value):
                if item is old:
                    value[i] = new
                    return
    raise LookupError("node not found in its parent")


def _statement_list(parents: Parents, node: ast.AST) -> list[ast.stmt]:
    parent = parents[node]
    for _, value in ast.iter_fields(parent):
        if isinstance(value, list) and any(item is node for item in value):
            return value
    raise LookupError("statement not found in its block")


def _swap_augop(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
    assert isinstance(node, ast.AugAssign)
    swap: dict[type[ast.operator], type[ast.operator]] = {ast.Sub: ast.Add, ast.Add: ast.Sub}
    if type(node.op) not in swap:
        return None
    before = "-=" if isinstance(node.op, ast.Sub) else "+="
    node.op = swap[type(node.op)]()
    return f"{before} -> {'+=' if before == '-=' else '-='}"


def _sub_to_add(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
    assert isinstance(node, ast.BinOp)
    if not isinstance(node.op, ast.Sub):
        return None
    node.op = ast.Add()
    return "a - b -> a + b"


def _drop_statement(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
    block = _statement_list(parents, node)
    block[block.index(node)] = ast.Pass()  # type: ignore[arg-type]
    return "statement removed"


def _move_up(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
    block = _statement_list(parents, node)
    i = next(k for k, item in enumerate(block) if item is node)
    if i == 0:
        return None
    block[i - 1], block[i] = block[i], block[i - 1]
    return "moved one statement earlier"


def _detach_value(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
    value = getattr(node, "value", None)
    if not _tensor_expression(value) or not _in_function(node, parents):
        return None
    node.value = ast.Call(ast.Attribute(value, "detach", ast.Load()), [], [])  # type: ignore[attr-defined, arg-type]
    return "(...).detach()"


def _under_no_grad(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
    if not isinstance(node, ast.Assign) or not _tensor_expression(node.value) or not _in_function(node, parents):
        return None
    block = _statement_list(parents, node)
    guard = ast.With([ast.withitem(ast.parse("torch.no_grad()", mode="eval").body)], [node])
    block[block.index(node)] = guard
    return "wrapped in `with torch.no_grad():`"


def _unwrap_no_grad(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
    assert isinstance(node, ast.With)
    block = _statement_list(parents, node)
    i = block.index(node)
    block[i : i + 1] = node.body
    return "`with torch.no_grad():` removed"


def _drop_no_grad_decorator(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
    assert isinstance(node, ast.FunctionDef)
    kept = [d for d in node.decorator_list if not _torch_call(d, "no_grad", "inference_mode")]
    if len(kept) == len(node.decorator_list):
        return None
    node.decorator_list = kept
    return "@torch.no_grad() removed"


def _rename_call(old: str, new: str) -> Transform:
    def transform(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or node.func.attr != old:
            return None
        node.func.attr = new
        return f"{old}() -> {new}()"

    return transform


def _range_off_by_one(delta: int) -> Transform:
    def transform(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"):
            return None
        if not 1 <= len(node.args) <= 2:
            return None
        op = ast.Add() if delta > 0 else ast.Sub()
        node.args[-1] = ast.BinOp(node.args[-1], op, ast.Constant(1))
        return f"range(..., stop {'+' if delta > 0 else '-'} 1)"

    return transform


def _keep_left(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
    assert isinstance(node, ast.BinOp)
    if not isinstance(node.op, ast.Add) or isinstance(node.right, ast.Constant) or isinstance(node.left, ast.Constant):
        return None
    _replace(parents, node, node.left)
    return "a + b -> a (the added term dropped)"


CASTS = ("to", "float", "double", "half", "long", "int", "type", "cpu", "cuda", "contiguous")


def _drop_cast(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
    if not _call_attr(node, *CASTS) or node not in parents:
        return None
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    _replace(parents, node, node.func.value)
    return f".{node.func.attr}(...) removed"


def _drop_keyword(*names: str) -> Transform:
    def transform(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
        assert isinstance(node, ast.Call)
        kept = [k for k in node.keywords if k.arg not in names]
        if len(kept) == len(node.keywords):
            return None
        dropped = [k.arg for k in node.keywords if k.arg in names]
        node.keywords = kept
        return f"{', '.join(f'{d}=' for d in dropped if d)} argument removed"

    return transform


def _add_cast(method: str) -> Transform:
    def transform(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
        assert isinstance(node, ast.Return)
        if not _tensor_expression(node.value):
            return None
        node.value = ast.Call(ast.Attribute(node.value, method, ast.Load()), [], [])  # type: ignore[arg-type]
        return f"return (...).{method}()"

    return transform


IN_PLACE = ("add", "sub", "mul", "div", "pow", "clamp", "abs", "neg", "sqrt", "exp", "relu", "sigmoid", "tanh")


def _in_place(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
    if not _call_attr(node, *IN_PLACE):
        return None
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    if isinstance(node.func.value, ast.Name) and node.func.value.id == "torch":
        return None
    node.func.attr += "_"
    return f".{node.func.attr[:-1]}() -> .{node.func.attr}() (in place)"


def _drop_clone(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
    if not _call_attr(node, "clone") or node not in parents:
        return None
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    _replace(parents, node, node.func.value)
    return ".clone() removed (works on the caller's tensor)"


def _ignore_argument(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
    assert isinstance(node, ast.FunctionDef)
    args = node.args.args
    defaults = node.args.defaults
    for arg, default in zip(args[len(args) - len(defaults) :], defaults, strict=True):
        if (
            isinstance(default, ast.Constant)
            and isinstance(default.value, int | float)
            and not isinstance(default.value, bool)
        ):
            uses = [
                n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == arg.arg and isinstance(n.ctx, ast.Load)
            ]
            if not uses:
                continue
            inner = {id(n) for n in uses}
            for parent_node in list(ast.walk(node)):
                for name, value in ast.iter_fields(parent_node):
                    if isinstance(value, ast.AST) and id(value) in inner:
                        setattr(parent_node, name, ast.Constant(default.value))
                    elif isinstance(value, list):
                        for i, item in enumerate(value):
                            if id(item) in inner:
                                value[i] = ast.Constant(default.value)
            return f"argument `{arg.arg}` ignored: its default {default.value!r} used instead"
    return None


def _other_dim(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
    assert isinstance(node, ast.keyword)
    value = node.value
    if node.arg != "dim" or not isinstance(value, ast.Constant) or not isinstance(value.value, int):
        return None
    other = 1 if value.value == 0 else 0
    node.value = ast.Constant(other)
    return f"dim={value.value} -> dim={other}"


def _drop_requires_grad_call(tree: ast.Module, node: ast.AST, parents: Parents) -> str | None:
    if not _call_attr(node, "requires_grad_") or node not in parents:
        return None
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    _replace(parents, node, node.func.value)
    return ".requires_grad_() removed"


def _is_backward(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and _call_attr(node.value, "backward")
