"""``grader serve``: the service for this repository's course, on the embedded default."""

from __future__ import annotations

import errno
import logging
import os
import shlex
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import course
from ..errors import ConfigurationError
from . import config as service_config

if TYPE_CHECKING:
    from ..engine.kernels.kernel import Zygote
    from .records.store import Store

# What the banner's "Try it" line submits, as the README's tour does: a bundled notebook whose grade is
# neither 0 nor full and whose feedback names a misconception (``Likely cause [grad-not-zeroed]: ...``).
EXAMPLE_ASSIGNMENT = "ps2_autograd"
EXAMPLE = course.REPO_ROOT / "tests" / "fixtures" / "submissions" / EXAMPLE_ASSIGNMENT / "grad-not-zeroed.ipynb"
STARTUP_FAILURE = 3  # uvicorn's exit status when the application does not start


def listen(host: str, port: int) -> list[socket.socket]:
    """Sockets listening on ``host:port`` (one per address the host resolves to), taken before anything is
    announced and handed to the server, so a port in use stops ``grader serve`` with one sentence."""
    try:
        return _bind(host, port)
    except OSError as error:
        raise ConfigurationError(cannot_listen(host, port, error)) from None


def _bind(host: str, port: int) -> list[socket.socket]:
    sockets: list[socket.socket] = []
    try:
        addresses = {
            (family, kind, address)
            for family, kind, _, _, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        }
        for family, kind, address in sorted(addresses, key=str):
            sock = socket.socket(family, kind)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(2048)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def cannot_listen(host: str, port: int, error: OSError) -> str:
    """Why ``grader serve`` cannot listen on ``host:port``, and what to do instead: one sentence."""
    if error.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is in use (another `grader serve`?): stop what holds it, or pick another "
            f"port with `--port {free_port(host, port)}`"
        )
    if isinstance(error, socket.gaierror):
        return f"cannot listen on {host!r} ({error.strerror}): give an address of this machine with `--host`"
    return (
        f"cannot listen on {host}:{port} ({error.strerror}): pick another port with `--port` or address with `--host`"
    )


def free_port(host: str, port: int) -> int:
    """The first port after ``port`` that ``host`` can listen on now (else the next one), to suggest."""
    for candidate in range(port + 1, min(port + 100, 65536)):
        try:
            for sock in _bind(host, candidate):
                sock.close()
        except OSError:
            continue
        return candidate
    return port + 1


def shown_path(path: Path, cwd: Path) -> str:
    """``path`` as a shell argument that names it from ``cwd``: relative when inside it (``./grader``, not a
    bare name the shell would look up on PATH), else absolute."""
    path = Path(os.path.abspath(path))
    shown = str(path.relative_to(cwd)) if path.is_relative_to(cwd) else str(path)
    return shlex.quote(shown if os.sep in shown else f".{os.sep}{shown}")


def grader_executable() -> Path:
    """The ``grader`` now running: the script this process was started as, else the one beside Python."""
    script = Path(sys.argv[0])
    return script if script.name == "grader" and script.is_file() else Path(sys.executable).parent / "grader"


def try_submit(cfg: service_config.ServiceConfig, cwd: Path | None = None) -> str:
    """The ``grader submit ...`` command the banner prints, to run as is from ``cwd`` (the current
    directory): this grader's own executable and the bundled example, else the first release notebook."""
    cwd = Path(os.path.abspath(cwd or Path.cwd()))
    assignments = course.assignments(cfg.course_root)
    assignment, notebook = EXAMPLE_ASSIGNMENT, EXAMPLE
    if assignment not in assignments or not notebook.is_file():  # another course, or an install without tests/
        assignment = assignments[0]
        notebook = cfg.course_root / cfg.release_directory / assignment / f"{assignment}.ipynb"
    return (
        f"{shown_path(grader_executable(), cwd)} submit {shown_path(notebook, cwd)} "
        f"--assignment {shlex.quote(assignment)}"
    )


