"""type labels: a name on one version of a type (production, staging), and profiles bound by label; snapshots
indexed by type version (metrics per version)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 06:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "context_window_type_labels",
        sa.Column("type_id", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("actor", sa.String(length=100), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("type_id", "label"),
    )
    op.add_column("profiles", sa.Column("context_window_type_label", sa.String(length=64), nullable=True))
    op.create_index("ix_snapshots_type_version", "snapshots", ["type_id", "type_version"])


def downgrade() -> None:
    op.drop_index("ix_snapshots_type_version", table_name="snapshots")
    with op.batch_alter_table("profiles") as batch:
        batch.drop_column("context_window_type_label")
    op.drop_table("context_window_type_labels")
