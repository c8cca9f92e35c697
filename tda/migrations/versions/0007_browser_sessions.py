"""server-side browser sessions: signing out ends a cookie on every replica

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 20:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "browser_sessions",
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        sa.Column("token_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["token_id"], ["api_tokens.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id_hash"),
    )
    op.create_index("ix_browser_sessions_token_id", "browser_sessions", ["token_id"])
    op.create_index("ix_browser_sessions_created_at", "browser_sessions", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_browser_sessions_created_at", table_name="browser_sessions")
    op.drop_index("ix_browser_sessions_token_id", table_name="browser_sessions")
    op.drop_table("browser_sessions")
