"""The configuration reference, written from the code's own definitions.

Which classes: every ``grader.*`` class the course's ``nbgrader_config.py`` names (its preprocessor
lists, its exchange, its late-penalty plugin) that is a traitlets ``Configurable``, with every option
``class_traits(config=True)`` gives (name, type, default, help), the ones it inherits from nbgrader or
nbconvert included; and ``c.GraderService``, the service's settings, from the fields of
``grader.service.config.ServiceConfig`` (name, type, default; the description from the comment on the
field's line, else from ``SERVICE_HELP`` below, which a test keeps complete). For each, the value the
course's ``nbgrader_config.py`` sets, if it sets one.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import io
import os
import re
import tempfile
import tokenize
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from traitlets import TraitType
from traitlets.config import Configurable

from . import markdown as md

DOTTED = re.compile(r"^grader(\.[A-Za-z_]\w*)+$")

# ServiceConfig fields that are not GraderService settings (grader.service.config.load refuses them there).
NOT_SETTINGS = frozenset({"course_root", "db_url", "release_directory"})

# Descriptions of the GraderService settings whose line in grader/service/config.py carries no comment
# (a comment there wins). Each restates what the code that reads the setting does (the module named at the end).
SERVICE_HELP = {
    "exams": "Timed exams (grader.service.rules.exams): assignment -> {opens, closes (UTC), duration_minutes, "
    "grace_minutes, honour, checks_allowed, scores_before_release}; each student's end is fixed by the server's "
    "clock at their start. A setting that cannot be used stops the service at start. See the instructors' "
    "Timed exams page.",
    "host": "The address `grader serve` listens on; `--host` overrides it (grader.service.serve).",
    "port": "The port `grader serve` listens on; `--port` overrides it (grader.service.serve).",
    "workers": "Kernels graded at once by the embedded service (local grading threads); by default one per CPU "
    "`grader serve` may run on (`os.sched_getaffinity`, else `os.cpu_count()`: the default shown is the machine's "
    "that built this page); with a broker, `grader worker --concurrency` applies instead. `--workers` overrides "
    "it (grader.service.config, grader.service.queue.local).",
    "max_upload_bytes": "The largest notebook an upload may be; a larger one is refused with 413 and nothing "
    "is stored (grader.service.web.app).",
    "notebook_timeout_s": "A notebook's whole wall-clock limit in seconds: the cells that finished keep their "
    "points. With a broker it also sets the broker's visibility timeout, `notebook_timeout_s + 2 × lease_s + 300` s "
    "(grader.engine.limits, grader.service.queue.broker).",
    "memory_limit_bytes": "A kernel's address-space limit in bytes (setrlimit): a torch kernel maps about "
    "5 GiB (grader.engine.limits).",
    "resident_limit_bytes": "A kernel whose resident memory passes this many bytes, read every 0.2 s while a "
    "cell runs, is stopped; 0 for no limit, else at least 1 GiB (grader.engine.limits).",
    "max_attempts": "How many infrastructure failures or worker deaths a job may cost before it is failed "
    "with a message (grader.service.queue.leases).",
    "feedback_policy": "Per assignment: `immediate`, `after_deadline` or `score_only`; an assignment not "
    "named gets `immediate` (grader.service.config).",
    "hard_deadline_hours": "Per assignment: hours after the student's (extended) due date after which "
    "submissions are refused (grader.service.rules.deadlines).",
    "max_submissions": "Attempts per student and assignment; 0 for no limit (grader.service.rules.deadlines).",
    "counting": "Which attempt counts in the gradebook: `latest` or `best` (grader.service.rules.counting).",
    "min_seconds_between_submissions": "A per-student rate limit: a submission sooner than this after the "
    "previous one is refused with 429 (grader.service.rules.deadlines).",
    "broker_url": "A broker URL (`redis://HOST:6379/0` or `amqp://USER:PASSWORD@HOST:5672/VHOST`) makes "
    "`grader serve` publish jobs to `grader worker`s instead of grading itself; it needs a PostgreSQL "
    "database. `--broker-url` and `$GRADER_BROKER_URL` come first (grader.service.config).",
    "lti_retry_s": "LTI grade passback (the `lti-ags` hook): seconds before the first retry while the LMS is "
    "down, doubling up to `lti_retry_max_s` (grader.service.lti.outbox).",
    "lti_retry_max_s": "LTI grade passback: the longest wait between two retries, in seconds "
    "(grader.service.lti.outbox).",
}


@dataclasses.dataclass(frozen=True)
class Option:
    name: str
    kind: str
    default: str
    help: str
    course_value: str | None  # what nbgrader_config.py sets, if it sets it
    defined_by: str  # the class that defines it: "grader.plugins.late_policy.PercentPerDay", "nbconvert...Execute"


@dataclasses.dataclass(frozen=True)
class Section:
    name: str  # the c.<name> section: "GraderService", "PercentPerDay"
    dotted: str  # where the class lives
    doc: str
    options: tuple[Option, ...]

    @property
    def target(self) -> str:
        return md.label("config", self.name)


def course_config(root: Path) -> dict[str, dict[str, Any]]:
    """The course's ``nbgrader_config.py`` as traitlets loads it, read as if the course were in an empty
    folder (so a run-time ``late_policy.json`` does not change the page)."""
    from traitlets.config.loader import PyFileConfigLoader

    saved = {key: os.environ.pop(key, None) for key in ("GRADER_COURSE_ROOT", "GRADER_DB_URL")}
    try:
        with tempfile.TemporaryDirectory() as empty:
            os.environ["GRADER_COURSE_ROOT"] = empty
            loaded = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    finally:
        os.environ.pop("GRADER_COURSE_ROOT", None)
        os.environ.update({key: value for key, value in saved.items() if value is not None})
    return {str(name): dict(section) for name, section in loaded.items()}


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


# grader's Configurables that no setting names by their dotted path: the configuration sets them as c.<Name>.
BY_SECTION = ("grader.variants.secret.Variants",)


def configurables(loaded: dict[str, dict[str, Any]]) -> list[type[Configurable]]:
    """The ``grader.*`` Configurable classes the course's configuration names, in the order it names them,
    then those of ``BY_SECTION`` it sets."""
    found: dict[str, type[Configurable]] = {}
    for section in loaded.values():
        for value in _strings(section):
            if DOTTED.match(value) and value not in found:
                module, _, name = value.rpartition(".")
                cls = getattr(importlib.import_module(module), name)
                if isinstance(cls, type) and issubclass(cls, Configurable):
                    found[value] = cls
    for dotted in BY_SECTION:
        module, _, name = dotted.rpartition(".")
        if name in loaded and dotted not in found:
            found[dotted] = getattr(importlib.import_module(module), name)
    return list(found.values())


def _public_name(cls: type) -> str:
    module = cls.__module__
    # grader.exchange.base.GraderExchange is configured as grader.exchange.GraderExchange: show where it is named
    package = module.rsplit(".", 1)[0]
    if module.startswith("grader.") and getattr(importlib.import_module(package), cls.__name__, None) is cls:
        module = package
    return f"{module}.{cls.__name__}"


def _definer(cls: type, name: str) -> type:
    for klass in cls.__mro__:
        if isinstance(klass.__dict__.get(name), TraitType):
            return klass
    return cls


def _show(value: Any) -> str:
    return md.code(repr(value))


def trait_section(cls: type[Configurable], loaded: dict[str, dict[str, Any]]) -> Section:
    course = loaded.get(cls.__name__, {})
    options = []
    for name, trait in sorted(cls.class_traits(config=True).items()):
        try:
            default = _show(trait.default_value)
        except Exception:  # a dynamic default: say where it comes from instead
            default = "computed"
        kind = type(trait).__name__
        options.append(
            Option(
                name=name,
                kind=kind,
                default=default,
                help=str(trait.help or ""),
                course_value=_show(course[name]) if name in course else None,
                defined_by=_public_name(_definer(cls, name)),
            )
        )
    doc = (cls.__doc__ or "").strip().split("\n\n")[0]
    return Section(cls.__name__, _public_name(cls), doc, tuple(options))


def field_comments(source: str, class_name: str) -> dict[str, str]:
    """The comment on each field's line of the dataclass ``class_name`` in ``source``."""
    tree = ast.parse(source)
    (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    lines = {
        item.lineno: item.target.id
        for item in node.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    }
    comments = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and token.start[0] in lines:
            comments[lines[token.start[0]]] = token.string.lstrip("#").strip()
    return comments


def service_section(loaded: dict[str, dict[str, Any]]) -> Section:
    from grader.service import config as service_config

    source = Path(service_config.__file__).read_text()
    comments = field_comments(source, "ServiceConfig")
    course = loaded.get("GraderService", {})
    options = []
    for field in dataclasses.fields(service_config.ServiceConfig):
        if field.name in NOT_SETTINGS:
            continue
        if field.default is not dataclasses.MISSING:
            default = _show(field.default)
        elif field.default_factory is not dataclasses.MISSING:
            default = _show(field.default_factory())
        else:
            default = "required"
        options.append(
            Option(
                name=field.name,
                kind=str(field.type),
                default=default,
                help=comments.get(field.name) or SERVICE_HELP.get(field.name, ""),
                course_value=_show(course[field.name]) if field.name in course else None,
                defined_by="grader.service.config.ServiceConfig",
            )
        )
    doc = (
        "The grading service's settings (`grader serve`, `grader worker`, `grader autograde`'s limits), "
        "checked when the service starts: a bad value stops it with the setting's name."
    )
    return Section("GraderService", "grader.service.config.ServiceConfig", doc, tuple(options))


def sections(root: Path) -> list[Section]:
    loaded = course_config(root)
    return [service_section(loaded)] + [trait_section(cls, loaded) for cls in configurables(loaded)]


def _option_line(section: Section, option: Option) -> str:
    facts = [md.text(option.kind), f"default {option.default}"]
    if option.course_value is not None:
        facts.append(f"this course: {option.course_value}")
    help_text = md.text(option.help) if option.help else "(no help text in the code)"
    return f"- {md.code(f'c.{section.name}.{option.name}')} ({'; '.join(facts)}): {help_text}"


def render(root: Path) -> str:
    out: list[str] = []
    for section in sections(root):
        out += [f"({section.target})=", f"## {md.code(section.name)}", ""]
        out += [f"{md.code(section.dotted)}" + (f": {md.text(section.doc)}" if section.doc else ""), ""]
        own = [o for o in section.options if o.defined_by in (section.dotted, "grader.service.config.ServiceConfig")]
        inherited: dict[str, list[Option]] = {}
        for option in section.options:
            if option not in own:
                inherited.setdefault(option.defined_by, []).append(option)
        out += [_option_line(section, option) for option in own]
        if own:
            out.append("")
        for definer, options in inherited.items():
            out += [f"Inherited from {md.code(definer)}:", ""]
            out += [_option_line(section, option) for option in options]
            out.append("")
    return "\n".join(out)
