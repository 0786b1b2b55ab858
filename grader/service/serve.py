"""``grader serve``: the service for this repository's course, on the embedded default."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .. import course
from . import config as service_config

if TYPE_CHECKING:
    from ..engine.kernel import Zygote
    from .records.store import Store


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


def first_tokens(store: Store, url: str) -> str:
    """What ``grader serve`` says about tokens: on the first start (no admin token in force) it issues an admin
    and a demo-student token and prints them, once; on later starts, how to get new ones."""
    if store.active_tokens("admin") == 0:
        demo = store.issue_token("demo-student", "student", label="serve")
        admin = store.issue_token("admin", "admin", label="serve")
        return f"""Tokens (issued on this first start and shown only now; stored hashed; new ones with
`grader tokens issue STUDENT [--role ta|admin]`, all of them with `grader tokens list`):
  demo-student: {demo}
  admin:        {admin}

Try it:
  GRADER_URL={url} GRADER_TOKEN={demo} grader submit release/ps1_tensors/ps1_tensors.ipynb"""
    return f"""Tokens: issued on the first start ({store.active_tokens()} active; `grader tokens list` shows them).
  A new admin token: grader tokens issue admin --role admin"""


def run(db_url: str | None = None, broker_url: str | None = None, **overrides: Any) -> int:
    cfg = service_config.load(db_url=db_url, broker_url=broker_url, **overrides)
    # the local queue's zygote starts first (seconds: it imports torch), while this process imports the
    # web app and readies the database; a broker's workers grade elsewhere and need none here
    zygote = None if cfg.broker_url else cfg.launch_zygote()
    try:
        return _serve(cfg, zygote)
    finally:
        if zygote is not None:  # the engine closed it already, unless start-up failed before it took it
            zygote.close()


def _serve(cfg: service_config.ServiceConfig, zygote: Zygote | None) -> int:
    import uvicorn

    from ..variants import marked
    from .queue import broker
    from .records.store import Store
    from .web.app import create_app

    store = Store(cfg.db_url, create=True)  # an empty database gets the tables; an old one is refused, not upgraded
    if store.created:
        print("Created the grading service's tables in the database (first run).", flush=True)
    made = marked.ensure_secret(cfg.course_root, first_run=store.created)
    if made:
        print(f"Created the course secret that draws each student's variant values: {made} (back it up).", flush=True)
    prepare(cfg)
    url = f"http://{cfg.host}:{cfg.port}"
    tokens = first_tokens(store, url)
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
    uvicorn.run(create_app(cfg, zygote=zygote), host=cfg.host, port=cfg.port, log_level="info")
    return 0
