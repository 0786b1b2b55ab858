"""nbgrader's own tables, read directly by the service, through one pooled engine per gradebook.

An nbgrader ``Gradebook`` opens a new database connection and checks every table (``create_all``,
a dozen schema queries on PostgreSQL) each time it is made. Made for every upload and every job only
to read a column or two, it cost ``grader serve`` two thirds of its time accepting an upload (a
py-spy profile of ``benchmarks/scale.py``). ``engine(db_url)`` makes nbgrader's tables once per process,
as nbgrader itself does, and then pools its connections. Writes stay nbgrader's, or ``students``'.
"""

from __future__ import annotations

import functools

import sqlalchemy as sa

from . import pooling

assignment = sa.table(
    "assignment", sa.column("id", sa.String), sa.column("name", sa.String), sa.column("duedate", sa.DateTime)
)
notebook = sa.table(
    "notebook", sa.column("id", sa.String), sa.column("name", sa.String), sa.column("assignment_id", sa.String)
)
submitted_assignment = sa.table(
    "submitted_assignment",
    sa.column("id", sa.String),
    sa.column("assignment_id", sa.String),
    sa.column("student_id", sa.String),
    sa.column("extension", sa.Interval),
)


@functools.lru_cache(maxsize=16)
def engine(db_url: str) -> sa.Engine:
    """A pooled engine on the gradebook at ``db_url``, whose nbgrader tables exist (made here if not)."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url):  # nbgrader's tables and its alembic version, as the stock commands make them
        pass
    return pooling.create_engine(db_url)


@functools.lru_cache(maxsize=16)
def reader(db_url: str) -> sa.Engine:
    """``engine(db_url)`` for one-statement reads: no BEGIN, no ROLLBACK on a database server (``pooling.reader``)."""
    return pooling.reader(engine(db_url))


# the cells and grades behind written answers (``rules.written``): a manually graded answer is a grade cell with
# a solution cell of the same name in the same notebook (nbgrader's cells share ``base_cell``, by ``type``)
base_cell = sa.table(
    "base_cell",
    sa.column("id", sa.String),
    sa.column("name", sa.String),
    sa.column("notebook_id", sa.String),
    sa.column("type", sa.String),
)
grade_cells = sa.table("grade_cells", sa.column("id", sa.String), sa.column("max_score", sa.Float))
grade = sa.table(
    "grade",
    sa.column("cell_id", sa.String),
    sa.column("notebook_id", sa.String),
    sa.column("auto_score", sa.Float),
    sa.column("manual_score", sa.Float),
    sa.column("needs_manual_grade", sa.Boolean),
)
submitted_notebook = sa.table("submitted_notebook", sa.column("id", sa.String), sa.column("assignment_id", sa.String))
