"""Inside a kernel: the objects tests rely on stay as the zygote built them, and test cells stay unread.

Student code and the tests share one interpreter, as in any Jupyter kernel, so
a solution cell can replace ``torch.allclose``, ``builtins.isinstance``, a
function of ``grader.checks``, ``sys.modules['torch']``, IPython's input
transformers (which would rewrite the test cells) or the recorder that reports
a failing test.  Three defences, none of which changes an honest notebook:

* ``audit.deny_hooks``: an audit hook, installed before the first student cell,
  refuses the hooks that would watch or rewrite later cells or reach into
  memory: ``sys.settrace``/``sys.setprofile``, new audit hooks, ``gc``'s object
  walks, ``ctypes``' reads of raw memory and of the interpreter's own C API.
* ``Guard.check`` (what it watches: ``watched.py``): before and after every test cell (the builtins after every
  cell, so that the kernel's own code keeps working), every protected module's
  and class's namespace, ``sys``' hooks and streams, the shell's methods, the
  objects it reports through (``SHELL_OBJECTS``: the exception handler and the
  exceptions it takes, the traceback formatters, display hook, publisher and
  traps, events, prefilters, the recorder) and every list or dict of hooks a
  cell can add to (``Guard.held``: transformers, event callbacks, prefilters,
  ``set_hook``), and the notebook's ``torch``/``np`` names are compared by
  identity with a snapshot taken when the kernel started. (A module's or
  class's namespace whose version tag has not moved since it was last found
  intact is not compared again: nothing was stored in it since; ``versions.py``.)  Whatever changed is
  put back before the test runs, all of it: a hook that was caught cannot
  swallow a later test's error. The test cell fails with a message naming what
  was changed (0 points: stock nbgrader would have been fooled instead); every
  other test runs on the pristine kernel and scores what the answers earn.
  Registering a hook at all counts, even a harmless one (a ``post_run_cell``
  callback that prints): a course notebook needs none, and a hook that runs
  during a test could read or rewrite it. (``sys.excepthook``/``sys.displayhook``
  set by a cell are put back by IPython itself when the cell ends.)
* test cells' source never enters IPython's history (``GradingHistory`` stores
  a placeholder) or the line cache (``GradingCompiler``); ``Guard.forget``
  clears the shell's last result and the ``_``-prefixed names a test cell
  bound (never the student's own): no later student code can read a hidden
  test or what it computed.

The snapshot lives in this object, which no student-visible name refers to and
which ``gc`` walks cannot reach. What this cannot stop is
listed in ``SECURITY.md``.
"""

from __future__ import annotations

import ast
import operator
import sys
from typing import Any

from . import versions, watched
from .watched import (
    IGNORED,
    MODULE_PREFIXES,
    MODULES,
    NOTEBOOK_MODULES,
    RESET_EVERY_CELL,
    SHELL_OBJECTS,
    SYS_ATTRIBUTES,
)

TAMPERING = "TamperingDetected"
_MISSING = watched.MISSING


