"""The module contract: what a context module receives, what it returns, and how it describes itself.

Everything a module reads arrives through :class:`AssemblyContext` — plain data plus small async
provider protocols — so modules never touch the database, the vector store or the network directly.
"""

from __future__ import annotations

import itertools
import json
import marshal
import operator
from abc import ABC, abstractmethod
from collections.abc import (
    AsyncGenerator,
    Callable,
    Coroutine,
    Hashable,
    Iterable,
    Iterator,
    Mapping,
    MutableSequence,
    Sequence,
)
from contextlib import aclosing
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from itertools import repeat
from operator import attrgetter, itemgetter
from types import MappingProxyType
from typing import Any, ClassVar, Literal, Protocol, TypeGuard, TypeVar, cast, overload, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .offload import Runner

ProfileType = Literal["tool_enabled", "llm_only", "rag_focused", "genie"]
PROFILE_TYPES: tuple[ProfileType, ...] = ("tool_enabled", "llm_only", "rag_focused", "genie")

SystemPromptMode = Literal["client", "profile", "prepend", "append"]
SYSTEM_PROMPT_MODE_HELP = (
    "how the profile's system prompt combines with a chat client's own system messages: 'client' keeps the "
    "client's (the profile's only when the client sends none), 'profile' replaces them, 'prepend' puts the "
    "profile's first, 'append' after"
)
CaseSharing = Literal["session", "user", "profile"]
CASE_SHARING_HELP = (
    "whose champion cases a window may show: 'session' its own session's, 'user' also the same user's other "
    "sessions of this profile (not cases built on tool results), 'profile' every case of this profile"
)

Placement = Literal["system", "tools", "history", "context"]
"""Where a contribution goes in the assembled window, most stable first (provider prompt caches)."""
PLACEMENTS: tuple[str, ...] = ("system", "tools", "history", "context")
ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})


def freeze(value: Any) -> Any:
    """A read-only deep copy of plain data: mappings become ``MappingProxyType``, lists and tuples tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    if isinstance(value, set | frozenset):
        return frozenset(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Plain, JSON-ready data from ``freeze``'s output (a fresh copy the caller may change)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    return value


def _frozen(value: Any) -> bool:
    return type(value) is MappingProxyType


def _unfrozen(value: Any) -> Any:
    """``json.dumps``'s hook for frozen mappings (tuples already serialise as lists)."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, frozenset):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON data")


# ---------------------------------------------------------------------------------------------
# Manifest (pydantic: it is read from manifest.json, an edge of the system)
# ---------------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Capabilities(_Strict):
    condensable: bool = True
    purgeable: bool = False


class Applicability(_Strict):
    profile_types: list[ProfileType] = Field(default_factory=lambda: list(PROFILE_TYPES))
    required: bool = False


class Defaults(_Strict):
    priority: int = Field(50, ge=0, le=100)
    target_pct: float = Field(0, ge=0, le=100)
    min_pct: float = Field(0, ge=0, le=100)
    max_pct: float = Field(100, ge=0, le=100)

    @model_validator(mode="after")
    def _ordered(self) -> Defaults:
        if not self.min_pct <= self.target_pct <= self.max_pct:
            raise ValueError("defaults must satisfy min_pct <= target_pct <= max_pct")
        return self


class HandlerRef(_Strict):
    file: str = "handler.py"
    class_: str = Field(alias="class")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ModuleManifest(_Strict):
    module_id: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")
    display_name: str
    version: str = "1.0.0"
    description: str = ""
    category: str = "general"
    capabilities: Capabilities = Field(default_factory=Capabilities)
    applicability: Applicability = Field(default_factory=Applicability)
    defaults: Defaults = Field(default_factory=Defaults)
    handler: HandlerRef | None = None


