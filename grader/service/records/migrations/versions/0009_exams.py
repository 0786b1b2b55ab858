"""Timed exams: accommodations, each student's start and end, and every start, extension and refusal.

Additive only: a service of the previous version never reads these tables.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "grader_accommodations",
        sa.Column("student", sa.String(128), primary_key=True),
        sa.Column("assignment", sa.String(128), primary_key=True),
        sa.Column("multiplier", sa.Float, nullable=False),
        sa.Column("extra_minutes", sa.Float, nullable=False),
        sa.Column("opens", sa.DateTime, nullable=True),
        sa.Column("closes", sa.DateTime, nullable=True),
        sa.Column("note", sa.Text, nullable=False),
    )
    op.create_table(
        "grader_exam_starts",
        sa.Column("assignment", sa.String(128), primary_key=True),
        sa.Column("student", sa.String(128), primary_key=True),
        sa.Column("started_at", sa.DateTime, nullable=False),
        sa.Column("ends_at", sa.DateTime, nullable=False),
        sa.Column("honour_at", sa.DateTime, nullable=True),
        sa.Column("address", sa.String(64), nullable=False),
        sa.Column("agent", sa.String(256), nullable=False),
    )
    op.create_table(
        "grader_exam_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("assignment", sa.String(128), nullable=False),
        sa.Column("student", sa.String(128), nullable=False),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
    )
    op.create_index("ix_grader_exam_events_student", "grader_exam_events", ["assignment", "student"])


def downgrade() -> None:
    op.drop_index("ix_grader_exam_events_student", "grader_exam_events")
    op.drop_table("grader_exam_events")
    op.drop_table("grader_exam_starts")
    op.drop_table("grader_accommodations")
