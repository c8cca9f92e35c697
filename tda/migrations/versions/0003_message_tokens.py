"""message token counts per encoding; a session's message count and history version; newest-first index

Revision ID: 0003
Revises: 0001
Create Date: 2026-11-23 14:30:00

A turn reads only the newest messages its window can use: it pages ``messages`` by (turn, id) descending
on one index, takes each message's token count from ``token_counts`` instead of re-tokenising it, and
reads how many messages there are from the session's own row; ``history_version`` says when what a replica
kept of a history is stale. Messages written before this revision have
no stored counts; they are counted when read, as before.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("token_counts", sa.JSON(), nullable=True))
    op.add_column("sessions", sa.Column("message_count", sa.Integer(), server_default="0", nullable=False))
    op.add_column("sessions", sa.Column("history_version", sa.Integer(), server_default="0", nullable=False))
    op.execute(
        "UPDATE sessions SET message_count = (SELECT count(*) FROM messages WHERE messages.session_id = sessions.id)"
    )
    op.create_index("ix_messages_session_order", "messages", ["session_id", "turn", "id"], unique=False)
    op.drop_index("ix_messages_session_turn", table_name="messages")


def downgrade() -> None:
    op.create_index("ix_messages_session_turn", "messages", ["session_id", "turn"], unique=False)
    op.drop_index("ix_messages_session_order", table_name="messages")
    with op.batch_alter_table("sessions") as batch_op:
        batch_op.drop_column("history_version")
        batch_op.drop_column("message_count")
    with op.batch_alter_table("messages") as batch_op:
        batch_op.drop_column("token_counts")
