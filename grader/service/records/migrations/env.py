"""Alembic's environment for the service's tables: run on the connection ``schema.upgrade`` passes in.

The version is kept in ``grader_alembic_version``, apart from nbgrader's own
``alembic_version`` in the same database (``nbgrader db upgrade`` migrates that one).
"""

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, version_table="grader_alembic_version")
with context.begin_transaction():
    context.run_migrations()
