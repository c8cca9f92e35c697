"""the gateway: profile options (client system prompt, case sharing, query rewriting, upstream), image parts of
messages, and the keys that make a retried chat the same turn and an edited one a fork

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 19:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMNs (SQLite's batch mode would copy the tables that sessions and turns refer to).
    op.add_column("profiles", sa.Column("system_prompt_mode", sa.String(16), nullable=False, server_default="client"))
    op.add_column("profiles", sa.Column("case_sharing", sa.String(16), nullable=False, server_default="user"))
    op.add_column("profiles", sa.Column("query_rewrite", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.add_column("profiles", sa.Column("upstream", sa.JSON(), nullable=False, server_default="{}"))
    op.add_column("messages", sa.Column("parts", sa.JSON(), nullable=True))
    op.add_column("turns", sa.Column("request_key", sa.String(64), nullable=True))
    op.add_column("turns", sa.Column("conversation_key", sa.String(64), nullable=True))
    op.create_index("ix_turns_conversation", "turns", ["session_id", "conversation_key"])


def downgrade() -> None:
    op.drop_index("ix_turns_conversation", table_name="turns")
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("conversation_key")
        batch.drop_column("request_key")
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("parts")
    with op.batch_alter_table("profiles") as batch:
        for column in ("upstream", "query_rewrite", "case_sharing", "system_prompt_mode"):
            batch.drop_column(column)
