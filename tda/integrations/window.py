"""A conversation assembled in process: what the framework integrations share.

``Window.assemble`` takes an agent's conversation in OpenAI's chat format, as the gateway does (leading system
messages are the instructions, the last user message the query, what follows it the turn's tool loop, what comes
before it history the window type may condense; the agent's tools are sent whole) and returns the assembled window
and its snapshot. Nothing here touches the network, a database or the environment, except ``Reporter``, which posts
each snapshot to a tda server for its trace and live panel when the agent asks it to.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from components.context_window.base import (
    ROLES,
    AssemblyContext,
    ChatMessages,
    Document,
    KnowledgeRetriever,
    Message,
    Profile,
    ProfileType,
    Session,
    ToolSchema,
)
from components.context_window.handler import AssembledContext, ContextWindowHandler
from components.context_window.module_registry import ModuleRegistry
from components.context_window.snapshot import ContextWindowSnapshot
from components.context_window.window_type import ContextWindowType

from ..builtins import module_registry

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class Reporter:
    """Posts each snapshot to a tda server (``POST /v1/sessions/{session_id}/snapshots``, an admin token), where
    the session's trace and live panel show it. The session must exist on the server (``POST /v1/sessions``). A
    server that cannot be reached costs a warning in the log, never the agent's turn."""

    url: str
    """The server's address, e.g. ``http://127.0.0.1:8000``."""
    token: str
    session_id: str
    timeout_s: float = 5.0

    async def report(self, snapshot: ContextWindowSnapshot, turn: int, source: str) -> int | None:
        """The stored snapshot's id; None when the server did not take it (logged)."""
        import httpx

        body = {"turn": turn, "source": source, "snapshot": snapshot.to_dict()}
        path = f"{self.url.rstrip('/')}/v1/sessions/{self.session_id}/snapshots"
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s) as client:
                response = await client.post(path, json=body, headers={"Authorization": f"Bearer {self.token}"})
        except httpx.HTTPError as exc:
            log.warning("the snapshot was not reported to %s: %s", self.url, exc)
            return None
        if response.status_code != 201:
            log.warning("the snapshot was not reported to %s: %s %s", self.url, response.status_code, response.text)
            return None
        return int(response.json()["snapshot_id"])


def split(messages: Sequence[Message]) -> tuple[Sequence[Message], Sequence[Message], Message, Sequence[Message]]:
    """Instructions (leading system messages), history, the last user message, and the tool loop after it."""
    start = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
    last_user = next((i for i in range(len(messages) - 1, start - 1, -1) if messages[i].role == "user"), None)
    if last_user is None:
        raise ValueError("the conversation has no user message: a window is assembled for the newest one")
    return messages[:start], messages[start:last_user], messages[last_user], messages[last_user + 1 :]


