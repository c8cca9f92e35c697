"""component instructions: texts per component id, sent to the model for the profile's components

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 14:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "component_instructions",
        sa.Column("component_id", sa.String(length=64), nullable=False),
        sa.Column("full", sa.Text(), nullable=False, server_default=""),
        sa.Column("medium", sa.Text(), nullable=False, server_default=""),
        sa.Column("light", sa.Text(), nullable=False, server_default=""),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("component_id"),
    )


def downgrade() -> None:
    op.drop_table("component_instructions")
