"""Scale-out: job leases (holder, heartbeat, last publish), submission files in the database, a worker
registry, and the settings every worker applies.

Additive only: a service or worker of the previous version keeps working on
the upgraded database, so the schema can be upgraded before the code.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("grader_jobs", sa.Column("worker", sa.String(255), nullable=True))
    op.add_column("grader_jobs", sa.Column("heartbeat_at", sa.DateTime, nullable=True))
    op.add_column("grader_jobs", sa.Column("published_at", sa.DateTime, nullable=True))
    op.create_table(
        "grader_files",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("content", sa.LargeBinary, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "grader_workers",
        sa.Column("name", sa.String(255), primary_key=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("concurrency", sa.Integer, nullable=False),
        sa.Column("started_at", sa.DateTime, nullable=False),
        sa.Column("heartbeat_at", sa.DateTime, nullable=False),
        sa.Column("stopped_at", sa.DateTime, nullable=True),
    )
    op.create_table(
        "grader_settings",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("grader_settings")
    op.drop_table("grader_workers")
    op.drop_table("grader_files")
    with op.batch_alter_table("grader_jobs") as batch:
        batch.drop_column("published_at")
        batch.drop_column("heartbeat_at")
        batch.drop_column("worker")
