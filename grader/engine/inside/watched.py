"""Inside a kernel: what the guard keeps as the zygote built it (``guard.Guard`` takes the snapshot of these).

The modules whose attributes the tests (or the kernel's own reporting) rely on, ``sys``' hooks and
streams, the shell's own objects, the classes of the kernel's objects, and every list or dict of
hooks a cell can add to (``Held``).
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from typing import Any

# Modules whose attributes the tests (or the kernel's own reporting) rely on.
MODULES = (
    "builtins",
    "torch",
    "torch.testing",
    "torch.testing._comparison",
    "torch.nn",
    "torch.nn.functional",
    "torch.autograd",
    "torch.linalg",
    "torch.overrides",
    "torch._subclasses.fake_tensor",
    "numpy",
    "math",
    "inspect",
    "json",
    "json.encoder",
    "struct",
    "socket",
    "traceback",
    "linecache",
    "IPython.core.interactiveshell",
    "IPython.core.displayhook",
    "IPython.core.compilerop",
    "ast",
    "grader",
    "grader.checks",
    "grader.engine.inside.shell",
    "grader.engine.inside.recorder",
    "grader.engine.protocol",
    "grader.engine.forking.zygote",
    "grader.engine.inside.guard",
    "grader.engine.inside.audit",
    "grader.engine.inside.watched",
    "grader.engine.inside.precompiled",
)
MODULE_PREFIXES = ("grader.checks.",)
SYS_ATTRIBUTES = ("excepthook", "displayhook", "stdout", "stderr", "stdin", "__stdout__", "__stderr__")
# The shell's own objects that show a cell's errors and results, or run hooks around it: a cell
# must not replace them (``recorder`` is a class attribute: an instance one would shadow it).
SHELL_OBJECTS = (
    "_trait_values",  # where traitlets keep the values of the others that are traits: first
    "custom_exceptions",
    "InteractiveTB",
    "SyntaxTB",
    "displayhook",
    "display_pub",
    "display_trap",
    "builtin_trap",
    "display_formatter",
    "events",
    "hooks",
    "strdispatchers",
    "prefilter_manager",
    "input_transformer_manager",
    "compile",
    "history_manager",
    "recorder",
)
# Names a notebook binds to modules the test cells use.
NOTEBOOK_MODULES = {"torch": "torch", "np": "numpy", "numpy": "numpy"}
# Entries that change in honest use (IPython's last result, the warnings registry).
IGNORED = frozenset({"_", "__", "___", "__warningregistry__"})
# Callables IPython itself stores on its objects around every cell: ``DisplayTrap`` keeps the
# ``sys.displayhook`` it replaces there (and puts it back after the cell, where ``sys`` is checked).
RESET_EVERY_CELL = frozenset({"old_hook"})
MISSING = object()


def instances(shell: Any) -> list[Any]:
    """The kernel's own objects whose methods run around or inside every cell."""
    return [
        shell,
        shell.history_manager,
        shell.compile,
        shell.displayhook,
        shell.display_pub,
        shell.display_trap,
        shell.builtin_trap,
        shell.InteractiveTB,
        shell.SyntaxTB,
        shell.events,
        shell.prefilter_manager,
        shell.input_transformer_manager,
        shell.recorder,
        sys.stdout,
        sys.stderr,
    ]


@dataclass(frozen=True)
class Held:
    """A list or dict of hooks the kernel keeps (transformers, event callbacks...): where it is
    stored (``namespace[key]``), the object itself and its items as the snapshot found them."""

    label: str
    namespace: dict[Any, Any]
    key: Any
    container: list[Any] | dict[Any, Any]
    items: tuple[Any, ...]

    @staticmethod
    def of(label: str, namespace: dict[Any, Any], key: Any) -> Held:
        container = namespace[key]
        items = tuple(container.items()) if isinstance(container, dict) else tuple(container)
        return Held(label, namespace, key, container, items)

    def intact(self) -> bool:
        current = self.namespace.get(self.key, MISSING)
        if current is not self.container or len(current) != len(self.items):
            return False
        if isinstance(current, dict):
            return all(current.get(k, MISSING) is v for k, v in self.items)
        return all(a is b for a, b in zip(current, self.items, strict=True))

    def restore(self) -> None:
        self.namespace[self.key] = self.container
        if isinstance(self.container, dict):
            self.container.clear()
            self.container.update(self.items)
        else:
            self.container[:] = self.items


def namespace(obj: Any, name: str) -> dict[str, Any]:
    """Where ``obj.name`` is stored: the trait values of a traitlets object, else its ``__dict__``."""
    getattr(obj, name)  # a trait's default is stored on first access
    traits = vars(obj).get("_trait_values")
    return traits if isinstance(traits, dict) and name in traits else vars(obj)


def held(shell: Any) -> list[Held]:
    """Every list or dict of hooks a cell can add to, containers before what they contain."""
    manager, prefilter, events = shell.input_transformer_manager, shell.prefilter_manager, shell.events
    held = [
        Held.of("input_transformers_cleanup", vars(manager), "cleanup_transforms"),
        Held.of("line transforms", vars(manager), "line_transforms"),
        Held.of("token transformers", vars(manager), "token_transformers"),
        Held.of("input_transformers_post", namespace(shell, "input_transformers_post"), "input_transformers_post"),
        Held.of("ast_transformers", namespace(shell, "ast_transformers"), "ast_transformers"),
        Held.of("prefilter transformers", vars(prefilter), "_transformers"),
        Held.of("prefilter checkers", vars(prefilter), "_checkers"),
        Held.of("prefilter handlers", vars(prefilter), "_handlers"),
        Held.of("prefilter escape handlers", vars(prefilter), "_esc_handlers"),
        Held.of("events", vars(events), "callbacks"),
        *(Held.of(f"{name} event callbacks", events.callbacks, name) for name in events.callbacks),
        Held.of("hooks", vars(shell), "hooks"),
        *(Held.of(f"{name} hooks", vars(dispatcher), "chain") for name, dispatcher in shell.hooks.items()),
        Held.of("string-dispatched hooks", vars(shell), "strdispatchers"),
        Held.of("precompiled course cells", vars(shell.compile), "course_code"),
    ]
    return held


def classes(shell: Any) -> list[type]:
    import torch

    from . import precompiled
    from .recorder import Stream

    found: list[type] = [torch.Tensor, torch._C.TensorBase, torch.nn.Module, torch.nn.Parameter, BaseException, Stream]
    # what IPython builds a cell's statements with before compiling them, and the zygote's placeholders
    found += [ast.AST, ast.Module, ast.Interactive, ast.Expr, ast.Pass, *precompiled.PLACEHOLDERS, precompiled.Entry]
    for obj in instances(shell):
        found.extend(c for c in type(obj).__mro__ if c is not object)
    return list(dict.fromkeys(found))
