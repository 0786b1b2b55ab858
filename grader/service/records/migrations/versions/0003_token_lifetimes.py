"""Token lifetimes: a label saying what a token is for, and an expiry.

Additive only: a service or worker of the previous version keeps working on
the upgraded database (it never reads the new columns).

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("grader_tokens", sa.Column("label", sa.String(128), nullable=False, server_default=""))
    op.add_column("grader_tokens", sa.Column("expires_at", sa.DateTime, nullable=True))


def downgrade() -> None:
    op.drop_column("grader_tokens", "expires_at")
    op.drop_column("grader_tokens", "label")
