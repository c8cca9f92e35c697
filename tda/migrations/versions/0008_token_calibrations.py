"""token calibrations: per model, the largest provider/cl100k prompt-count ratio seen, shared by replicas

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 22:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "token_calibrations",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("ratio", sa.Float(), nullable=False),
        sa.Column("samples", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("model"),
    )


def downgrade() -> None:
    op.drop_table("token_calibrations")
