"""One call of a chat client, as it sent it: what every wire format (chat completions, Responses, Messages) is
translated into before the gateway (``gateway.py``) runs it."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from components.context_window.base import Message, ToolSchema

if TYPE_CHECKING:
    from .llm import Delta


@dataclass(frozen=True)
class ContextFeatures:
    """What a call asked of its provider's context management, and how tda meets it."""

    truncation: Literal["auto", "disabled"] | None = None
    """Responses' ``truncation``; None: not sent (tda's budgeting, as ``auto``)."""
    context_limit: int | None = None
    """A limit the window is assembled within (a compaction threshold); it only lowers the model's."""
    handled: tuple[Mapping[str, Any], ...] = ()
    """The snapshot's ``provider_features``: ``{"field", "by", "note"}`` per field handled."""
    applied_edits: tuple[Mapping[str, Any], ...] = ()
    """The Anthropic edits tda applied, in Anthropic's ``applied_edits`` shape."""
    native_edits: bool = False
    """The Anthropic edits went to the upstream: its own ``context_management`` report is the response's."""

    def noting(self, field: str, by: Literal["upstream", "tda", "litellm"], note: str) -> ContextFeatures:
        return dataclasses.replace(self, handled=(*self.handled, {"field": field, "by": by, "note": note}))


@dataclass(frozen=True)
class ClientCall:
    """One call of a chat client, as it sent it."""

    messages: Sequence[Message]
    tools: Sequence[ToolSchema] = ()
    """The client's tools: the turn's tools (none when it sends none)."""
    tool_choice: Any = None
    model: str | None = None
    """None: the profile's model, else the service's."""
    max_tokens: int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    """Sent to the model as the client set them: temperature, top_p, seed, stop, response_format, n, ..."""
    user: str | None = None
    """The end user the client names (OpenAI's ``user``): the session's user when it creates one."""
    anthropic_beta: str | None = None
    """Anthropic's ``anthropic-beta`` header as the client sent it: sent on to a Claude model's API only."""
    on_delta: Delta | None = None
    on_snapshot: Callable[[int], object] | None = None
    """Told the id of the call's snapshot once it is stored (with a session), while the model answers: a streamed
    Responses API reply names itself by it from its first event."""
    on_window: Callable[[Awaitable[dict[str, Any]]], object] | None = None
    """Told, for each window assembled (a fallback model's is its own), what the reply will say of it before the model
    answers: ``session_id``, ``turn`` and ``cut`` (``gateway.reply_headers`` makes the headers of them), counted while
    the model answers. A streamed reply sends those headers with its first byte."""
    timings: dict[str, float] | None = None
    new_turn: bool = False
    """Record the call as a new turn even when the session saw its conversation: a recorded request sent again
    (else it would be a retry of its turn, adding to that turn's record)."""
    features: ContextFeatures = field(default_factory=ContextFeatures)
    """The provider context features the client asked for and how tda meets them (``tda/context_features.py``)."""
