"""Mutants: the instructor's own solution cells, each changed in one place the way a PyTorch student errs.

Every operator below walks a cell's syntax tree and offers one mutant per place it applies: a sign
flipped in an update, ``.grad`` never zeroed or zeroed too early, ``.detach()`` or ``torch.no_grad()``
around what must be tracked (or the ``no_grad`` an update needs taken away), ``sum`` for ``mean``, a loop
one step short or long, a bias dropped, a dtype or device cast removed or added, an in-place operation
on an input, an argument ignored in favour of its default, the other dimension, ``view`` for
``reshape``, ``requires_grad`` dropped, ``backward()`` forgotten. A mutant that keeps full marks is a
hole in the hidden tests, unless it changes nothing the tests can see (``equivalence``).

``codes``: the misconception codes a message may name for that change (empty: any code fits). A cell
the parser cannot read is reported and skipped, never raised.
"""

from __future__ import annotations

import ast
import copy
import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# Each transform gets the copied tree, the node to change (in the copy) and the node's parents;
# it changes the tree in place and returns a short description, or None when it does not apply.
Parents = dict[ast.AST, ast.AST]
Transform = Callable[[ast.Module, ast.AST, Parents], str | None]


@dataclass(frozen=True)
class Operator:
    name: str
    what: str
    """What a student did, in words."""
    applies: Callable[[ast.AST], bool]
    transforms: tuple[Transform, ...]
    codes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Mutant:
    id: str
    cell: str
    """The answer cell's grade id."""
    operator: str
    description: str
    function: str | None
    """The function the change is in (None at a cell's top level)."""
    line: int
    """The changed line, 1-based in the instructor's cell (solution markers removed)."""
    original: str
    """The instructor's line, as written."""
    diff: tuple[str, ...]
    """The change: the lines it removes (``- ``) and adds (``+ ``), as the parser prints them."""
    code: str
    """The whole mutated cell."""
    codes: tuple[str, ...]
    """The misconception codes a message may name for this change (none: any fits)."""


@dataclass(frozen=True)
class Unparsable:
    cell: str
    error: str


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


# --- deriving the mutants ------------------------------------------------------------------------


def _parents(tree: ast.AST) -> Parents:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _enclosing_function(node: ast.AST, parents: Parents) -> str | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node.name
    return None


def _statement_of(node: ast.AST, parents: Parents) -> ast.AST:
    while not isinstance(node, ast.stmt) and node in parents:
        node = parents[node]
    return node


Found = tuple[Operator, str, str | None, int, str]


def cell_mutants(code: str) -> Iterator[Found]:
    """Every (operator, description, function, line, mutated cell) of one answer cell's code;
    raises SyntaxError when the cell does not parse."""
    tree = ast.parse(code)
    original = ast.unparse(tree)
    seen = {original}
    nodes = list(ast.walk(tree))
    parents = _parents(tree)
    for operator in OPERATORS:
        for index, node in enumerate(nodes):
            if not operator.applies(node) or node is tree:
                continue
            for transform in operator.transforms:
                mutated = copy.deepcopy(tree)
                twin = list(ast.walk(mutated))[index]
                twin_parents = _parents(mutated)
                description = transform(mutated, twin, twin_parents)
                if description is None:
                    continue
                ast.fix_missing_locations(mutated)
                text = ast.unparse(mutated)
                if text in seen:
                    continue
                seen.add(text)
                statement = _statement_of(node, parents)
                line = getattr(statement, "lineno", getattr(node, "lineno", 1))
                yield operator, description, _enclosing_function(node, parents), line, text


def _diff(before: str, after: str) -> tuple[str, ...]:
    changed = [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    return tuple(f"{line[0]} {line[1:].strip()}" for line in changed[:6])


def derive(solutions: dict[str, str], limit_per_cell: int = 40) -> tuple[list[Mutant], list[Unparsable]]:
    """The mutants of every answer cell (at most ``limit_per_cell`` each, spread over the operators),
    and the cells that could not be parsed."""
    mutants: list[Mutant] = []
    skipped: list[Unparsable] = []
    for cell, code in solutions.items():
        try:
            found = list(cell_mutants(code))
        except SyntaxError as error:
            skipped.append(Unparsable(cell, f"line {error.lineno}: {error.msg}"))
            continue
        lines = code.splitlines()
        original = ast.unparse(ast.parse(code))
        for operator, description, function, line, text in _spread(found, limit_per_cell):
            mutants.append(
                Mutant(
                    id=f"m{len(mutants) + 1:03d}",
                    cell=cell,
                    operator=operator.name,
                    description=description,
                    function=function,
                    line=line,
                    original=lines[line - 1].strip() if 0 < line <= len(lines) else "",
                    diff=_diff(original, text),
                    code=text,
                    codes=tuple(sorted(operator.codes)),
                )
            )
    return mutants, skipped


def _spread(found: list[Found], limit: int) -> list[Found]:
    """At most ``limit``, taking one per operator in turn so that no operator crowds out the others."""
    by_operator: dict[str, list[Found]] = {}
    for item in found:
        by_operator.setdefault(item[0].name, []).append(item)
    chosen: list[Found] = []
    queues = list(by_operator.values())
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.append(queue.pop(0))
    order = {id(item): i for i, item in enumerate(found)}
    return sorted(chosen, key=lambda item: order[id(item)])
