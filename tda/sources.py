"""Builds the AssemblyContext from storage, and fingerprints it so a snapshot can be replayed and compared."""

from __future__ import annotations

import functools
import hashlib
import json
import operator
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from components.context_window.base import (
    AssemblyContext,
    CaseRetriever,
    ChampionCase,
    Document,
    Embedder,
    HistoryRecall,
    KnowledgeRetriever,
    MessageSource,
    Profile,
    Session,
    Summarizer,
    ToolSchema,
)
from components.context_window.offload import Runner
from components.context_window.session_cache import BoundedCache
from components.context_window.token_estimator import resolve_model_limit

from .history import history_read, message_of
from .knowledge.scope import CaseScope, session_key
from .knowledge.store import in_project
from .llm import LLMSummarizer
from .models import AttachmentRow, ProfileRow, SessionRow
from .offload import in_thread
from .recall.turns import TurnIndex, record_of
from .scope import DEFAULT_PROJECT
from .store.sessions import SessionData

__all__ = ["message_of"]  # turns.py builds messages from rows with it


@runtime_checkable
class CaseRecorder(Protocol):
    """Keeps successful turns as champion cases (``tda.knowledge.providers.LiveKnowledge`` implements it), each in
    the scope of the session it came from, and serves a scope the cases it may see as they were at a time: what it
    recorded after a turn was assembled stays out of its replay. Windows reach it only through ``ScopedCases``."""

    async def retrieve_cases(
        self, query: str, *, scope: CaseScope, k: int = 3, recorded_before: float | None = None
    ) -> list[ChampionCase]: ...

    def case_id(self, query: str, answer: str, *, scope: CaseScope, from_tools: bool) -> str:
        """The id ``record_case`` gives this query and answer: a turn answers with it before the case is written."""
        ...

    async def record_case(
        self,
        query: str,
        answer: str,
        *,
        scope: CaseScope,
        from_tools: bool,
        plan: str = "",
        tokens: int = 0,
        feedback: int | None = None,
        session_id: str = "",
        turn: int = 0,
    ) -> str: ...


@dataclass
class Sources:
    """Providers handed to modules. Each may be missing: the modules that need it then contribute nothing."""

    knowledge: KnowledgeRetriever | None = None
    cases: CaseRetriever | CaseRecorder | None = None
    """A read-only retriever (a test's fake), or a recorder, which windows reach only through ``ScopedCases``."""
    summarizer: Summarizer | None = None
    embedder: Embedder | None = None
    history_recall: HistoryRecall | None = None
    """Recalls older history by relevance (``tda/recall/messages.py`` keeps it up to date as messages are recorded)."""
    turn_index: TurnIndex | None = None
    """Keeps what modules search of each session's older turns (``tda/recall/turns.py``), as turns are recorded."""
    offload: Runner | None = in_thread
    """How modules and recall run a step over a long history off the event loop (``tda/offload.py``)."""
    _tools: BoundedCache[tuple[str, str], tuple[ToolSchema, ...]] = field(
        default_factory=lambda: BoundedCache(256), repr=False
    )

    def tools_of(self, profile: ProfileRow) -> tuple[ToolSchema, ...]:
        """Same profile version, same ToolSchema objects: their JSON and token counts are computed once."""
        key = (profile.id, profile.updated_at.isoformat())
        return self._tools.get_or_compute(key, lambda: tuple(ToolSchema.from_openai(t) for t in profile.tools))

    @property
    def case_recorder(self) -> CaseRecorder | None:
        """The champion-case provider when it can also record cases (a read-only fake cannot)."""
        return self.cases if isinstance(self.cases, CaseRecorder) else None


@dataclass(frozen=True)
class Cutoff:
    """Rebuild the context as it was before ``turn`` (replay): later history and attachments are left out."""

    turn: int
    attachments_until: datetime
    cases_until: float
    """Unix time the turn's assembly started: champion cases recorded later are left out."""


def case_scope(session: SessionRow, profile: ProfileRow, *, others_only: bool = False) -> CaseScope:
    """The scope of a session's champion cases: what its turns record in, and what its windows may be shown
    (``others_only``: not the session's own cases)."""
    sharing: Any = profile.case_sharing
    if sharing not in ("session", "user", "profile"):  # a value this version does not know: the narrowest
        sharing = "session"
    key = session_key(session.id, session.created_at)
    return CaseScope(case_profile(profile), key, session.user_id, sharing, others_only=others_only)


def case_profile(profile: ProfileRow) -> str:
    """The profile as champion cases name it: qualified by its project (bare in the default project, as cases
    recorded before projects are), so a profile id reused by another project never reaches the first's cases."""
    project = profile.project_id
    return profile.id if project in (None, DEFAULT_PROJECT) else f"{project}/{profile.id}"


