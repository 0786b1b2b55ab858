"""LTI Assignment and Grade Services: the line item of each assignment in an LMS course, and the score outbox.

Additive only: a service of the previous version never reads these tables.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "grader_lti_line_items",
        sa.Column("issuer", sa.String(255), primary_key=True),
        sa.Column("context_id", sa.String(255), primary_key=True),
        sa.Column("assignment", sa.String(128), primary_key=True),
        sa.Column("url", sa.String(1024), nullable=False),
        sa.Column("score_maximum", sa.Float, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "grader_lti_scores",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("student", sa.String(128), nullable=False),
        sa.Column("assignment", sa.String(128), nullable=False),
        sa.Column("score_given", sa.Float, nullable=False),
        sa.Column("score_maximum", sa.Float, nullable=False),
        sa.Column("activity_progress", sa.String(32), nullable=False),
        sa.Column("grading_progress", sa.String(32), nullable=False),
        sa.Column("recorded_at", sa.DateTime, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("next_try_at", sa.DateTime, nullable=False),
        sa.Column("error", sa.Text, nullable=False, server_default=""),
        sa.Column("sent_at", sa.DateTime, nullable=True),
    )
    op.create_index("ix_grader_lti_scores_status_next", "grader_lti_scores", ["status", "next_try_at"])
    op.create_index("ix_grader_lti_scores_student_assignment", "grader_lti_scores", ["student", "assignment"])


def downgrade() -> None:
    op.drop_index("ix_grader_lti_scores_student_assignment", "grader_lti_scores")
    op.drop_index("ix_grader_lti_scores_status_next", "grader_lti_scores")
    op.drop_table("grader_lti_scores")
    op.drop_table("grader_lti_line_items")
