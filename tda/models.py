"""ORM rows (SQLAlchemy 2, typed). Plain storage shapes: validation lives at the API edge, logic in the store."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from . import scope


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        dict[str, Any]: JSON,
        list[Any]: JSON,
        datetime: DateTime(timezone=True),
    }


class ProjectRow(Base):
    """A team's space: every token, profile, session (and what happens in it), knowledge collection and audit entry
    belongs to one (``project_id``), and a project's tokens see only its rows (``tda/store/projects.py``)."""

    __tablename__ = "projects"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


def _project_column(*, shared: bool = False) -> Mapped[Any]:
    """The owning project (a ``projects.name``; projects are never deleted), indexed: every read is filtered by it.
    Set from the request's project (``tda/scope.py``). ``shared``: None for rows that are nobody's (the shipped
    window types; the operator's audit entries)."""
    if shared:
        return mapped_column(String(64), index=True, default=scope.current)
    return mapped_column(String(64), index=True, default=scope.owner, server_default=scope.DEFAULT_PROJECT)


class WindowTypeRow(Base):
    """The current version of a context window type; ``data`` is the validated ContextWindowType JSON."""

    __tablename__ = "context_window_types"
    __table_args__ = (
        # At most one default, enforced by the database too (two writers on PostgreSQL cannot both promote).
        Index(
            "uq_context_window_types_one_default",
            "is_default",
            unique=True,
            sqlite_where=text("is_default"),
            postgresql_where=text("is_default"),
        ),
    )
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    project_id: Mapped[str | None] = _project_column(shared=True)
    """None: a shipped (or operator-made) type every project reads and none owns."""
    name: Mapped[str] = mapped_column(String(100))
    is_default: Mapped[bool] = mapped_column(default=False)
    version: Mapped[int] = mapped_column(default=1)
    data: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class WindowTypeVersionRow(Base):
    """Every version a type ever had (the current one included): history and rollback read these."""

    __tablename__ = "context_window_type_versions"
    type_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int] = mapped_column(primary_key=True)
    data: Mapped[dict[str, Any]]
    actor: Mapped[str] = mapped_column(String(100), default="system")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class WindowTypeLabelRow(Base):
    """A name on one version of a type (``production``, ``staging``, any): a profile bound by label runs that
    version, so moving the label is the rollout, and moving it back the rollback (both audited)."""

    __tablename__ = "context_window_type_labels"
    type_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    label: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int]
    actor: Mapped[str] = mapped_column(String(100), default="system")
    reason: Mapped[str] = mapped_column(Text, default="")
    """Why it was put there (what justified the rollout); shown with the label and in the audit log."""
    experiment_id: Mapped[str | None] = mapped_column(String(32), default=None)
    """The experiment that justified the move (tda/experiments.py), linked from the label and the audit entry."""
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class ProfileRow(Base):
    __tablename__ = "profiles"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    project_id: Mapped[str] = _project_column()
    name: Mapped[str] = mapped_column(String(100), default="")
    type: Mapped[str] = mapped_column(String(32))
    system_prompt: Mapped[str] = mapped_column(Text, default="")
    context_window_type_id: Mapped[str | None] = mapped_column(
        ForeignKey("context_window_types.id", ondelete="RESTRICT"), default=None
    )
    context_window_type_label: Mapped[str | None] = mapped_column(String(64), default=None)
    """Run the version of the bound type that carries this label (None: its current version)."""
    context_limit: Mapped[int | None] = mapped_column(default=None)
    model: Mapped[str | None] = mapped_column(String(200), default=None)
    tools: Mapped[list[Any]] = mapped_column(default=list)
    components: Mapped[list[Any]] = mapped_column(default=list)
    knowledge_collections: Mapped[list[Any]] = mapped_column(default=list)
    system_prompt_mode: Mapped[str] = mapped_column(String(16), default="client", server_default="client")
    """How the profile's prompt combines with a chat client's own system messages (see ``SYSTEM_PROMPT_MODES``)."""
    case_sharing: Mapped[str] = mapped_column(String(16), default="user", server_default="user")
    """Whose champion cases this profile's windows may show (see ``CASE_SHARING``)."""
    query_rewrite: Mapped[bool] = mapped_column(default=False, server_default=text("false"))
    """Rewrite follow-ups into standalone retrieval queries with an extra, bounded model call."""
    upstream: Mapped[dict[str, Any]] = mapped_column(default=dict)
    """Where the model is called: ``base_url``, ``api_key_env``, ``fallbacks``, ``num_retries`` ({}: the default)."""
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class SessionRow(Base):
    __tablename__ = "sessions"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    project_id: Mapped[str] = _project_column()
    profile_id: Mapped[str] = mapped_column(ForeignKey("profiles.id", ondelete="RESTRICT"))
    user_id: Mapped[str] = mapped_column(String(100), default="anonymous")
    title: Mapped[str] = mapped_column(String(200), default="")
    context_limit: Mapped[int | None] = mapped_column(default=None)
    phase: Mapped[str | None] = mapped_column(String(32), default=None)
    message_count: Mapped[int] = mapped_column(default=0, server_default="0")
    """Kept with every write of messages: a turn knows the history's length without counting it."""
    history_version: Mapped[int] = mapped_column(default=0, server_default="0")
    """Bumped by every change to the history other than appending a turn (validity, purge, imports): what a
    replica kept of the history stays right while this is unchanged."""
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class MessageRow(Base):
    __tablename__ = "messages"
    __table_args__ = (Index("ix_messages_session_order", "session_id", "turn", "id"),)  # history, newest first
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    turn: Mapped[int]
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text, default="")
    tool_calls: Mapped[list[Any]] = mapped_column(default=list)
    tool_call_id: Mapped[str | None] = mapped_column(String(100), default=None)
    name: Mapped[str | None] = mapped_column(String(100), default=None)
    valid: Mapped[bool] = mapped_column(default=True)
    phase: Mapped[str | None] = mapped_column(String(32), default=None)
    tokens: Mapped[int] = mapped_column(default=0)
    token_counts: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    """Tokens of the message's own text per encoding, counted when written (None: written before counts were kept)."""
    parts: Mapped[list[Any] | None] = mapped_column(default=None)
    """The content parts as the client sent them (images, files) when not plain text; ``content`` holds their text."""
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class SnapshotRow(Base):
    """What one assembly produced (``data``) and what it read (``inputs``: enough to replay it)."""

    __tablename__ = "snapshots"
    __table_args__ = (
        Index("ix_snapshots_session", "session_id", "id"),
        Index("ix_snapshots_type_version", "type_id", "type_version"),  # metrics per type version
        {"sqlite_autoincrement": True},  # ids are SSE event ids: never reused after a session is deleted
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    project_id: Mapped[str] = mapped_column(String(64), index=True, server_default=scope.DEFAULT_PROJECT)
    """The session's project (copied when stored: by-id reads, the global stream and its replay filter on it)."""
    turn: Mapped[int]
    type_id: Mapped[str] = mapped_column(String(64))
    type_version: Mapped[int]
    model: Mapped[str] = mapped_column(String(200))
    data: Mapped[dict[str, Any]]
    inputs: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class TurnRow(Base):
    __tablename__ = "turns"
    __table_args__ = (
        UniqueConstraint("session_id", "turn", name="uq_turns_session_turn"),
        Index("ix_turns_conversation", "session_id", "conversation_key"),
        # call_state's: with the turn, so that its newest-first order comes from this index, not the unique one's
        Index("ix_turns_request", "session_id", "request_key", "turn"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    turn: Mapped[int]
    query: Mapped[str] = mapped_column(Text)
    plan: Mapped[str] = mapped_column(Text, default="")
    answer: Mapped[str] = mapped_column(Text, default="")
    outcome: Mapped[str] = mapped_column(String(32), default="success")
    results: Mapped[list[Any]] = mapped_column(default=list)
    summary: Mapped[str] = mapped_column(Text, default="")
    tokens_in: Mapped[int] = mapped_column(default=0)
    tokens_out: Mapped[int] = mapped_column(default=0)
    valid: Mapped[bool] = mapped_column(default=True)
    phase: Mapped[str | None] = mapped_column(String(32), default=None)
    model: Mapped[str] = mapped_column(String(200), default="")
    snapshot_id: Mapped[int | None] = mapped_column(ForeignKey("snapshots.id", ondelete="SET NULL"), default=None)
    request_key: Mapped[str | None] = mapped_column(String(64), default=None)
    """A chat client's turn: digest of its conversation through the turn's user message (a retry has the same)."""
    conversation_key: Mapped[str | None] = mapped_column(String(64), default=None)
    """A chat client's turn: digest of its conversation through the turn's last reply (the next turn extends it)."""
    labels: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    """What a person said of the turn: ``expected_evidence`` (texts its window should hold) and ``rating`` (+1, -1);
    experiments count how many labelled turns keep them (tda/experiments.py)."""
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class AttachmentRow(Base):
    __tablename__ = "attachments"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    mime_type: Mapped[str] = mapped_column(String(100), default="text/plain")
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class HistoryVectorRow(Base):
    """The vector of one part of a session's history, as recall embedded it (``tda/recall/vectors.py``): another
    replica, or this one after a restart, reads it instead of embedding the part again. Keyed by the part's
    ``part_key`` (a hash of its text) per embedder; the primary key is the index of a session's reads."""

    __tablename__ = "history_vectors"
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True)
    embedder: Mapped[str] = mapped_column(String(200), primary_key=True)
    part_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    """float32, little-endian (``numpy`` ``<f4``): the embedder's dimensions are its length / 4."""


class ComponentInstructionRow(Base):
    """How to use one UI component (charting, tables, ...): texts at three intensities, for component_instructions."""

    __tablename__ = "component_instructions"
    component_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    full: Mapped[str] = mapped_column(Text, default="")
    medium: Mapped[str] = mapped_column(Text, default="")
    light: Mapped[str] = mapped_column(Text, default="")
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class ModuleStateRow(Base):
    """Activation chosen by an admin; the registry's state is in memory, so it is re-applied at start-up."""

    __tablename__ = "module_state"
    module_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    active: Mapped[bool]
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class TokenCalibrationRow(Base):
    """Per model without an offline tokenizer: the largest ratio of the provider's prompt count to cl100k's seen,
    shared by every replica (``tda/calibration.py``)."""

    __tablename__ = "token_calibrations"
    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    ratio: Mapped[float] = mapped_column(Float)
    samples: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class ApiTokenRow(Base):
    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100))
    role: Mapped[str] = mapped_column(String(16))
    project_id: Mapped[str | None] = mapped_column(String(64), index=True, default=None)
    """The project the token acts in; None for an operator token (it manages projects, across all of them)."""
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)