# ---------------------------------------------------------------------------------------------
# Session data (plain, frozen dataclasses: cheap to build, safe to share between modules)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, init=False, weakref_slot=True)
class Message:
    """One chat message. A tool call (assistant with ``tool_calls``) and its ``tool`` results form one unit."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    turn: int = 0
    valid: bool = True
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    phase: str | None = None
    tokens: Mapping[str, int] | None = field(default=None, compare=False)
    """The whole message's tokens as a prompt bills them, per tiktoken encoding name, counted when it was stored
    so a long history is not re-tokenised: ``TokenEstimator.count_message``, i.e. the cookbook's 3 per message
    + role + content + 1 and the name + tool calls / tool_call_id (reply priming excluded). Stores make them
    with ``counts_to_store``. ``None``: count it now. A figure below the message's least possible count (the
    overhead, role and name alone) is not a whole-message count and is ignored."""
    parts: tuple[Mapping[str, Any], ...] | None = None
    """OpenAI content parts as the client sent them (text, images, files), when the content is not plain text:
    sent as they are. ``content`` then holds the text of the text parts (what modules read and search)."""

    def __init__(
        self,
        role: Literal["system", "user", "assistant", "tool"],
        content: str = "",
        turn: int = 0,
        valid: bool = True,
        tool_calls: tuple[Mapping[str, Any], ...] = (),
        tool_call_id: str | None = None,
        name: str | None = None,
        phase: str | None = None,
        tokens: Mapping[str, int] | None = None,
        parts: tuple[Mapping[str, Any], ...] | None = None,
    ) -> None:
        # Written out rather than generated: a frozen dataclass sets each field through object.__setattr__,
        # and building the messages a window reads (anew from stored rows, every turn) was the largest
        # single cost of a turn over a long history. The slots' own setters are twice as fast.
        # Checked once, when made: a message is then safe to share, count once and send as counted.
        if role not in ROLES or type(content) is not str:
            raise ValueError(f"a message needs a role in {sorted(ROLES)} and text content, got {role!r}")
        if tool_calls and not all(_frozen(c) for c in tool_calls):
            if not all(isinstance(c, Mapping) for c in tool_calls):
                raise ValueError("tool_calls must be mappings in OpenAI's format")
            tool_calls = freeze(tool_calls)
        if parts is not None and not (type(parts) is tuple and all(_frozen(p) for p in parts)):
            if not all(isinstance(p, Mapping) and isinstance(p.get("type"), str) for p in parts):
                raise ValueError("content parts must be mappings with a 'type', in OpenAI's format")
            parts = freeze(tuple(parts))
        s_role, s_content, s_turn, s_valid, s_calls, s_call_id, s_name, s_phase, s_tokens, s_parts = _MESSAGE_SETTERS
        s_role(self, role)
        s_content(self, content)
        s_turn(self, turn)
        s_valid(self, valid)
        s_calls(self, tool_calls)
        s_call_id(self, tool_call_id)
        s_name(self, name)
        s_phase(self, phase)
        s_tokens(self, tokens)
        s_parts(self, parts)

    def to_chat(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content if self.parts is None else thaw(self.parts)}
        if self.tool_calls:
            out["tool_calls"] = thaw(self.tool_calls)
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out

    @classmethod
    def from_chat(cls, data: Mapping[str, Any]) -> Message:
        """Build from an OpenAI-style dict; ``turn``, ``valid`` and ``phase`` keys are optional. A list of content
        parts is kept as ``parts``, its text parts joined into ``content``."""
        if len(data) == 2 and type(text := data.get("content")) is str and "role" in data:
            return cls(data["role"], text)  # a role and text alone (most of a long conversation): made directly
        get = data.get
        content = get("content") or ""
        parts = tuple(content) if isinstance(content, list | tuple) else None
        return cls(  # positional, in field order: a client's 10,000-message conversation is converted at once
            data["role"],
            text_of_parts(parts) if parts is not None else content,
            int(get("turn", 0)),
            bool(get("valid", True)),
            tuple(get("tool_calls") or ()),
            get("tool_call_id"),
            get("name"),
            get("phase"),
            None,
            parts,
        )


def text_of_parts(parts: Sequence[Mapping[str, Any]]) -> str:
    """The text of a message's content parts (what retrieval and summaries read): its text parts, in order."""
    return "\n".join(str(p.get("text", "")) for p in parts if p.get("type") in ("text", "input_text", "output_text"))


_MESSAGE_SETTERS = tuple(Message.__dict__[f.name].__set__ for f in fields(Message))
"""Each field's slot setter, in field order (they bypass the frozen ``__setattr__``, as dataclasses' own init does)."""
_DEFAULTS = {f.name: f.default for f in fields(Message)}


class ChatMessages(Sequence[Message]):
    """OpenAI chat messages read as ``Message``s (``Message.from_chat``), each plain one (a role and text alone: most of
    a long conversation) made when first read. A library user's 10,000-message conversation met cold has its newest
    few hundred read by the window's walk and its others' fields read by recall's index (``column``): making them all
    was ~10 ms of the call's ~60 ms of CPU, and ~2 ms more of the garbage collector's. A slice (step 1) is a view of
    the same messages: a message made through one is the same object through all (two threads reading one first at
    once may each make one: equal messages, another object for identity's caches). The chats are kept, not copied
    (give copies that nobody changes); those that are not plain are made, and so checked, at once, and a plain one's
    role is checked at once too: a conversation holding a message tda cannot read fails when given, as a list would."""

    __slots__ = ("_items", "_start", "_stop")

    def __init__(self, chats: Sequence[Mapping[str, Any]] = ()) -> None:
        self._items: list[Message | dict[str, Any]] = []
        self._start = self._stop = 0
        self.extend(chats)

    def extend(self, chats: Sequence[Mapping[str, Any]]) -> None:
        """Append ``chats`` (views taken before keep their messages)."""
        if self._stop != len(self._items):
            raise ValueError("only a ChatMessages holding all its messages grows, not a view of part of them")
        self._items += _kept(chats)
        self._stop = len(self._items)

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, at: int) -> Message: ...

    @overload
    def __getitem__(self, at: slice) -> Sequence[Message]: ...

    def __getitem__(self, at: int | slice) -> Message | Sequence[Message]:
        if isinstance(at, slice):
            start, stop, step = at.indices(len(self))
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return self._view(self._start + start, self._start + max(start, stop))
        position = operator.index(at)
        if position < 0:
            position += len(self)
        if not 0 <= position < len(self):
            raise IndexError("ChatMessages index out of range")
        item = self._items[self._start + position]
        if type(item) is dict:
            item = self._items[self._start + position] = Message(item["role"], item["content"])
        return item  # type: ignore[return-value]  # made above when a chat

    def _view(self, start: int, stop: int) -> ChatMessages:
        """The messages from ``start`` to ``stop`` of those this one views."""
        view = ChatMessages.__new__(ChatMessages)
        view._items, view._start, view._stop = self._items, start, stop
        return view

    @property
    def _view_of(self) -> tuple[int, int]:
        return self._start, self._stop

    def __iter__(self) -> Iterator[Message]:
        return map(self.__getitem__, range(len(self)))  # each made as it is reached (a reader may stop early)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ChatMessages) and other._items is self._items and other._view_of == self._view_of:
            return True  # the same messages (as a list compares its items by identity first): none made to compare
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and self._made() == list(other)  # a list's equality: identity first

    __hash__ = None  # type: ignore[assignment]  # compared by its messages, and not immutable (``extend``)

    def column(self, name: str) -> list[Any]:
        """Each message's field ``name``, making none: a plain one's role and content read from its chat, its other
        fields their defaults."""
        items = self._items[self._start : self._stop]
        kinds = set(map(type, items))
        if dict not in kinds:
            return list(map(attrgetter(name), items))
        if name in ("role", "content"):
            if len(kinds) == 1:
                return list(map(itemgetter(name), items))  # type: ignore[arg-type]  # all chats
            return [m[name] if type(m) is dict else getattr(m, name) for m in items]
        default = _DEFAULTS[name]
        if len(kinds) == 1:
            return [default] * len(items)
        return [default if type(m) is dict else getattr(m, name) for m in items]

    def _made(self) -> list[Message]:
        """The view's messages, each made."""
        items = self._items
        for position in range(self._start, self._stop):
            item = items[position]
            if type(item) is dict:
                items[position] = Message(item["role"], item["content"])
        return items[self._start : self._stop]  # type: ignore[return-value]  # all made


