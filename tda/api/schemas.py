"""Request bodies and query strings (pydantic v2): validated at the edge, documented in /openapi.json."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from components.context_window.base import (
    CASE_SHARING_HELP,
    SYSTEM_PROMPT_MODE_HELP,
    CaseSharing,
    ProfileType,
    SystemPromptMode,
)
from components.context_window.phases import Phase
from components.context_window.snapshot import ContextWindowSnapshot

MAX_INT = 2**31 - 1
"""Upper bound for ids, turns and versions: larger numbers cannot name anything and overflow SQL integers."""
SLUG = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
Slug = Field(pattern=SLUG)
MIN_CONTEXT_LIMIT = 256


class _In(BaseModel):
    """A JSON body: unknown fields and lax coercions (``0`` for a boolean, ``false`` for a number) are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


class _Query(BaseModel):
    """A query string: every value arrives as text, so numbers and booleans are parsed from it."""

    model_config = ConfigDict(extra="forbid")


class _ReadBack(_In):
    """A body GET returned can be sent back as it is (read-modify-write): the fields the server computes are
    accepted and ignored; ``SAME_AS_STORED`` fields are checked against the stored values by the handler."""

    COMPUTED: ClassVar[frozenset[str]] = frozenset({"created_at", "updated_at"})
    SAME_AS_STORED: ClassVar[frozenset[str]] = frozenset({"id"})

    id: str | None = Field(None, description="read-only: when sent, it must be the id in the URL")

    @model_validator(mode="before")
    @classmethod
    def _drop_computed(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if k not in cls.COMPUTED}
        return data

    def changes(self) -> dict[str, Any]:
        """The editable fields the caller sent."""
        return self.model_dump(exclude_unset=True, exclude=set(self.SAME_AS_STORED))


class ToolIn(_In):
    type: Literal["function"] = "function"
    function: dict[str, Any]


class UpstreamIn(_In):
    """Where a profile's model is called (empty: the service's default upstream)."""

    base_url: str | None = Field(
        None, max_length=500, pattern=r"^https?://\S+$", description="an OpenAI-compatible API"
    )
    api_key_env: str | None = Field(
        None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$", description="the environment variable holding the API key"
    )
    fallbacks: list[str] = Field(default_factory=list, max_length=5, description="models tried in order on failure")
    num_retries: int | None = Field(None, ge=0, le=5)


class ProfileFields(_In):
    name: str = Field("", max_length=100)
    type: ProfileType = "tool_enabled"
    system_prompt: str = Field("You are a helpful assistant.", max_length=200_000)
    context_window_type_id: str | None = Field(None, description="null: the default type")
    context_window_type_label: str | None = Field(
        None, pattern=SLUG, description="run the version of the type with this label; null: its current version"
    )
    context_limit: int | None = Field(
        None, ge=MIN_CONTEXT_LIMIT, le=MAX_INT, description="can only lower the model's limit"
    )
    model: str | None = Field(None, max_length=200, description="null: the service's configured model")
    tools: list[ToolIn] = Field(default_factory=list)
    components: list[str] = Field(default_factory=list)
    knowledge_collections: list[str] = Field(default_factory=list)
    system_prompt_mode: SystemPromptMode = Field("client", description=SYSTEM_PROMPT_MODE_HELP)
    case_sharing: CaseSharing = Field("user", description=CASE_SHARING_HELP)
    query_rewrite: bool = Field(
        False, description="rewrite follow-ups into standalone retrieval queries (a model call)"
    )
    upstream: UpstreamIn = Field(default_factory=UpstreamIn)


class ProfileIn(ProfileFields):
    id: str = Slug


class ProfilePatch(_ReadBack):
    name: str | None = Field(None, max_length=100)
    type: ProfileType | None = None
    system_prompt: str | None = Field(None, max_length=200_000)
    context_window_type_id: str | None = None
    context_window_type_label: str | None = Field(None, pattern=SLUG)
    context_limit: int | None = Field(None, ge=MIN_CONTEXT_LIMIT, le=MAX_INT)
    model: str | None = Field(None, max_length=200)
    tools: list[ToolIn] | None = None
    components: list[str] | None = None
    knowledge_collections: list[str] | None = None
    system_prompt_mode: SystemPromptMode | None = None
    case_sharing: CaseSharing | None = None
    query_rewrite: bool | None = None
    upstream: UpstreamIn | None = None


