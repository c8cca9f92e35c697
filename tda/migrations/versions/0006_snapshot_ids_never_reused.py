"""snapshot ids are never reused on SQLite (AUTOINCREMENT): they are the SSE event ids, and a reused id after a
session was deleted made connected and resuming clients skip new events

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 20:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

COLUMNS = "id, session_id, turn, type_id, type_version, model, data, inputs, created_at"


def upgrade() -> None:
    # PostgreSQL's serial sequences never hand out an id twice; SQLite without AUTOINCREMENT takes max(id) + 1.
    if op.get_bind().dialect.name != "sqlite":
        return
    # SQLite adds AUTOINCREMENT only by rebuilding the table. The migration runs in a transaction, where
    # PRAGMA foreign_keys cannot be switched off; with it on, dropping the old table would set every
    # turns.snapshot_id to NULL. So the links are kept aside, cleared, and put back once the new table is in place.
    op.create_table(
        "_snapshots_new",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("type_id", sa.String(length=64), nullable=False),
        sa.Column("type_version", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("inputs", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sqlite_autoincrement=True,
    )
    op.execute(f"INSERT INTO _snapshots_new ({COLUMNS}) SELECT {COLUMNS} FROM snapshots")
    op.execute("CREATE TABLE _turn_snapshot_links AS SELECT id, snapshot_id FROM turns WHERE snapshot_id IS NOT NULL")
    op.execute("UPDATE turns SET snapshot_id = NULL WHERE snapshot_id IS NOT NULL")
    # The drop checks each old row for turns that refer to it: an index keeps that from scanning turns per row.
    op.execute("CREATE INDEX _ix_turns_snapshot ON turns (snapshot_id)")
    op.execute("DROP INDEX ix_snapshots_session")
    op.execute("DROP TABLE snapshots")
    op.execute("ALTER TABLE _snapshots_new RENAME TO snapshots")
    op.execute("CREATE INDEX ix_snapshots_session ON snapshots (session_id, id)")
    op.execute(
        "UPDATE turns SET snapshot_id = (SELECT l.snapshot_id FROM _turn_snapshot_links l WHERE l.id = turns.id) "
        "WHERE id IN (SELECT id FROM _turn_snapshot_links)"
    )
    op.execute("DROP INDEX _ix_turns_snapshot")
    op.execute("DROP TABLE _turn_snapshot_links")


def downgrade() -> None:
    pass  # AUTOINCREMENT is compatible with the older code: the rebuilt table stays
