"""Written answers graded by rubric: the items staff edited, each answer's mark, and the audit of every change.

Additive only: a service of the previous version never reads these tables.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "grader_rubric_items",
        sa.Column("assignment", sa.String(128), primary_key=True),
        sa.Column("cell", sa.String(128), primary_key=True),
        sa.Column("key", sa.String(8), primary_key=True),
        sa.Column("points", sa.Float, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
    )
    op.create_table(
        "grader_marks",
        sa.Column("assignment", sa.String(128), primary_key=True),
        sa.Column("cell", sa.String(128), primary_key=True),
        sa.Column("student", sa.String(128), primary_key=True),
        sa.Column("notebook", sa.String(128), nullable=False),
        sa.Column("items", sa.Text, nullable=False),
        sa.Column("adjustment", sa.Float, nullable=False),
        sa.Column("comment", sa.Text, nullable=False),
        sa.Column("score", sa.Float, nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("marked_by", sa.String(128), nullable=False),
        sa.Column("marked_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "grader_mark_audit",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("assignment", sa.String(128), nullable=False),
        sa.Column("cell", sa.String(128), nullable=False),
        sa.Column("student", sa.String(128), nullable=False),
        sa.Column("added", sa.Text, nullable=False),
        sa.Column("removed", sa.Text, nullable=False),
        sa.Column("old_score", sa.Float, nullable=True),
        sa.Column("new_score", sa.Float, nullable=True),  # None: graded again by a person
        sa.Column("what", sa.Text, nullable=False),
    )
    op.create_index("ix_grader_mark_audit_question", "grader_mark_audit", ["assignment", "cell", "student"])


def downgrade() -> None:
    op.drop_index("ix_grader_mark_audit_question", "grader_mark_audit")
    op.drop_table("grader_mark_audit")
    op.drop_table("grader_marks")
    op.drop_table("grader_rubric_items")