class SessionIn(_In):
    id: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    profile_id: str
    user_id: str = Field("anonymous", max_length=100)
    title: str = Field("", max_length=200)
    context_limit: int | None = Field(None, ge=MIN_CONTEXT_LIMIT, le=MAX_INT)
    phase: Phase | None = None


class SessionPatch(_ReadBack):
    COMPUTED = _ReadBack.COMPUTED | {
        "profile",
        "context_window_type_id",
        "context_window_type_version",
        "model",
        "model_limit",
        "model_limit_source",
        "turns",
        "attachments",
        "message_count",
        "older_turns",
    }
    SAME_AS_STORED = frozenset({"id", "profile_id", "context_limit"})

    profile_id: str | None = Field(None, description="read-only: a session keeps its profile")
    context_limit: int | None = Field(None, description="read-only here: change it with POST .../context-limit")
    title: str | None = Field(None, max_length=200)
    phase: Phase | None = None
    phase_summary: str | None = Field(
        None,
        max_length=50_000,
        description="on a move to a later phase: what the phase being left produced, carried into the new one "
        "(default: its turns, one line each)",
    )
    user_id: str | None = Field(None, max_length=100)


class ContextLimitIn(_In):
    context_limit: int | None = Field(
        ...,
        ge=MIN_CONTEXT_LIMIT,
        le=MAX_INT,
        description="tokens; null clears the override (back to the model's limit)",
    )


class MessageIn(_In):
    role: Literal["system", "user", "assistant", "tool"]
    content: str = Field("", max_length=1_000_000)
    turn: int = Field(ge=0, le=MAX_INT)
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    valid: bool = True
    phase: str | None = None


class MessagesIn(_In):
    messages: list[MessageIn] = Field(min_length=1, max_length=10_000)


class AttachmentIn(_In):
    name: str = Field(min_length=1, max_length=200)
    text: str = Field(max_length=5_000_000)
    mime_type: str = Field("text/plain", max_length=100)


class TurnIn(_In):
    query: str = Field(min_length=1, max_length=200_000)


class ComponentInstructionsIn(_In):
    full: str = Field("", max_length=100_000, description="the whole instruction")
    medium: str = Field("", max_length=100_000, description="shorter, for a tighter budget")
    light: str = Field("", max_length=100_000, description="a line or two: the last step before dropping it")

    @model_validator(mode="after")
    def _some_text(self) -> ComponentInstructionsIn:
        if not any(t.strip() for t in (self.full, self.medium, self.light)):
            raise ValueError("give at least one of full, medium, light as text")
        return self


class ToolResultIn(_In):
    tool_call_id: str = Field(min_length=1, max_length=100)
    content: str = Field("", max_length=5_000_000)


class ToolResultsIn(_In):
    """The results of the tool calls the turn's last reply made: one per call id."""

    results: list[ToolResultIn] = Field(min_length=1, max_length=128)


class TurnValidityIn(_In):
    valid: bool


class FeedbackIn(_In):
    feedback: int = Field(ge=-1, le=1)  # an int, not Literal[-1, 0, 1]: a Literal also takes true and 1.0
    """+1 helpful, -1 wrong (the case is never served again), 0 clears a rating."""


class PurgeIn(_In):
    session_id: str


class InstallIn(_In):
    path: str = Field(min_length=1, description="a module folder on the server's file system")


class RollbackIn(_In):
    version: int = Field(ge=1, le=MAX_INT)


class PreviewIn(_In):
    """Exactly one of ``type`` (an unsaved type body) or ``type_id`` (a saved one)."""

    type: dict[str, Any] | None = None
    type_id: str | None = None
    session_id: str
    query: str = Field(min_length=1, max_length=200_000)
    profile_id: str | None = Field(None, description="assemble under this profile instead of the session's own")
    context_limit: int | None = Field(
        None,
        ge=MIN_CONTEXT_LIMIT,
        le=MAX_INT,
        description="tokens; like a session limit, it can only lower the model's",
    )

    @model_validator(mode="after")
    def _one_type(self) -> PreviewIn:
        if (self.type is None) == (self.type_id is None):
            raise ValueError("give exactly one of 'type' (an unsaved type body) or 'type_id'")
        return self


