"""The service's tables as the embedded service first created them: users, tokens, submissions, jobs.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "grader_users",
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("role", sa.String(16), nullable=False),
    )
    op.create_table(
        "grader_tokens",
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(128), sa.ForeignKey("grader_users.id"), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("revoked_at", sa.DateTime, nullable=True),
    )
    op.create_index("ix_grader_tokens_user_id", "grader_tokens", ["user_id"])
    op.create_table(
        "grader_submissions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("student", sa.String(128), nullable=False),
        sa.Column("assignment", sa.String(128), nullable=False),
        sa.Column("received_at", sa.DateTime, nullable=False),
        sa.Column("path", sa.String(1024), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("score", sa.Float, nullable=True),
        sa.Column("max_score", sa.Float, nullable=True),
        sa.Column("late_penalty", sa.Float, nullable=True),
        sa.Column("results", sa.Text, nullable=True),
        sa.Column("graded_at", sa.DateTime, nullable=True),
    )
    op.create_index("ix_grader_submissions_student", "grader_submissions", ["student"])
    op.create_index("ix_grader_submissions_assignment", "grader_submissions", ["assignment"])
    op.create_table(
        "grader_jobs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("submission_id", sa.Integer, sa.ForeignKey("grader_submissions.id"), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("enqueued_at", sa.DateTime, nullable=False),
        sa.Column("started_at", sa.DateTime, nullable=True),
        sa.Column("finished_at", sa.DateTime, nullable=True),
        sa.Column("error", sa.Text, nullable=False),
    )
    op.create_index("ix_grader_jobs_submission_id", "grader_jobs", ["submission_id"])
    op.create_index("ix_grader_jobs_status", "grader_jobs", ["status"])


def downgrade() -> None:
    for table in ("grader_jobs", "grader_submissions", "grader_tokens", "grader_users"):
        op.drop_table(table)