def _kept(chats: Sequence[Mapping[str, Any]]) -> list[Message | dict[str, Any]]:
    """``chats`` as ``ChatMessages`` holds them: a plain one (a ``dict`` of a valid role and text alone) as it is, any
    other made. Each test is read in C (a long conversation is plain but for a few tool calls and results)."""
    if set(map(type, chats)) != {dict}:
        return [chat if _plain(chat) else Message.from_chat(chat) for chat in chats]
    dicts = cast(list[dict[str, Any]], list(chats))
    found: tuple[tuple[list[Any], Any], ...] = (  # per message, with what a plain one has
        (list(map(len, dicts)), 2),  # a role and text alone
        (list(map(type, map(dict.get, dicts, repeat("content")))), str),  # text (not parts, nor None)
        (list(map(ROLES.__contains__, map(dict.get, dicts, repeat("role")))), True),  # a role tda reads
    )
    odd = {
        at for values, plain in found if values.count(plain) != len(dicts) for at, v in enumerate(values) if v != plain
    }
    kept: list[Message | dict[str, Any]] = list(dicts)
    for position in sorted(odd):  # in order: the first that cannot be read raises, as when all were made
        kept[position] = Message.from_chat(dicts[position])
    return kept


def _plain(chat: Mapping[str, Any]) -> TypeGuard[dict[str, Any]]:
    return type(chat) is dict and len(chat) == 2 and type(chat.get("content")) is str and chat.get("role") in ROLES


def column(messages: Sequence[Message], name: str) -> list[Any]:
    """Each of ``messages``' field ``name`` (of ``ChatMessages``, making none)."""
    return messages.column(name) if isinstance(messages, ChatMessages) else list(map(attrgetter(name), messages))


def followed_by(held: Sequence[Message], more: Sequence[Message]) -> Sequence[Message]:
    """``held`` then ``more``: one view when ``more`` is the ``ChatMessages`` going on where ``held`` ends (nothing made
    nor copied), else a list (``held`` itself, extended, when it is one)."""
    if isinstance(more, ChatMessages):
        if not held:
            return more
        if isinstance(held, ChatMessages) and held._items is more._items and held._stop == more._start:
            return held._view(held._start, more._stop)
    if isinstance(held, list):
        held += more
        return held
    return [*held, *more]