KnowledgeMime = Literal["text/plain", "text/markdown", "text/x-markdown", "text/html", "application/pdf"]
MAX_KNOWLEDGE_DOCUMENT_BYTES = 10 * 1024 * 1024
"""A document sent to a knowledge collection, decoded (the body as a whole is bounded by TDA_MAX_BODY_BYTES)."""
KnowledgeCollections: Any = Field(
    default_factory=list, max_length=50, description="collection names (search: empty means every collection)"
)


class KnowledgeDocumentIn(_In):
    """One document: its text, or its file's bytes in base64 (PDF, HTML, Markdown or plain text)."""

    id: str | None = Field(None, min_length=1, max_length=500, description="the document id (default: name)")
    name: str = Field(
        min_length=1,
        max_length=300,
        description="a relative file name such as guides/setup.md: its suffix (or mime_type) picks the reader, "
        "and it is the document id unless id is given, as `tda knowledge ingest` names a file under its folder",
    )
    text: str | None = Field(None, max_length=5_000_000)
    content_base64: str | None = Field(None, max_length=(MAX_KNOWLEDGE_DOCUMENT_BYTES + 2) // 3 * 4)
    mime_type: KnowledgeMime | None = Field(None, description="the reader, when the name's suffix does not say")

    @field_validator("name")
    @classmethod
    def _relative_name(cls, name: str) -> str:
        parts = name.split("/")
        if "\\" in name or any(part in ("", ".", "..") for part in parts):
            raise ValueError("must be a relative file name (folders with /, no '..', no leading /)")
        if any(len(part.encode()) > 200 for part in parts):
            raise ValueError("each folder or file name must be at most 200 bytes")
        return name

    @model_validator(mode="after")
    def _one_body(self) -> KnowledgeDocumentIn:
        if (self.text is None) == (self.content_base64 is None):
            raise ValueError("give exactly one of 'text' or 'content_base64'")
        return self


class KnowledgeIngestIn(_In):
    documents: list[KnowledgeDocumentIn] = Field(min_length=1, max_length=100)
    target_tokens: int = Field(300, ge=20, le=8000, description="chunk size target in tokens, as the CLI's")


class KnowledgeSearchIn(_In):
    query: str = Field(min_length=1, max_length=200_000)
    collections: list[str] = KnowledgeCollections
    k: int = Field(5, ge=1, le=100, description="passages to return at most")
    min_score: float = Field(0.0, ge=0.0, le=1.0, description="drop passages less similar to the query (cosine)")
    documents: list[str] = Field(default_factory=list, max_length=100, description="only these document ids")
    sections: list[str] = Field(default_factory=list, max_length=100, description="only these sections and below")


class KnowledgeContextIn(_In):
    query: str = Field(min_length=1, max_length=200_000)
    collections: list[str] = Field(min_length=1, max_length=50, description="the collections a profile would read")
    budget: int = Field(ge=0, le=1_000_000, description="the knowledge_context module's budget in tokens")
    model: str | None = Field(
        None, min_length=1, max_length=200, description="whose tokenizer counts (default: the service's model)"
    )


class SignInIn(_In):
    token: str = Field(min_length=1, max_length=200)


class SessionQuery(_Query):
    turns: int = Field(50, ge=1, le=500, description="how many of the newest turns (listed oldest first)")
    before: int | None = Field(None, ge=1, le=MAX_INT, description="only turns before this one (older_turns)")


ISO_TIME_PATTERN = r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})?)?$"
"""A date, or a date and time, as the filters take them (OpenAPI's date-time is stricter: seconds and a zone)."""


def iso_time_schema(schema: dict[str, Any]) -> None:
    """The filter's schema says what it takes: a string of ``ISO_TIME_PATTERN`` (or nothing)."""
    description = schema.get("description")
    schema.clear()
    schema.update({"anyOf": [{"type": "string", "pattern": ISO_TIME_PATTERN}, {"type": "null"}], "default": None})
    if description:
        schema["description"] = description


