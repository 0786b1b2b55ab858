"""LTI Advantage: the LMS courses (contexts) the tool was launched from, and LMS users mapped to course ids.

Additive only: a service of the previous version never reads these tables.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "grader_lti_contexts",
        sa.Column("issuer", sa.String(255), primary_key=True),
        sa.Column("context_id", sa.String(255), primary_key=True),
        sa.Column("deployment_id", sa.String(255), nullable=False),
        sa.Column("title", sa.String(255), nullable=False, server_default=""),
        sa.Column("memberships_url", sa.String(1024), nullable=True),
        sa.Column("lineitems_url", sa.String(1024), nullable=True),
        sa.Column("lineitem_scopes", sa.Text, nullable=False, server_default="[]"),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "grader_lti_members",
        sa.Column("issuer", sa.String(255), primary_key=True),
        sa.Column("lms_user_id", sa.String(255), primary_key=True),
        sa.Column("user_id", sa.String(128), nullable=False, unique=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("name", sa.String(255), nullable=False, server_default=""),
        sa.Column("email", sa.String(255), nullable=False, server_default=""),
        sa.Column("status", sa.String(16), nullable=False, server_default="active"),
        sa.Column("synced_at", sa.DateTime, nullable=False),
        sa.Column("dropped_at", sa.DateTime, nullable=True),
    )


def downgrade() -> None:
    op.drop_table("grader_lti_members")
    op.drop_table("grader_lti_contexts")
