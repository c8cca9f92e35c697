"""history_vectors: recall's part vectors in the database (they were kept in Chroma's history collections, which are
no longer read: a replica embeds what it does not find here)

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03 08:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "history_vectors",
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("embedder", sa.String(length=200), nullable=False),
        sa.Column("part_key", sa.String(length=64), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("session_id", "embedder", "part_key"),
    )


def downgrade() -> None:
    op.drop_table("history_vectors")