class TurnsQuery(_Query):
    """Which turns to list: every filter given must match (dates in UTC; a day alone means the whole day)."""

    type_id: str | None = Field(None, pattern=SLUG, description="assembled under this window type")
    model: str | None = Field(None, min_length=1, max_length=200, description="answered by this model")
    outcome: Literal["success", "tool_calls"] | None = Field(
        None, description="success: answered; tool_calls: ended asking for tool results"
    )
    since: datetime | None = Field(
        None, description="on or after this time (2026-11-25 or 2026-11-25T10:00)", json_schema_extra=iso_time_schema
    )
    until: datetime | None = Field(
        None, description="before this time; a day alone includes that day", json_schema_extra=iso_time_schema
    )
    q: str | None = Field(None, min_length=1, max_length=200, description="text in the query, answer or messages")

    @field_validator("since", "until", mode="before")
    @classmethod
    def _iso(cls, value: Any) -> Any:
        """Only what the schema says (pydantic alone would also take a number of seconds)."""
        if isinstance(value, str) and not re.fullmatch(ISO_TIME_PATTERN, value):
            raise ValueError("expected a date (2026-11-25) or a date and time (2026-11-25T10:00, optionally :ss and Z)")
        return value

    @field_validator("until", mode="before")
    @classmethod
    def _whole_day(cls, value: Any) -> Any:
        """``until=2026-11-25`` means up to the end of that day, as a person reading a date range expects."""
        if isinstance(value, str) and len(value.strip()) == 10:
            try:
                return datetime.combine(date.fromisoformat(value.strip()), datetime.min.time()) + timedelta(days=1)
            except ValueError:
                return value  # pydantic names the problem
        return value

    @field_validator("since", "until")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        """Compared in UTC (SQLite stores times without their zone): a time without one is UTC."""
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    @model_validator(mode="after")
    def _ordered(self) -> TurnsQuery:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError("since must come before until: swap the two dates")
        return self

    def turn_filters(self) -> dict[str, Any]:
        """The filters given (the store's ``turn_filters``)."""
        names = ("type_id", "model", "outcome", "since", "until", "q")
        return {k: getattr(self, k) for k in names if getattr(self, k) is not None}


class SessionsQuery(TurnsQuery):
    """Sessions of a profile, and with any turn filter only the sessions with a turn that matches (those turns
    are listed with each session)."""

    profile_id: str | None = Field(None, pattern=SLUG, description="sessions of this profile")
    find: str | None = Field(
        None, min_length=1, max_length=200, description="sessions whose id, title or user contains this (any case)"
    )
    limit: int = Field(200, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=MAX_INT, description="skip this many (the previous page's next_offset)")


SNAPSHOT = TypeAdapter(ContextWindowSnapshot)