@dataclass(frozen=True, eq=False)
class ToolSchema:
    """A tool in OpenAI function format. Compared by identity, so its JSON is computed once per object."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool | None = None
    """OpenAI's structured-outputs flag for the call's arguments, sent when the client set it."""
    cache_control: Mapping[str, Any] | None = None
    """A prompt-cache mark the client put on the tool (Anthropic's ``cache_control``), sent beside it as litellm
    takes it."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or not isinstance(self.description, str):
            raise ValueError(f"a tool needs a non-empty name and a text description, got {self.name!r}")
        if not isinstance(self.parameters, Mapping):
            raise ValueError(f"tool {self.name}: parameters must be a JSON schema object")
        if self.cache_control is not None and not isinstance(self.cache_control, Mapping):
            raise ValueError(f"tool {self.name}: cache_control must be an object")
        if not _frozen(self.parameters):  # read-only: what is counted is what is sent
            object.__setattr__(self, "parameters", freeze(self.parameters))
        if self.cache_control is not None and not _frozen(self.cache_control):
            object.__setattr__(self, "cache_control", freeze(self.cache_control))

    def to_openai(self) -> dict[str, Any]:
        """The tool as sent: a fresh dict equal to ``json`` (exactly what was counted; the caller may change it)."""
        return marshal.loads(self._wire)

    @cached_property
    def _wire(self) -> bytes:
        # ``json`` parsed once, kept marshalled: a fresh copy per turn from marshal is twice as fast as parsing
        return marshal.dumps(json.loads(self.json))

    @cached_property
    def json(self) -> str:
        """The exact JSON text sent for this tool (as the OpenAI SDK and httpx serialise a request body)."""
        function: dict[str, Any] = {"name": self.name, "description": self.description, "parameters": self.parameters}
        if self.strict is not None:
            function["strict"] = self.strict
        tool: dict[str, Any] = {"type": "function", "function": function}
        if self.cache_control is not None:
            tool["cache_control"] = self.cache_control
        return json.dumps(tool, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_unfrozen)

    @classmethod
    def from_openai(cls, data: Mapping[str, Any]) -> ToolSchema:
        fn = data.get("function", data)
        parameters = fn.get("parameters") or {"type": "object", "properties": {}}
        strict = fn.get("strict")
        cache_control = data.get("cache_control")
        return cls(
            fn["name"],
            fn.get("description") or "",
            parameters,
            strict if isinstance(strict, bool) else None,
            cache_control if isinstance(cache_control, Mapping) else None,
        )


@dataclass(frozen=True, slots=True)
class Document:
    """An uploaded document whose text is already extracted."""

    id: str
    name: str
    text: str
    mime_type: str = "text/plain"


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """A finished turn: what workflow_history summarises and plan_hydration distils."""

    turn: int
    query: str
    plan: str = ""
    answer: str = ""
    outcome: str = "success"
    tokens_in: int = 0
    tokens_out: int = 0
    results: tuple[Mapping[str, Any], ...] = ()
    valid: bool = True
    phase: str | None = None


@dataclass(frozen=True, slots=True)
class Profile:
    id: str
    type: ProfileType = "tool_enabled"
    name: str = ""
    system_prompt: str = "You are a helpful assistant."
    components: tuple[str, ...] = ()
    context_limit: int | None = None
    knowledge_collections: tuple[str, ...] = ()
    system_prompt_mode: SystemPromptMode = "client"
    case_sharing: CaseSharing = "user"
    query_rewrite: bool = False


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    user_id: str = "anonymous"
    messages: Sequence[Message] = ()
    turns: Sequence[TurnRecord] = ()
    documents: Sequence[Document] = ()
    context_limit: int | None = None
    phase: str | None = None
    history: MessageSource | None = None
    """The history read lazily, newest first, in pages (the application's store). When set, it is the history
    and ``messages`` is not read; when not, ``messages`` is (session files, tests)."""
    current_turn: int | None = None
    """The number of the turn being assembled when the application placed it (a chat client's call, whose history
    is the client's and carries no turn numbers); None: the turn after the newest recorded one."""

    def message_source(self) -> MessageSource:
        return self.history if self.history is not None else InMemoryMessages(self.messages)

    @property
    def turn_number(self) -> int:
        """The number of the turn being assembled: 1 for the first (O(1): reads only the newest record)."""
        if self.current_turn is not None:
            return self.current_turn
        last_turn = self.turns[-1].turn if self.turns else 0
        if self.history is not None:
            last_message = self.history.last_turn
        else:
            last_message = self.messages[-1].turn if self.messages else 0
        return max(last_turn, last_message) + 1


# ---------------------------------------------------------------------------------------------
# History as an async, paged source: a turn reads only the newest messages its window can use.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessagePage:
    messages: Sequence[Message]
    """Newest first."""
    older: Any = None
    """Cursor of the next older page; ``None`` when this page holds the oldest message."""


@runtime_checkable
class MessageSource(Protocol):
    """A session's history, paged newest first. ``total`` and ``last_turn`` come with the session's header."""

    @property
    def total(self) -> int:
        """How many messages the history holds, valid or not."""
        ...

    @property
    def last_turn(self) -> int:
        """The turn of the newest message (0 for none)."""
        ...

    async def page(self, cursor: Any, limit: int) -> MessagePage:
        """Up to ``limit`` messages older than ``cursor`` (``None``: from the newest), newest first."""
        ...


# A MessageSource may also have a ``version`` attribute: any value that changes whenever its history changes other
# than by appending (validity, purge, import), so what was read from it before can be trusted while it is equal.


@dataclass(frozen=True, eq=False)
class InMemoryMessages:
    """A MessageSource over a list (session files, tests); the cursor is an index."""

    messages: Sequence[Message] = ()

    @property
    def total(self) -> int:
        return len(self.messages)

    @property
    def last_turn(self) -> int:
        return self.messages[-1].turn if self.messages else 0

    async def page(self, cursor: Any, limit: int) -> MessagePage:
        end = len(self.messages) if cursor is None else int(cursor)
        start = max(0, end - limit)
        return MessagePage(self.messages[start:end][::-1], start if start > 0 else None)


_FROM_SOURCE = object()
"""``JoinedMessages``' cursor past the joined messages: the source's newest page comes next."""


@dataclass(frozen=True, eq=False)
class JoinedMessages:
    """``source`` followed by ``messages``: a session's history as its next call will have it (``ahead_context``).
    The first page is ``messages``, newest first; the source's pages follow."""

    source: MessageSource
    messages: Sequence[Message]

    @property
    def total(self) -> int:
        return self.source.total + len(self.messages)

    @property
    def last_turn(self) -> int:
        return max(self.source.last_turn, *(m.turn for m in self.messages))

    async def page(self, cursor: Any, limit: int) -> MessagePage:
        if cursor is None and self.messages:
            return MessagePage(tuple(reversed(self.messages)), _FROM_SOURCE if self.source.total else None)
        return await self.source.page(None if cursor is _FROM_SOURCE else cursor, limit)


HISTORY_PAGES = (32, 64, 128, 256, 512)
"""Page sizes of a walk, doubling: a short window stops early, a long one needs few reads, and a walk never
reads (and builds) more than about twice the messages it uses."""


async def pages_newest_first(source: MessageSource) -> AsyncGenerator[tuple[int, Sequence[Message]], None]:
    """``(position of the page's first message, messages newest first)`` from the newest page back; a message's
    position is its index in the history counted from the oldest (0), as in a list. Pages are read only as the
    caller walks on: stop early and the older ones are never read. Every walk asks for the same pages, so a
    source that keeps its pages serves a second walk from memory."""
    position, cursor = source.total, None
    for n in itertools.count():
        page = await source.page(cursor, HISTORY_PAGES[min(n, len(HISTORY_PAGES) - 1)])
        if page.messages:
            yield position - 1, page.messages
            position -= len(page.messages)
        if page.older is None or not page.messages:
            return
        cursor = page.older


async def newest_first(source: MessageSource) -> AsyncGenerator[tuple[int, Message], None]:
    """``(position, message)`` from the newest back (see ``pages_newest_first``)."""
    async with aclosing(pages_newest_first(source)) as pages:
        async for first, messages in pages:
            for offset, message in enumerate(messages):
                yield first - offset, message


# ---------------------------------------------------------------------------------------------
# Provider protocols: how data from storage reaches modules without modules importing storage.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Passage:
    """A knowledge chunk with its provenance and retrieval score (higher is better, 0..1)."""

    text: str
    score: float
    document_id: str
    title: str = ""
    section: str = ""
    page: int | None = None
    chunk_index: int = 0
    collection: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ChampionCase:
    """A past successful turn served as a few-shot example."""

    id: str
    query: str
    score: float
    plan: str = ""
    answer: str = ""
    tokens: int = 0
    feedback: int = 0  # -1 negative, 0 none, +1 positive


class TokenCounter(Protocol):
    """What modules count with (``ctx.tokens``): ``token_estimator.TokenEstimator`` implements it."""

    tools_overhead: int
    """The tool definitions block's fixed cost, paid once any schema is sent."""

    def count(self, text: str) -> int: ...

    def count_message(self, message: Message) -> int: ...

    def count_text_message(self, text: str, role: str = "system") -> int: ...

    def count_tool(self, tool: ToolSchema) -> int: ...

    def count_tools(self, tools: Sequence[ToolSchema]) -> int: ...

    async def warm(self, texts: Iterable[str]) -> None:
        """Count the texts not counted yet, in a worker thread when they are long together: ``count`` then answers
        from the cache, and the event loop was free meanwhile."""


@runtime_checkable
class KnowledgeRetriever(Protocol):
    async def retrieve(
        self, query: str, *, collections: Sequence[str] = (), k: int = 8, min_score: float = 0.0
    ) -> list[Passage]: ...

    async def neighbours(self, passage: Passage, *, before: int, after: int) -> list[Passage]:
        """Chunks of the same document adjacent to ``passage`` by chunk order (for window expansion)."""
        ...


@runtime_checkable
class KnowledgeVocabulary(Protocol):
    """A knowledge retriever that can say which words its collections hold at all: a question naming what no chunk
    mentions asks what the collections cannot answer. Optional: a retriever without it has no such method."""

    async def held_words(self, words: Sequence[str], *, collections: Sequence[str] = ()) -> set[str]:
        """Those of ``words`` some chunk of ``collections`` holds (its title, section or text), each word read as
        the BM25 index reads it (stemmed; a word of several terms needs them all), and an abbreviation (capitals
        only) also when a chunk writes it out word by word ("out of memory" for "OOM")."""
        ...


@dataclass(frozen=True, slots=True)
class SentenceWindow:
    """A sentence a knowledge store's sentence index found for a query, with the sentences around it in its document:
    ``sentences`` are the document's sentences from position ``first`` on, the one found among them."""

    collection: str
    document_id: str
    title: str
    section: str
    chunk_index: int
    """The chunk that holds the sentence found."""
    position: int
    """The sentence found, among its document's sentences (from 0)."""
    first: int
    sentences: tuple[str, ...]
    score: float
    """Its rank fusion's score (higher is better)."""
    similarity: float = 0.0
    """The sentence's cosine similarity to the query alone (the dense signal, before fusion)."""


@runtime_checkable
class SentenceRetriever(Protocol):
    """A knowledge retriever that also searches a sentence index (every sentence embedded alone): sentences found by
    meaning across the corpus, even in a chunk that ranks low. Optional: a retriever without one has no such method."""

    async def sentence_windows(
        self, query: str, *, collections: Sequence[str] = (), k: int = 100, radius: int = 1
    ) -> list[SentenceWindow]:
        """The ``k`` best sentences for ``query``, best first, each with ``radius`` sentences on each side; empty
        when the collections have no sentence index."""
        ...


@runtime_checkable
class CaseRetriever(Protocol):
    async def retrieve_cases(self, query: str, *, k: int = 3) -> list[ChampionCase]: ...


@runtime_checkable
class Embedder(Protocol):
    """Embeds short texts (the knowledge store's embedder): vectors of one length, comparable by cosine. An embedder
    may name what its vectors depend on (its model) as a ``vector_space`` string: vectors cached for one are served
    to any embedder naming the same (``vector_space``); without it, to embedders of the same class."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def vector_space(embedder: Any) -> str:
    """The key an embedder's cached vectors are kept under: its ``vector_space`` (its model) when it names one,
    else its class. Two embedders with different models must not share vectors: name the model."""
    named = getattr(embedder, "vector_space", None)
    return named if isinstance(named, str) and named else type(embedder).__qualname__


@dataclass(frozen=True, slots=True)
class RecalledUnit:
    """An earlier message recalled for the query, whole: one message, or a tool call with its results."""

    position: int
    """Position of its first message in the history (0 = the oldest)."""
    messages: tuple[Message, ...]
    score: float
    """Fused relevance (higher is better; 0 for messages no signal ranked, which come last, newest first)."""
    dated_by: RecalledUnit | None = None
    """The short dated line opening its session ("[2 March 2024] Hey!"), when another message: recalled with it, it
    says when what the unit tells happened ("we moved on Friday")."""


@dataclass(frozen=True)
class RecallRanking:
    units: tuple[RecalledUnit, ...]
    """Best first."""
    method: str
    """The signals used: "lexical", "lexical+dense"."""
    reason: str | None = None
    """Why nothing was recalled (the snapshot shows it)."""
    searched: int = 0
    """How many earlier messages were ranked."""
    pending: int = 0
    """How many messages still wait for their vectors (ranked by words until they are in)."""
    tail: tuple[RecalledUnit, ...] = ()
    """The units ranked next after ``units``, best first, until both hold about the ``tail_tokens`` asked for: a
    window packs them only in the room ``units`` leave (empty when nothing ranks: an abstention adds nothing). With
    ``tail_room``, only those that may fit the room it gave."""


@dataclass(frozen=True, slots=True)
class RecallLead:
    """How much better the best message before a split matches a query than the best one from the split on (the
    messages a window shows anyway): is anything older worth recalling?"""

    dense: float | None
    """Best cosine before the split minus best cosine after it (None without vectors, or not scored: see
    ``lexical``)."""
    lexical: float | None
    """Best BM25 score before the split over the best after it (``inf`` when only older messages match; 0 when
    none does). None: the older messages were not scored, as the query goes on with the newest questions
    (``continuity`` reached the ``continues_from`` the lead was asked with)."""
    continuity: float | None = None
    """Best cosine of the query with the newest few user messages (None without vectors): high when the question
    goes on with the conversation, low when it turns to something else."""


@runtime_checkable
class HistoryQuestion(Protocol):
    """A query asked of one session's earlier messages (``HistoryRecall.ask``): the history brought up to date and
    the query read once, then asked for as many leads and rankings as a turn's windows need (the allocation's and the
    fill's, a condensed one's: each another split or room)."""

    async def recall(
        self,
        *,
        before: int,
        enough_tokens: int,
        tail_tokens: int = 0,
        tail_room: Callable[[tuple[RecalledUnit, ...]], int] | None = None,
    ) -> RecallRanking:
        """Whole units of the session's valid, visible messages before position ``before``, best first, until they
        hold about ``enough_tokens`` tokens or none are left; the units ranked after them until about
        ``tail_tokens`` in all as the ranking's ``tail``. ``tail_room``, called with those best units once they are
        collected (in the step that ranks, nothing changing the index meanwhile), says the tokens they leave (the
        caller packs them in it): the tail then holds only the units whose characters may fit there
        (``fitting.LIKELY_CHARS_PER_TOKEN`` a token; none when it is 0), and the rest are never made."""
        ...

    async def lead(self, *, split: int, continues_from: float | None = None) -> RecallLead:
        """How the messages before position ``split`` outrank those from ``split`` on; when its ``continuity``
        reaches ``continues_from``, that alone (the older messages are not scored)."""
        ...


@runtime_checkable
class HistoryRecall(Protocol):
    """Searches a session's own earlier messages by relevance (``recall.messages.SessionRecall`` implements it over
    the relevance engine; the application may keep the index as it records messages)."""

    async def ask(self, session: Session, query: str) -> HistoryQuestion:
        """``query`` asked of ``session``'s history as it is now: what the leads and rankings of one assembly read.
        This is what may take long (a long history met cold is read and indexed first)."""
        ...


D = TypeVar("D")
"""What a module makes of an earlier turn to search it (``EarlierTurns.described``)."""


@runtime_checkable
class EarlierTurns(Protocol):
    """One session's valid turns older than those in ``Session.turns``, which the phase it is in may see. A service
    hands modules its newest turns only (reading every turn's results each turn would cost more than the turn); it
    keeps what modules search of the older ones, made once per turn as they are recorded, and reads a turn's whole
    record only when it is recalled. Bound to its session by the application: a module cannot name another."""

    async def described(
        self, kind: str, describe: Callable[[TurnRecord], D], *, before: int
    ) -> Sequence[tuple[int, D]]:
        """``(turn number, describe(turn))`` of each valid, visible turn numbered below ``before``, oldest first, but
        those ``describe`` made ``None`` of (nothing to search) (read-only: the service's is a ``grown.Numbered`` the
        next turn's list extends).
        ``describe`` (pure: the same turn, the same description; the same function on every call, a module-level
        one) runs once per turn and ``kind``, and what it made is kept."""
        ...

    async def records(self, turns: Sequence[int]) -> list[TurnRecord]:
        """The whole records of these turns (one read), oldest first; those no longer valid or visible left out."""
        ...


@runtime_checkable
class Summarizer(Protocol):
    """A model that writes short texts for modules (summaries, query rewrites). Each call is a model call the
    turn pays for: the orchestrator meters it (``metering.py``) and the snapshot lists it."""

    async def summarize(self, text: str, *, max_tokens: int, instruction: str = "") -> str:
        """The reply, at most ``max_tokens`` tokens long."""
        ...


# ---------------------------------------------------------------------------------------------
# What the orchestrator hands a module, and what the module hands back.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Directives:
    """Per-module instructions set by the orchestrator (from the window type and fired adjustments)."""

    force_full: bool = False
    condense_strategy: str | None = None
    condense_to: int | None = None
    """Set when a condense rule applies: a contribution above this many tokens is then condensed to it (with
    ``condense_strategy``). A module that can build that condensed result directly may return it at once,
    marked ``condensed``: a long history is then not read twice as deep as it is sent."""
    config: Mapping[str, Any] = field(default_factory=dict)
    options: Any = None
    """``config`` validated by the module's ``options_model`` (an instance of it; ``None`` if undeclared)."""
    loop_spare: int = 0
    """Set when the orchestrator fills a window a tool loop may follow (tools offered, or a loop under way): tokens
    of the room asked for that the module may leave unused, the window still full enough (see the handler's
    ``FULL_WINDOW_PCT``). A module keeping room for the turn's later steps (their calls and results) sends the same
    part on every step of the turn; conversation_history keeps room for a loop like the newest turn's. 0: fill."""


@dataclass(frozen=True)
class AssemblyContext:
    """Everything one assembly reads. Built by the application (or a test) and treated as read-only."""

    query: str
    profile: Profile
    session: Session
    model: str = "gpt-4o"
    tools: Sequence[ToolSchema] = ()
    knowledge: KnowledgeRetriever | None = None
    cases: CaseRetriever | None = None
    summarizer: Summarizer | None = None
    embedder: Embedder | None = None
    """Optional: lets modules rank by meaning as well as by words (tool_definitions ranks tools with it)."""
    history_recall: HistoryRecall | None = None
    """Optional: recalls older history by relevance (conversation_history). ``None``: the module indexes the history
    itself at first use (a library call, ``tda assemble``)."""
    earlier_turns: EarlierTurns | None = None
    """Optional: the session's turns older than ``session.turns`` (plan_hydration and workflow_history recall from
    them too). ``None``: ``session.turns`` holds every turn (a library call, a session file)."""
    model_limit: int | None = None
    """Known input limit of the model; ``None`` means the orchestrator resolves it."""
    offload: Runner | None = None
    """Optional: runs a module's step whose work grows with the history's size off the event loop (the service hands
    its worker threads, ``offload.py``). ``None``: in place (a library call, a test)."""
    query_message: Message | None = None
    """The user message that asks ``query`` as the client sent it (its name, image parts): sent as it is.
    ``None``: a plain user message with ``query`` as its text."""
    tools_as_sent: bool = False
    """``tools`` are a chat client's own: sent whole with the query, as part of the floor (never ranked,
    condensed or listed by name, and the same on every step of the turn)."""
    instructions: Sequence[Message] = ()
    """A chat client's own system (and developer) messages from the top of its conversation, as sent. The
    system_prompt module combines them with the profile's prompt as ``profile.system_prompt_mode`` says."""
    continuation: Sequence[Message] = ()
    """The current turn's tool loop so far (assistant ``tool_calls``, then the ``tool`` results answering
    them), sent right after the query and never dropped: the model continues the turn with the results."""
    extras: Mapping[str, Any] = field(default_factory=dict)
    """Free-form inputs for third-party modules (e.g. ``component_instructions`` texts)."""
    directives: Directives = field(default_factory=Directives)
    tokens: TokenCounter | None = None
    """Set by the orchestrator: the estimator whose counts the budget is enforced with."""
    memo: dict[Hashable, Any] = field(default_factory=dict)
    """This module's scratch space for this one assembly (shared by its ``signals``, ``contribute`` and
    ``condense`` calls, fresh for the next assembly): what is fetched once per turn lives here, so nothing
    from an earlier assembly can leak into a later one."""

    def for_module(
        self,
        directives: Directives,
        tokens: TokenCounter,
        memo: dict[Hashable, Any] | None = None,
        summarizer: Summarizer | None = None,
    ) -> AssemblyContext:
        """What one module is handed; ``summarizer`` (if given) replaces the context's: the metered one."""
        changes: dict[str, Any] = {"directives": directives, "tokens": tokens, "memo": {} if memo is None else memo}
        if summarizer is not None:
            changes["summarizer"] = summarizer
        return _evolve(self, **changes)

    def read_only(self) -> AssemblyContext:
        """This context with nothing a module could change for the others: mutable sequences become
        tuples and ``extras`` a frozen copy (messages, tools and records are frozen themselves)."""
        session = self.session
        changed: dict[str, Any] = {
            name: tuple(value)
            for name in ("messages", "turns", "documents")
            if isinstance(value := getattr(session, name), MutableSequence)
        }
        if changed:
            session = replace(session, **changed)
        return _evolve(
            self,
            session=session,
            tools=tuple(self.tools) if isinstance(self.tools, MutableSequence) else self.tools,
            continuation=tuple(self.continuation),
            instructions=tuple(self.instructions),
            extras=self.extras if _frozen(self.extras) else freeze(self.extras),
        )


def _evolve(obj: Any, **changes: Any) -> Any:
    """A copy of a frozen (non-slots) dataclass with ``changes``: ``dataclasses.replace`` without
    re-running ``__init__``, which matters on the per-turn hot path. Only for already-validated fields."""
    unknown = changes.keys() - obj.__dataclass_fields__.keys()
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no fields {sorted(unknown)}")
    clone = object.__new__(type(obj))
    clone.__dict__.update(obj.__dict__)
    clone.__dict__.update(changes)
    return clone


Unit = tuple[Any, ...]
"""The smallest piece of a contribution that can be dropped: a text block or a group of messages."""


@dataclass(frozen=True)
class Contribution:
    """What a module puts into the window.

    ``units`` are the droppable pieces in keep-order (the first unit is the last one dropped when
    the orchestrator must trim); each unit is a tuple of ``str`` blocks, ``Message`` s or
    ``ToolSchema`` s. The orchestrator counts tokens of the exact text sent, so ``tokens`` is set
    by it (modules may pre-count with ``ctx.tokens``; the cache makes the recount free).
    """

    module_id: str
    units: tuple[Unit, ...] = ()
    placement: Placement = "context"
    strategy: str = "full"
    metadata: Mapping[str, Any] = field(default_factory=dict)
    header: str = ""
    """Optional heading put before text units (counted with them)."""
    trim_from: Literal["start", "end"] = "end"
    """Which end loses units first when the orchestrator trims (history drops its oldest: "start")."""
    joiner: str = "\n\n"
    """What separates text units in ``text()`` (a blank line; a newline suits lists)."""
    volatile_tail: int = 0
    """How many of the last units change from turn to turn (recalled history): the window's stable part, which a
    provider's prompt cache reuses, ends before them."""
    held_back: int = 0
    """Tokens the module left unused on purpose within its budget (history keeping its start on a cache block):
    the surplus pass counts them as used, so a module that keeps its prefix stable is not refused a grant for it
    (and does not swing between two windows from turn to turn)."""
    condensed: bool = False
    """Already condensed as ``ctx.directives.condense_to`` asked (the orchestrator records the condensation)."""
    left_out: bool = False
    """The module left content out for want of room (history older than its window): room no module took is
    offered to it at the end of the assembly (the handler's fill pass), so the window is not sent half empty. A
    surplus granted to it is offered there too, with the rest: it is not asked again in the surplus pass."""
    tokens: int = 0

    @property
    def is_empty(self) -> bool:
        return not self.units

    def replace(self, **changes: Any) -> Contribution:
        return _evolve(self, **changes)

    def texts(self) -> list[str]:
        return [x for unit in self.units for x in unit if isinstance(x, str)]

    def messages(self) -> list[Message]:
        return [x for unit in self.units for x in unit if isinstance(x, Message)]

    def tool_schemas(self) -> list[ToolSchema]:
        return [x for unit in self.units for x in unit if isinstance(x, ToolSchema)]

    def text(self) -> str:
        """The text block as sent: the header, then the text units separated by ``joiner``."""
        return joined(self.header, self.texts(), self.joiner)


def joined(header: str, blocks: Sequence[str], joiner: str = "\n\n") -> str:
    """The text sent for ``blocks`` under ``header`` (what ``Contribution.text`` returns): no header without a body."""
    body = joiner.join(blocks)
    return f"{header}\n{body}" if header and body else body


def text_contribution(module_id: str, blocks: Sequence[str], **kw: Any) -> Contribution:
    return Contribution(module_id=module_id, units=tuple((b,) for b in blocks if b), **kw)


class ContextModule(ABC):
    """A contributor to the context window. Subclass it in a module folder's ``handler.py``."""

    options_model: ClassVar[type[BaseModel] | None] = None
    """The options a window type's slot may set (its ``config``), as a pydantic model (subclass
    ``options.ModuleOptions``): checked when a type is saved, shown by the type editor, and handed to the
    module validated as ``ctx.directives.options``. ``None``: undeclared, any keys pass unchecked."""

    def __init__(self, manifest: ModuleManifest) -> None:
        self.manifest = manifest

    @property
    def module_id(self) -> str:
        return self.manifest.module_id

    def applies_to(self, profile_type: str) -> bool:
        return profile_type in self.manifest.applicability.profile_types

    async def signals(self, ctx: AssemblyContext) -> dict[str, Any]:
        """Facts needed before allocation (e.g. RAG's ``top_score``). Default: none."""
        return {}

    @abstractmethod
    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        """Return content that fits in ``budget`` tokens (as counted by ``ctx.tokens``)."""

    async def condense(self, contribution: Contribution, target_tokens: int, ctx: AssemblyContext) -> Contribution:
        """Return a smaller version of ``contribution``, ideally within ``target_tokens``.

        The default re-contributes with the smaller budget, which is right for most modules.
        """
        return await self.contribute(target_tokens, ctx)

    async def fallback(self, budget: int, ctx: AssemblyContext) -> Contribution | None:
        """What to send in place of a ``contribute()`` that failed or timed out, within ``budget`` (None, the default:
        nothing; the budget goes to the others). Only the part the window must not lose, made the plainest way: no
        model call, no index or anything else to wait for (it runs under the same timeout, after the failure).
        ``ctx.memo`` is a fresh one: the failed call's may hold work stopped halfway. conversation_history sends
        its newest messages, so a loaded server still sends the turn and what led to it."""
        return None

    def ahead(self, ctx: AssemblyContext) -> Coroutine[Any, Any, None] | None:
        """Work the session's next turn will need, to be done before it comes (None: none). Beside a session's call
        (once its turn is answered, and while a tool loop's step is), the handler hands the next turn's context as
        far as it is known (``ahead_context``: the history with the turn joined, no question yet) and runs what this
        returns in the background. The next window must be the same whether the work is done, under way or was never
        made: keep what it makes by content (a wrong guess then costs only the work), and never write what the
        guessed history holds anywhere a window reads it by session (a recall index)."""
        return None

    async def purge(self, session_id: str, user_id: str) -> dict[str, Any]:
        """Forget what this module cached for a session. Returns what was purged."""
        return {"purged": 0}

    def get_status(self) -> dict[str, Any]:
        return {"module_id": self.module_id, "version": self.manifest.version, "healthy": True}