class BrowserSessionRow(Base):
    """A browser sign-in: the cookie carries a random id, kept here hashed, so signing out ends it on every
    replica (a copied cookie stops working) and a signed cookie alone signs nobody in."""

    __tablename__ = "browser_sessions"
    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


class ExperimentRow(Base):
    """A candidate type replayed against a baseline over a slice of recorded turns (tda/experiments.py): what was
    asked (``spec``), how far it got, and its figures per turn and in total once it ends."""

    __tablename__ = "experiments"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    project_id: Mapped[str] = _project_column()
    actor: Mapped[str] = mapped_column(String(100))
    status: Mapped[str] = mapped_column(String(16), default="running")
    """running, done, cancelled or failed (``error`` says why)."""
    spec: Mapped[dict[str, Any]]
    total: Mapped[int] = mapped_column(default=0)
    """Turns in the slice."""
    done: Mapped[int] = mapped_column(default=0)
    """Turns replayed so far."""
    totals: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    turns: Mapped[list[Any] | None] = mapped_column(default=None)
    error: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    finished_at: Mapped[datetime | None] = mapped_column(default=None)


class AuditRow(Base):
    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_entity", "entity", "entity_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project_id: Mapped[str | None] = _project_column(shared=True)
    """The project the change was made in; None: by the operator, the CLI or the system."""
    at: Mapped[datetime] = mapped_column(default=utcnow)
    actor: Mapped[str] = mapped_column(String(100))
    action: Mapped[str] = mapped_column(String(32))
    entity: Mapped[str] = mapped_column(String(32))
    entity_id: Mapped[str] = mapped_column(String(64))
    before: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    after: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