class Guard:
    """The snapshot, taken in the zygote once (before any student code exists: every kernel forks
    with it); ``attached()`` adds, in the kernel, what the kernel's own set-up replaced."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        unloaded = [m for m in MODULES if m.startswith("grader.") and m not in sys.modules]
        if unloaded:  # the grader's own modules are kept intact only if the snapshot holds them: fail closed
            raise RuntimeError(f"the guard's snapshot would miss modules not imported yet: {', '.join(unloaded)}")
        names = [m for m in MODULES if m in sys.modules]
        names += sorted(m for m in sys.modules if m.startswith(MODULE_PREFIXES))
        self.modules = {name: sys.modules[name] for name in names if name != "builtins"}
        self.builtins: dict[str, Any] = vars(sys.modules["builtins"])
        self.saved_builtins = dict(self.builtins)
        # per namespace: its version tag when last found intact (see versions.py; None: compare in
        # full), read before the snapshot is copied
        self.module_tags = {name: versions.tag(vars(module)) for name, module in self.modules.items()}
        self.module_dicts = {name: dict(vars(module)) for name, module in self.modules.items()}
        self.module_items = {name: (tuple(d), tuple(d.values())) for name, d in self.module_dicts.items()}
        classes = watched.classes(shell)
        self.class_tags = {cls: _class_tag(cls) for cls in classes}
        self.classes = {cls: dict(vars(cls)) for cls in classes}
        self.class_items = {cls: (tuple(d), tuple(d.values())) for cls, d in self.classes.items()}
        self.sys_values: dict[str, Any] = {}
        self.attached()
        # per attribute of the shell: where it is stored and its value
        self.objects = {name: (self._stored_in(name), getattr(shell, name)) for name in SHELL_OBJECTS}
        self.held = watched.held(shell)
        self.callables = {name for cls in self.classes for name, value in vars(cls).items() if callable(value)}
        # per object: its instance attributes that are callables or shadow a method of its class
        self.instances = [(obj, self._methods(obj)) for obj in watched.instances(shell)]
        self.bound: dict[str, frozenset[str] | None] = {}  # cell text -> names_bound_by (see ``prime``)

    def prime(self, sources: list[str]) -> None:
        """Work out in the zygote which names each of the course's cells binds (``forget`` needs it
        after every test cell, and parsing costs ~0.6 ms a cell in a fresh kernel)."""
        for source in sources:
            self.bound[source] = self._names_bound_by(source)

    def _names_bound_by(self, code: str) -> frozenset[str] | None:
        names = names_bound_by(self.shell.transform_cell(code))
        return None if names is None else frozenset(names)

    def attached(self) -> None:
        """Take again what ``shell.attach`` replaces in a kernel: the streams, ``input``, ``getpass``."""
        import getpass

        self.sys_values = {name: getattr(sys, name, None) for name in SYS_ATTRIBUTES}
        self.saved_builtins = dict(self.builtins)
        module = vars(getpass)
        self.module_tags["getpass"] = versions.tag(module)
        self.module_dicts["getpass"] = dict(module)
        self.module_items["getpass"] = (tuple(module), tuple(module.values()))
        self.modules["getpass"] = getpass
        if hasattr(self, "instances"):
            self.instances = [(obj, self._methods(obj)) for obj in watched.instances(self.shell)]

    def _stored_in(self, name: str) -> str:
        """``trait``, ``instance`` (the shell's ``__dict__``) or ``class`` (neither: its class's value)."""
        getattr(self.shell, name)  # a trait's default is stored on first access
        namespace = vars(self.shell)
        traits = namespace.get("_trait_values")
        if isinstance(traits, dict) and name in traits:
            return "trait"
        return "instance" if name in namespace else "class"

    def _methods(self, obj: Any) -> dict[str, Any]:
        found = {
            k: v
            for k, v in vars(obj).items()
            if (k in self.callables or callable(v)) and not _own_method(obj, k, v) and k not in RESET_EVERY_CELL
        }
        traits = vars(obj).get("_trait_values")  # traitlets keep trait values (displayhook, ...) here
        if isinstance(traits, dict):
            found.update({f"{k} (trait)": v for k, v in traits.items() if callable(v)})
        return found

    def check(self) -> list[str]:
        """What student code changed of the snapshot; each change is put back.

        The builtins go back first, by dictionary operations alone: the rest of this check (and the
        kernel's own reporting) then runs on the real ``isinstance``, ``len`` and the others.
        """
        found = self.check_builtins()
        self._check_modules(found)
        self._check_classes(found)
        self._check_sys(found)
        self._check_shell(found)
        self._check_notebook(found)
        return found

    def check_builtins(self) -> list[str]:
        """Put the builtins back, by dictionary operations alone (so it works whatever was replaced);
        what had changed. Cheap enough for after every cell: the kernel's own code needs them."""
        builtins_now = self.builtins.copy()
        self.builtins.update(self.saved_builtins)
        return [
            f"builtins.{key} was {'deleted' if key not in builtins_now else 'replaced'}"
            for key, value in self.saved_builtins.items()
            if builtins_now.get(key, _MISSING) is not value and key not in IGNORED
        ]

    def _check_modules(self, found: list[str]) -> None:
        for name, module in self.modules.items():
            if sys.modules.get(name) is not module:
                found.append(f"sys.modules[{name!r}] was replaced")
                sys.modules[name] = module
            tag = self.module_tags.get(name)
            version = -1 if tag is None else tag.read()
            if tag is not None and version == tag.clean:
                continue  # nothing was stored in or deleted from it since it was last found intact
            current = vars(module)
            keys, values = self.module_items[name]
            if any(map(operator.is_not, map(current.get, keys), values)):  # else: compared in C, intact
                saved = self.module_dicts[name]
                for key in [k for k, v in saved.items() if current.get(k, _MISSING) is not v and k not in IGNORED]:
                    found.append(f"{name}.{key} was {'deleted' if key not in current else 'replaced'}")
                    current[key] = saved[key]
            elif tag is not None:
                tag.clean = version  # the version read before comparing: a change made since shows next time

    def _check_classes(self, found: list[str]) -> None:
        for cls, saved in self.classes.items():
            tag = self.class_tags.get(cls)
            version = -1 if tag is None else tag.read()
            if tag is not None and version == tag.clean:
                continue
            current = vars(cls)
            keys, values = self.class_items[cls]
            if len(current) != len(saved) or any(map(operator.is_not, map(current.get, keys), values)):
                label = f"{cls.__module__}.{cls.__qualname__}"
                for key in [k for k, v in saved.items() if current.get(k, _MISSING) is not v]:
                    found.append(f"{label}.{key} was {'deleted' if key not in current else 'replaced'}")
                    _restore(cls, key, saved[key])
                for key in [k for k in current if k not in saved]:
                    found.append(f"{label}.{key} was added")
                    _restore(cls, key, _MISSING)
            elif tag is not None:
                tag.clean = version

    def _check_sys(self, found: list[str]) -> None:
        for name, value in self.sys_values.items():
            if getattr(sys, name, None) is not value:
                found.append(f"sys.{name} was replaced")
                setattr(sys, name, value)
        if sys.gettrace() is not None or sys.getprofile() is not None:
            found.append("a trace or profile function was set")
            sys.settrace(None)
            sys.setprofile(None)

    def _check_shell(self, found: list[str]) -> None:
        """The shell's objects first (what follows reads through them), then the hooks they hold,
        then the methods of the kernel's own objects."""
        self._check_objects(found)
        for held in self.held:
            if not held.intact():
                found.append(f"IPython's {held.label} were changed")
                held.restore()
        for obj, saved_methods in self.instances:
            current = self._methods(obj)
            label = type(obj).__name__
            for key in [k for k in current.keys() | saved_methods.keys() if current.get(k) is not saved_methods.get(k)]:
                found.append(f"{label}.{key} was replaced on the kernel's own {label}")
                value = saved_methods.get(key, _MISSING)
                if key.endswith(" (trait)"):
                    _restore_instance_dict(vars(obj)["_trait_values"], key.removesuffix(" (trait)"), value)
                else:
                    _restore_instance(obj, key, value)

    def _check_objects(self, found: list[str]) -> None:
        label = type(self.shell).__name__
        for name, (kind, saved) in self.objects.items():
            where = self._namespace_of(kind)
            current = where.get(name, _MISSING)
            if current is (_MISSING if kind == "class" else saved):
                continue
            found.append(f"{label}.{name} was {'deleted' if current is _MISSING else 'replaced'}")
            if kind == "class":
                del where[name]  # the class's own value shows again
            else:
                where[name] = saved

    def _namespace_of(self, kind: str) -> dict[str, Any]:
        """Where an attribute of the shell of this kind is stored: its trait values or its ``__dict__``."""
        namespace: dict[str, Any] = vars(self.shell)
        if kind != "trait":
            return namespace
        traits: object = namespace.get("_trait_values")
        return traits if isinstance(traits, dict) else {}

    def _check_notebook(self, found: list[str]) -> None:
        namespace = self.shell.user_ns
        for name, module_name in NOTEBOOK_MODULES.items():
            module = self.modules.get(module_name)
            if module is not None and name in namespace and namespace[name] is not module:
                found.append(f"the name {name} no longer refers to the {module_name} module")
                namespace[name] = module

    def forget(self, before: dict[str, Any], code: str) -> None:
        """Remove what a finished test cell left behind: the shell's last result (it holds the
        cell's source) and the private names the test cell itself bound. ``before`` is the
        notebook's namespace as it was before the test cell ran, ``code`` the cell's source.

        Only names that ``code`` binds (at its top level, or through ``global`` in a function it
        defines) are touched: a private name the student's own cells defined and the student's
        function changed while the test called it (a ``_calls`` counter) is the student's state and
        stays. A private name the test rebound that a student cell had defined gets the student's
        value back; one only the test bound is deleted. (History never held the source: see
        ``GradingHistory``.)"""
        namespace = self.shell.user_ns
        self.shell.last_execution_result = None
        bound = self.bound[code] if code in self.bound else self._names_bound_by(code)
        for key in [k for k, v in namespace.items() if k.startswith("_") and before.get(k, _MISSING) is not v]:
            if _ipython_name(key) or (bound is not None and key not in bound):
                continue
            if key in before:
                namespace[key] = before[key]
            else:
                del namespace[key]


def names_bound_by(code: str) -> set[str] | None:
    """The global names ``code`` may bind: assignment, ``for``/``with``/``except``/import targets,
    ``def`` and ``class`` names, and names a nested function declares ``global``. (A comprehension's
    variables are local to it; counting them too only widens what ``forget`` looks at among the
    names that changed.) ``None`` when the code does not parse: then every changed name counts."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    names: set[str] = set()

    def scope(body: list[ast.stmt]) -> None:  # a nested scope binds only what it declares global
        for node in (n for stmt in body for n in ast.walk(stmt)):
            if isinstance(node, ast.Global):
                names.update(node.names)

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            scope(node.body)
            for child in (*node.decorator_list, *getattr(node, "bases", ()), getattr(node, "args", None)):
                if child is not None:
                    visit(child)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return names


def _class_tag(cls: type) -> versions.Tag | None:
    namespace = versions.class_dict(cls)
    return None if namespace is None else versions.tag(namespace)


def _own_method(obj: Any, key: str, value: Any) -> bool:
    """``obj.key = obj.key``: IPython puts a stream's own ``write`` back this way after every cell."""
    return getattr(value, "__self__", None) is obj and getattr(value, "__func__", None) is getattr(type(obj), key, None)


def _ipython_name(key: str) -> bool:
    """IPython's own underscore names: ``_``, ``__``, ``___``, ``_N``, ``_iN``, ``_i``, ``_ih``..."""
    if key in ("_", "__", "___", "_i", "_ii", "_iii", "_ih", "_oh", "_dh", "_exit_code"):
        return True
    rest = key[2:] if key.startswith("_i") else key[1:]
    return rest.isdigit()


def _restore(cls: type, key: str, value: Any) -> None:
    try:
        if value is _MISSING:
            delattr(cls, key)
        else:
            setattr(cls, key, value)
    except (AttributeError, TypeError):
        pass


def _restore_instance(obj: Any, key: str, value: Any) -> None:
    _restore_instance_dict(obj.__dict__, key, value)


def _restore_instance_dict(namespace: dict[str, Any], key: str, value: Any) -> None:
    if value is _MISSING:
        namespace.pop(key, None)
    else:
        namespace[key] = value


def tampering_output(changes: list[str]) -> dict[str, Any]:
    """The error a test cell gets when student code changed what it relies on."""
    shown = "; ".join(changes[:5]) + (f"; and {len(changes) - 5} more" if len(changes) > 5 else "")
    text = (
        f"Your code changed what the tests rely on ({shown}). Tests run against the original objects, "
        "and this test scores 0 while your notebook makes such changes: remove that code."
    )
    return {"output_type": "error", "ename": TAMPERING, "evalue": text, "traceback": [f"{TAMPERING}: {text}"]}
