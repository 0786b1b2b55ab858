"""LTI 1.3: registered platforms, the tool's signing key, OIDC logins (state + single-use nonce).

Additive only: a service of the previous version never reads these tables.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "grader_lti_platforms",
        sa.Column("issuer", sa.String(255), primary_key=True),
        sa.Column("client_id", sa.String(255), nullable=False),
        sa.Column("auth_url", sa.String(1024), nullable=False),
        sa.Column("token_url", sa.String(1024), nullable=False),
        sa.Column("jwks_url", sa.String(1024), nullable=False),
        sa.Column("deployment_ids", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "grader_lti_keys",
        sa.Column("kid", sa.String(64), primary_key=True),
        sa.Column("private_pem", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "grader_lti_logins",
        sa.Column("state", sa.String(64), primary_key=True),
        sa.Column("nonce", sa.String(64), nullable=False, unique=True),
        sa.Column("issuer", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("used_at", sa.DateTime, nullable=True),
    )


def downgrade() -> None:
    op.drop_table("grader_lti_logins")
    op.drop_table("grader_lti_keys")
    op.drop_table("grader_lti_platforms")
