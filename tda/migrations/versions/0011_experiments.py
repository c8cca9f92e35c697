"""experiments: a candidate type replayed against a baseline over recorded turns; the experiment a label move links;
labels on turns (expected evidence, rating)

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 08:45:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "experiments",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("project_id", sa.String(length=64), nullable=False, server_default="default"),
        sa.Column("actor", sa.String(length=100), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("done", sa.Integer(), nullable=False),
        sa.Column("totals", sa.JSON(), nullable=True),
        sa.Column("turns", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_experiments_project_id", "experiments", ["project_id"])
    op.create_index("ix_experiments_created_at", "experiments", ["created_at"])
    op.add_column("context_window_type_labels", sa.Column("experiment_id", sa.String(length=32), nullable=True))
    op.add_column("turns", sa.Column("labels", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("labels")
    with op.batch_alter_table("context_window_type_labels") as batch:
        batch.drop_column("experiment_id")
    op.drop_index("ix_experiments_created_at", table_name="experiments")
    op.drop_index("ix_experiments_project_id", table_name="experiments")
    op.drop_table("experiments")
