"""Written answers released to students, their regrade requests, answers graded apart from their group, and the
text of each marked answer (so a TA sees what a changed answer said before), and which TA grades which question.

Additive only: a service of the previous version never reads these tables.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "grader_question_shares",
        sa.Column("assignment", sa.String(128), primary_key=True),
        sa.Column("cell", sa.String(128), primary_key=True),
        sa.Column("ta", sa.String(128), primary_key=True),
        sa.Column("first_student", sa.String(128), nullable=True),
        sa.Column("last_student", sa.String(128), nullable=True),
    )
    op.add_column("grader_marks", sa.Column("answer", sa.Text, nullable=True))
    op.add_column("grader_mark_audit", sa.Column("previous_answer", sa.Text, nullable=True))
    op.create_table(
        "grader_answer_splits",
        sa.Column("assignment", sa.String(128), primary_key=True),
        sa.Column("cell", sa.String(128), primary_key=True),
        sa.Column("student", sa.String(128), primary_key=True),
        sa.Column("split_by", sa.String(128), nullable=False),
        sa.Column("split_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "grader_mark_releases",
        sa.Column("assignment", sa.String(128), primary_key=True),
        sa.Column("cell", sa.String(128), primary_key=True),
        sa.Column("released_by", sa.String(128), nullable=False),
        sa.Column("released_at", sa.DateTime, nullable=False),
        sa.Column("regrades_until", sa.DateTime, nullable=True),
    )
    op.create_table(
        "grader_regrade_requests",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("assignment", sa.String(128), nullable=False),
        sa.Column("cell", sa.String(128), nullable=False),
        sa.Column("student", sa.String(128), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("asked_at", sa.DateTime, nullable=False),
        sa.Column("score_asked", sa.Float, nullable=True),
        sa.Column("reply", sa.Text, nullable=True),
        sa.Column("replied_by", sa.String(128), nullable=True),
        sa.Column("replied_at", sa.DateTime, nullable=True),
        sa.Column("score_replied", sa.Float, nullable=True),
        sa.UniqueConstraint("assignment", "cell", "student", name="uq_grader_regrade_requests_once"),
    )


def downgrade() -> None:
    op.drop_table("grader_question_shares")
    op.drop_table("grader_answer_splits")
    op.drop_column("grader_mark_audit", "previous_answer")
    op.drop_column("grader_marks", "answer")
    op.drop_table("grader_regrade_requests")
    op.drop_table("grader_mark_releases")