def prepare(cfg: service_config.ServiceConfig) -> None:
    """Releases in the gradebook: the service grades only assignments nbgrader knows."""
    from nbgrader.api import Gradebook

    root = cfg.course_root
    with Gradebook(cfg.db_url) as gradebook:
        known = {a.name for a in gradebook.assignments}
    missing = [a for a in course.assignments(root) if a not in known]
    if missing:
        print(f"Registering assignments with nbgrader: {', '.join(missing)} ...", flush=True)
        course.generate_releases(root, missing, db_url=cfg.db_url)


def first_tokens(store: Store, url: str, submit: str) -> str:
    """What ``grader serve`` says about tokens: on the first start (no admin token in force) it issues an admin
    and a demo-student token and prints them, once, with ``submit`` (``try_submit``) to try them; on later
    starts, how to get new ones."""
    if store.active_tokens("admin") == 0:
        demo = store.issue_token("demo-student", "student", label="serve")
        admin = store.issue_token("admin", "admin", label="serve")
        return f"""Tokens (issued on this first start and shown only now; stored hashed; new ones with
`grader tokens issue STUDENT [--role ta|admin]`, all of them with `grader tokens list`):
  demo-student: {demo}
  admin:        {admin}

Try it (from a second terminal in this directory: a bundled example, graded with feedback):
  GRADER_URL={url} GRADER_TOKEN={demo} {submit}"""
    return f"""Tokens: issued on the first start ({store.active_tokens()} active; `grader tokens list` shows them).
  A new admin token: grader tokens issue admin --role admin"""


def run(db_url: str | None = None, broker_url: str | None = None, **overrides: Any) -> int:
    cfg = service_config.load(db_url=db_url, broker_url=broker_url, **overrides)
    sockets = listen(cfg.host, cfg.port)  # first: a port in use stops it before it announces anything
    try:
        # the local queue's zygote starts first (seconds: it imports torch), while this process imports the
        # web app and readies the database; a broker's workers grade elsewhere and need none here
        zygote = None if cfg.broker_url else cfg.launch_zygote()
        try:
            return _serve(cfg, zygote, sockets)
        finally:
            if zygote is not None:  # the engine closed it already, unless start-up failed before it took it
                zygote.close()
    finally:
        for sock in sockets:
            sock.close()


def _serve(cfg: service_config.ServiceConfig, zygote: Zygote | None, sockets: list[socket.socket]) -> int:
    import uvicorn

    from ..variants import marked
    from .queue import broker
    from .records.store import Store
    from .web.app import create_app

    store = Store(cfg.db_url, create=True)  # an empty database gets the tables; an old one is refused, not upgraded
    if store.created:
        print("Created the grading service's tables in the database (first run).", flush=True)
    # A first run may make the course secret. Afterwards the local engine requires it (the one read of it per
    # start-up); a serve whose workers grade elsewhere still needs it to draw values at fetch.
    first = store.created
    made = marked.ensure_secret(cfg.course_root, first_run=first) if first or cfg.broker_url else None
    if made:
        print(f"Created the course secret that draws each student's variant values: {made} (back it up).", flush=True)
    prepare(cfg)
    port = sockets[0].getsockname()[1]  # the one asked for, or the one the system chose for port 0
    url = f"http://{cfg.host}:{port}"
    tokens = first_tokens(store, url, try_submit(cfg))
    grading = (
        f"jobs published to {broker.redact(cfg.broker_url)} for `grader worker`s"
        if cfg.broker_url
        else f"workers: {cfg.workers}"
    )
    print(
        f"""
Grading service for {", ".join(course.assignments(cfg.course_root))}: {url}
  gradebook: {store.engine.url.render_as_string(hide_password=True)}    {grading}    API schema: {url}/openapi.json

{tokens}
""",
        flush=True,
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    server = uvicorn.Server(uvicorn.Config(create_app(cfg, zygote=zygote), host=cfg.host, port=port, log_level="info"))
    try:
        server.run(sockets=sockets)
    except KeyboardInterrupt:  # as uvicorn.run: a second Ctrl+C while shutting down
        pass
    return 0 if server.started else STARTUP_FAILURE