class ScopedCases:
    """The component's ``CaseRetriever`` for one window: the recorder's cases this session's scope may see (and in a
    replay, those recorded by ``until``, a Unix time, with their ratings as they are now). A module asks by query
    alone: it cannot name another scope."""

    __slots__ = ("__recorder", "__scope", "__until")

    def __init__(self, recorder: CaseRecorder, scope: CaseScope, until: float | None = None) -> None:
        self.__recorder, self.__scope, self.__until = recorder, scope, until

    async def retrieve_cases(self, query: str, *, k: int = 3) -> list[ChampionCase]:
        return await self.__recorder.retrieve_cases(query, scope=self.__scope, k=k, recorded_before=self.__until)


def build_context(
    data: SessionData,
    query: str,
    *,
    default_model: str,
    sources: Sources,
    history: MessageSource,
    cutoff: Cutoff | None = None,
    others_cases_only: bool = False,
) -> AssemblyContext:
    attachments = data.attachments
    if cutoff is not None:
        attachments = [a for a in attachments if aware_utc(a.created_at) <= aware_utc(cutoff.attachments_until)]
    scope = case_scope(data.session, data.profile, others_only=others_cases_only)
    cases: CaseRetriever | None = None
    if isinstance(sources.cases, CaseRecorder):
        cases = ScopedCases(sources.cases, scope, cutoff.cases_until if cutoff is not None else None)
    else:  # a read-only retriever (a test's fake) holds no one else's cases
        cases = sources.cases
    p, s = data.profile, data.session
    return AssemblyContext(
        query=query,
        profile=Profile(
            id=p.id,
            type=p.type,  # type: ignore[arg-type]  # a ProfileType: validated when the profile was saved
            name=p.name,
            system_prompt=p.system_prompt,
            components=tuple(p.components),
            context_limit=p.context_limit,
            knowledge_collections=tuple(in_project(p.project_id, name) for name in p.knowledge_collections),
            system_prompt_mode=p.system_prompt_mode,  # type: ignore[arg-type]  # as type, above
            case_sharing=scope.sharing,  # in the inputs: a replay says when the sharing changed since
            query_rewrite=p.query_rewrite,
        ),
        session=Session(
            id=s.id,
            user_id=s.user_id,
            history=history,
            turns=[record_of(t) for t in data.turns],
            documents=[_document(a) for a in attachments],
            context_limit=s.context_limit,
            phase=s.phase,
        ),
        model=p.model or default_model,
        tools=sources.tools_of(p),
        knowledge=sources.knowledge,
        cases=cases,
        summarizer=summarizer_for(sources.summarizer, p.model or default_model, p, s),
        embedder=sources.embedder,
        history_recall=sources.history_recall,
        offload=sources.offload,
        earlier_turns=None if sources.turn_index is None else sources.turn_index.bound(s, s.phase),
    )


def summarizer_for(summarizer: Summarizer | None, model: str, p: ProfileRow, s: SessionRow) -> Summarizer | None:
    """The service's summarizer bound to this window: its model at the profile's upstream, within the model's limit
    as the profile and session lower it (an injected one, a test's fake, is used as it is)."""
    if not isinstance(summarizer, LLMSummarizer):
        return summarizer
    window = min(n for n in (resolve_model_limit(model)[0], p.context_limit, s.context_limit) if n)
    return summarizer.at(model, p.upstream, window)


def aware_utc(t: datetime) -> datetime:
    # SQLite hands datetimes back without a zone; they were written in UTC.
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _document(a: AttachmentRow) -> Document:
    return Document(id=a.id, name=a.name, text=a.text, mime_type=a.mime_type)


# --- fingerprints: what replay compares to explain a different outcome --------------------------------


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _values(item: object) -> tuple[Any, ...]:
    """A dataclass's field values, shallow (``asdict`` deep-copies every nested value: slow on long histories)."""
    cls: type = type(item)  # as type[object], mypy would check the class against Hashable as an instance
    return _field_getter(cls)(item)


@functools.cache
def _field_getter(cls: type) -> Callable[[Any], tuple[Any, ...]]:
    """Reads a dataclass's fields in one C call (``fields()`` per item took 0.3 ms of every turn, for its turns)."""
    names = [f.name for f in fields(cls)]
    get = operator.attrgetter(*names)
    return get if len(names) > 1 else lambda item: (get(item),)


def _history_read(s: Session) -> list[Any]:
    """What of the history the assembly read (a stored session's walk reads only the newest part)."""
    read = history_read(s.history) if s.history is not None else None
    return read if read is not None else [_values(x) for x in s.messages]


def input_hashes(ctx: AssemblyContext) -> dict[str, str]:
    s, p = ctx.session, ctx.profile
    return {
        "query": _digest(ctx.query),
        "model": _digest(ctx.model),
        "profile": _digest(_values(p)),
        "limits": _digest([p.context_limit, s.context_limit, s.phase]),
        "history": _digest(_history_read(s)),
        "turns": _digest([_values(x) for x in s.turns]),
        "documents": _digest([_values(x) for x in s.documents]),
        "tools": _digest([t.json for t in ctx.tools]),
    }