class SnapshotReportIn(_In):
    """A window tda assembled in process (tda/integrations), reported for the session's trace and live panel."""

    turn: int = Field(ge=1, le=MAX_INT, description="the agent's turn: its user messages so far")
    source: str = Field("library", pattern=SLUG, description="what assembled it: langchain, pydantic-ai, ...")
    snapshot: dict[str, Any] = Field(description="the snapshot as ContextWindowSnapshot.to_dict writes it")

    @field_validator("snapshot")
    @classmethod
    def _a_snapshot(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            snapshot = SNAPSHOT.validate_python(value)
        except ValidationError as exc:
            where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
            raise ValueError(f"not a context window snapshot as tda writes one ({where})") from None
        if len(snapshot.window_type_id) > 64 or len(snapshot.model) > 200:
            raise ValueError("window_type_id is at most 64 characters and model at most 200")
        return snapshot.to_dict()


class SnapshotsQuery(_Query):
    after: int = Field(0, ge=0, le=MAX_INT, description="only snapshots with a larger id")
    limit: int = Field(100, ge=1, le=1000)
    newest_first: bool = Field(False, description="true: the latest first (limit=1 gives the latest snapshot)")


class LabelIn(_In):
    version: int = Field(ge=1, le=MAX_INT, description="the version the label goes on")
    reason: str = Field("", max_length=2000, description="why (what justified the rollout), kept with the label")
    experiment_id: str | None = Field(
        None, min_length=1, max_length=32, description="the experiment that justified the move, linked with it"
    )


class TurnLabelsIn(_In):
    """What a person says of a turn, for experiments to check (docs/experiments.md)."""

    expected_evidence: list[Annotated[str, Field(min_length=1, max_length=2000)]] = Field(
        default_factory=list, max_length=50, description="texts the turn's window should hold to answer it"
    )
    rating: int | None = Field(None, ge=-1, le=1, description="+1 a good window, -1 a bad one; null or 0: none")


class CandidateIn(_In):
    """Exactly one of ``type`` (an editor's unsaved type body) or ``type_id`` (a saved type; ``version``: its
    current one when left out)."""

    type: dict[str, Any] | None = None
    type_id: str | None = Field(None, pattern=SLUG)
    version: int | None = Field(None, ge=1, le=MAX_INT)

    @model_validator(mode="after")
    def _one_type(self) -> CandidateIn:
        if (self.type is None) == (self.type_id is None):
            raise ValueError("give exactly one of 'type' (an unsaved type body) or 'type_id' (a saved type)")
        if self.type is not None and self.version is not None:
            raise ValueError("'version' goes with 'type_id', not with an unsaved 'type'")
        return self


class BaselineIn(_In):
    type_id: str = Field(pattern=SLUG)
    version: int | None = Field(None, ge=1, le=MAX_INT, description="the type's current version when left out")


class SliceIn(_In):
    """Which recorded turns to replay: every filter given must match (dates in UTC; a day alone means the whole
    day); of those, the ``limit`` newest, or ``limit`` at random."""

    profile_id: str | None = Field(None, pattern=SLUG, description="turns of this profile's sessions")
    type_id: str | None = Field(None, pattern=SLUG, description="turns assembled under this type")
    since: str | None = Field(None, pattern=ISO_TIME_PATTERN, description="on or after (2026-11-25 or ...T10:00)")
    until: str | None = Field(None, pattern=ISO_TIME_PATTERN, description="before; a day alone includes that day")
    session_ids: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(default_factory=list, max_length=1000)
    limit: int = Field(100, ge=1, le=5000, description="how many turns (the sample size)")
    sample: Literal["newest", "random"] = "newest"

    @model_validator(mode="after")
    def _ordered(self) -> SliceIn:
        self.filters()
        return self

    def filters(self) -> dict[str, Any]:
        since, until = _moment(self.since, end_of_day=False), _moment(self.until, end_of_day=True)
        if since is not None and until is not None and since >= until:
            raise ValueError("since must come before until: swap the two dates")
        return {**self.model_dump(exclude={"since", "until"}), "since": since, "until": until}


def _moment(value: str | None, *, end_of_day: bool) -> datetime | None:
    if value is None:
        return None
    if len(value) == 10:
        day = datetime.combine(date.fromisoformat(value), datetime.min.time())
        return (day + timedelta(days=1) if end_of_day else day).replace(tzinfo=UTC)
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class ExperimentIn(_In):
    """A candidate type against a baseline (left out: what each turn's profile runs now) over recorded turns."""

    name: str = Field("", max_length=200)
    candidate: CandidateIn
    baseline: BaselineIn | None = None
    slice: SliceIn = Field(default_factory=SliceIn)


class ExperimentsQuery(_Query):
    limit: int = Field(50, ge=1, le=500)
    offset: int = Field(0, ge=0, le=MAX_INT)


class ExportQuery(_Query):
    format: Literal["json", "csv"] = "json"


class AuditQuery(_Query):
    entity: str | None = None
    entity_id: str | None = None
    actor: str | None = Field(
        None, min_length=1, max_length=200, description="changes by an actor whose name contains this (any case)"
    )
    limit: int = Field(100, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=MAX_INT, description="skip this many (the previous page's next_offset)")


class Error(BaseModel):
    error: str
    message: str
    errors: list[dict[str, Any]] | None = None


class ProjectIn(_In):
    name: str = Field(min_length=1, max_length=63, description="lower-case letters, digits, '-' and '_'")


class TokenIn(_In):
    role: Literal["client", "viewer", "admin", "operator"] = Field(
        description="client: chats only (agents); viewer: reads; admin: changes its project; operator: projects, tokens"
    )
    project: str | None = Field(
        None, min_length=1, max_length=63, description="the project it acts in (default: 'default'; none for operator)"
    )
    name: str | None = Field(None, min_length=1, max_length=100)


class TokenQuery(_Query):
    project: str | None = Field(None, min_length=1, max_length=63, description="only this project's tokens")
