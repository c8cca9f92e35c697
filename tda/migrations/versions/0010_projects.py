"""projects: every token, profile, session, snapshot, project-made window type and audit entry belongs to one;
what existed moves into the project ``default``

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 06:00:00
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

DEFAULT = "default"
OWNED = ("profiles", "sessions", "snapshots")
"""Tables whose every row belongs to a project (moved into ``default``)."""
OPTIONAL = ("api_tokens", "audit_log", "context_window_types")
"""Tables whose rows may belong to none: operator tokens, the operator's audit entries, shipped window types."""


def upgrade() -> None:
    projects = op.create_table(
        "projects",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.bulk_insert(projects, [{"name": DEFAULT, "created_at": datetime.now(UTC)}])
    # Plain ADD COLUMNs (no table rebuilt on SQLite, where a rebuild in a transaction would break the foreign keys
    # onto these tables): the existing rows of the owned tables take the server default, ``default``.
    for table in OWNED:
        op.add_column(table, sa.Column("project_id", sa.String(length=64), nullable=False, server_default=DEFAULT))
    for table in OPTIONAL:
        op.add_column(table, sa.Column("project_id", sa.String(length=64), nullable=True))
    # Tokens move into the default project; the shipped types stay nobody's; audit entries of tokens are the
    # default project's, those of the CLI and the system stay unowned (the operator's).
    op.execute(sa.text("UPDATE api_tokens SET project_id = :p").bindparams(p=DEFAULT))
    op.execute(sa.text("UPDATE audit_log SET project_id = :p WHERE actor LIKE 'token:%'").bindparams(p=DEFAULT))
    for table in (*OWNED, *OPTIONAL):
        op.create_index(f"ix_{table}_project_id", table, ["project_id"])


def downgrade() -> None:
    for table in (*OWNED, *OPTIONAL):
        op.drop_index(f"ix_{table}_project_id", table_name=table)
        with op.batch_alter_table(table) as batch:
            batch.drop_column("project_id")
    op.drop_table("projects")