@dataclass
class Window:
    """A window type assembling an agent's conversations in process: its modules, budgets and snapshots."""

    window_type: str | ContextWindowType = "balanced"
    """A shipped type's id (``balanced``, ``conversation_first``, ``knowledge_heavy``, ``token_efficient``) or a
    ``ContextWindowType`` of your own."""
    model: str = "gpt-4o"
    """The model the window is assembled for (litellm's name): its input limit and tokenizer."""
    model_limit: int | None = None
    """Treat the model's input limit as this many tokens (lower it to budget tighter); None: the model's own."""
    system_prompt: str = ""
    """Used only when the agent sends no system message of its own."""
    profile_type: ProfileType = "tool_enabled"
    knowledge: KnowledgeRetriever | None = None
    """Passages the knowledge modules may add (``components.context_window.providers.StaticKnowledge``, ...)."""
    documents: Sequence[Document] = ()
    session_id: str = ""
    report: Reporter | None = None
    registry: ModuleRegistry | None = None
    """The modules (default: the built-in ones and installed packs)."""
    timeout_s: float = 2.0
    """How long one module may take."""
    last: AssembledContext | None = field(default=None, init=False)
    """The newest assembly (its ``snapshot`` says what each module got and used)."""
    _read: tuple[list[dict[str, Any]], ChatMessages] = field(
        default_factory=lambda: ([], ChatMessages()), init=False, repr=False
    )
    """The last conversation as received (shallow copies) and as the component reads it: an agent sends the same
    conversation grown by a step or a turn, whose start is not read again (10,000 messages made took ~15 ms)."""

    def __post_init__(self) -> None:
        from ..config import offline_library_defaults  # litellm's cost map and tiktoken's files as shipped

        offline_library_defaults()
        if self.registry is None:
            self.registry = module_registry().load()
        if isinstance(self.window_type, str):
            shipped = {t.id: t for t in self.registry.window_types()}
            if self.window_type not in shipped:
                raise ValueError(f"unknown window type {self.window_type!r}; use one of {sorted(shipped)}")
            self.window_type = shipped[self.window_type]
        self._handler = ContextWindowHandler(self.registry, timeout_s=self.timeout_s)

    def _converted(self, messages: Sequence[Mapping[str, Any]]) -> ChatMessages:
        """``messages`` as the component's (each made when first read), the start the last call sent (equal, compared
        in C) not read again: the same ``Message`` objects, so what is cached by them (recall's index) holds too."""
        seen, converted = self._read
        held = len(seen)
        if len(messages) >= held and list(messages[:held]) == seen:
            new = list(map(dict, messages[held:]))
            converted.extend(new)
            self._read = (seen + new, converted)
        else:
            copies = list(map(dict, messages))  # map: copies in C
            self._read = (copies, ChatMessages(copies))
        return self._read[1]

    async def assemble(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = (), *, source: str = "library"
    ) -> AssembledContext:
        """The window for this conversation (OpenAI chat messages and function tools), reported when asked."""
        instructions, history, query, continuation = split(self._converted(messages))
        ctx = AssemblyContext(
            query=query.content,
            query_message=query,
            instructions=instructions,
            continuation=continuation,
            profile=Profile("library", self.profile_type, system_prompt=self.system_prompt),
            session=Session(self.session_id, messages=history, documents=tuple(self.documents)),
            model=self.model,
            model_limit=self.model_limit,
            tools=tuple(ToolSchema.from_openai(t) for t in tools),
            tools_as_sent=True,
            knowledge=self.knowledge,
        )
        assert isinstance(self.window_type, ContextWindowType)  # resolved in __post_init__
        self.last = await self._handler.assemble(ctx, self.window_type)
        if self.report is not None:
            turn = sum(1 for m in messages if m.get("role") == "user")  # each user message starts a turn
            await self.report.report(self.last.snapshot, turn, source)
        return self.last


def in_own_objects(
    window: Sequence[Mapping[str, Any]],
    sent: Sequence[tuple[Mapping[str, Any], T]],
    made: Callable[[dict[str, Any]], T],
) -> list[T]:
    """The window's messages as the framework's objects: for a message the window kept unchanged, the object it
    came from (``sent``: each chat message with its object, in order); ``made(message)`` for one a module added or
    changed."""
    own: dict[str, list[T]] = defaultdict(list)
    for chat, origin in sent:
        own[_identity(chat)].append(origin)
    return [own[key].pop(0) if own[key := _identity(m)] else made(dict(m)) for m in window]


def _identity(message: Mapping[str, Any]) -> str:
    """A message as tda reads it (so ``None`` content and ``""`` are one): the sorted JSON of its chat dict."""
    text = _text_identity(message)
    if text is not None:
        return text
    return json.dumps(Message.from_chat(message).to_chat(), sort_keys=True, default=str)


def _text_identity(message: Mapping[str, Any]) -> str | None:
    """``_identity`` of a message of text alone (most of a conversation), written out rather than made through a
    ``Message``, its chat dict and the JSON encoder: its fields are strings, so its JSON is each string's, in the
    keys' order; None for any other message."""
    role, content = message["role"], message.get("content") or ""
    call_id, name = message.get("tool_call_id"), message.get("name")
    if role not in ROLES or type(content) is not str or message.get("tool_calls"):  # (a role tda refuses: raised)
        return None
    if (call_id is not None and type(call_id) is not str) or (name is not None and type(name) is not str):
        return None
    named = "" if name is None else f'"name": {_string(name)}, '
    answers = "" if call_id is None else f', "tool_call_id": {_string(call_id)}'
    return f'{{"content": {_string(content)}, {named}"role": {_string(role)}{answers}}}'


_string = json.encoder.encode_basestring_ascii
"""A string as ``json.dumps`` writes it (ASCII only: the encoder's own, in C)."""
