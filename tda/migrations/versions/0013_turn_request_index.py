"""turn_request_index: a chat client's call finds the turn its conversation opened (``turn_asking``) by an index,
not by reading every turn of its session (the newest-first index on turns was chosen, and each row's request_key
sits past its answer and results: ~16 ms a call at 1,000 turns)

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04 21:30:00
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_turns_request", "turns", ["session_id", "request_key", "turn"])


def downgrade() -> None:
    op.drop_index("ix_turns_request", table_name="turns")
