"""Provider context features: what a client asks of its provider's own context management (issue 34, item 2).

Each is sent on where the upstream has it, else done by tda with its own equivalent; either way the snapshot says
which (``provider_features``: one entry per field, ``by`` "upstream", "tda" or "litellm", and what was done), so
nothing a client sends is dropped without a word.

- Responses ``context_management`` (``[{"type": "compaction", "compact_threshold": N}]``): tda calls its upstream
  in chat-completions form, which has no compaction, so the window is assembled within N tokens (the profile's type
  condenses the conversation to fit): tda's condensation is its compaction.
- Responses ``compaction`` input items: OpenAI's encrypted summary of earlier items, readable only by OpenAI's
  Responses API, which tda does not call: kept out of the window, each named in the trace.
- Responses ``truncation``: ``auto`` (and, unlike OpenAI, no value) = tda's budgeting; ``disabled`` = a request the
  window would cut is a 400 ``context_length_exceeded``, as OpenAI answers one over the model's window.
- A parameter litellm sends no field of (a provider without it, or one litellm translates into another field): the
  trace names it (``by`` "litellm"), found from the request litellm would build (``llm.unsent_params``).
- Anthropic ``context_management`` edits (``/v1/messages``): forwarded to Claude at Anthropic's API (which applies
  them and reports ``applied_edits``); at any other upstream tda applies them: ``clear_tool_uses_20250919`` with
  its settings (``tool_results.clearing.keep_recent``), ``clear_thinking_20251015`` keeping the newest N thinking turns,
  ``compact_20260112`` as the window's limit (its trigger), and reports what it did as Anthropic does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from components.context_window.base import Message
from components.context_window.token_estimator import estimator_for
from components.context_window.tool_results.clearing import KeepRecent, keep_recent

from .client_call import ClientCall, ContextFeatures
from .errors import Invalid, ServiceError
from .llm import EXPLICIT_CACHING, routes_of, unsent_params

if TYPE_CHECKING:
    from .models import ProfileRow
    from .service import TDAService


LITELLM = version("litellm")


class ContextTooLong(ServiceError):
    """400, as OpenAI answers an input over the model's window when truncation is disabled."""

    status, code = 400, "context_length_exceeded"


FEATURES_HEADER = "X-TDA-Features"
"""The response header naming each provider feature handled and by whom (the snapshot's ``provider_features`` in
short, for a stateless call too): ``context_management=tda, thinking=litellm``."""


def features_header(call: ClientCall) -> dict[str, str]:
    handled = call.features.handled
    return {FEATURES_HEADER: ", ".join(f"{h['field']}={h['by']}" for h in handled)} if handled else {}


def invalid(loc: str, msg: str) -> Invalid:
    return Invalid(f"{loc}: {msg}", errors=[{"loc": loc, "msg": msg, "type": "value_error"}], param=loc)


async def with_unsent_traced(svc: TDAService, call: ClientCall, profile: ProfileRow) -> ClientCall:
    """``call`` with the trace naming each of its parameters litellm sends the model's provider no field of."""
    model = call.model or profile.model or svc.settings.model
    provider, routed, unsent = await unsent_params(model, call.params, svc.llm.upstream.merged(profile.upstream))
    features = call.features
    for name in unsent:
        note = (
            f"litellm {LITELLM} sends {provider} ({routed}) no {name!r} field: its API has no such parameter for "
            "this model, or litellm translates it into another field"
        )
        features = features.noting(name, "litellm", note)
    return dataclasses.replace(call, features=features) if unsent else call


# --- the Responses API ------------------------------------------------------------------------------


def compaction_threshold(entries: Any) -> int | None:
    """The ``compact_threshold`` of Responses' ``context_management`` (None: none set), checked."""
    if not isinstance(entries, list):
        raise invalid("context_management", "send a list of entries: [{'type': 'compaction', 'compact_threshold': N}]")
    threshold = None
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or entry.get("type") != "compaction":
            raise invalid(f"context_management.{i}.type", "the one context management entry is {'type': 'compaction'}")
        value = entry.get("compact_threshold")
        if value is not None and (type(value) is not int or value < 1):
            raise invalid(f"context_management.{i}.compact_threshold", "a positive number of tokens, or null")
        threshold = value if threshold is None else min(threshold, value or threshold)
    return threshold


def responses_features(
    context_management: Any, truncation: str | None, compactions: Sequence[tuple[int, Mapping[str, Any]]]
) -> ContextFeatures:
    """The Responses request's context features: ``compactions`` are its compaction items (input index, item)."""
    features = ContextFeatures()
    if truncation is not None:
        if truncation not in ("auto", "disabled"):
            raise invalid("truncation", f"truncation {truncation!r} is not one of auto, disabled")
        features = dataclasses.replace(features, truncation="auto" if truncation == "auto" else "disabled")
        note = (
            "tda's budgeting: the profile's type condenses what does not fit"
            if truncation == "auto"
            else "a request the window would cut is refused (400 context_length_exceeded)"
        )
        features = features.noting("truncation", "tda", note)
    if context_management is not None:
        threshold = compaction_threshold(context_management)
        features = dataclasses.replace(features, context_limit=threshold)
        within = f"within compact_threshold ({threshold:,} tokens)" if threshold else "within the model's window"
        note = f"tda's compaction: the window is assembled {within}, the profile's type condensing the conversation"
        features = features.noting("context_management", "tda", note)
    for index, item in compactions:
        note = (
            f"input.{index}: a compaction item ({item.get('id') or 'no id'}) holds OpenAI's encrypted summary, which "
            "only OpenAI's Responses API reads; tda calls its upstream in chat-completions form: kept out of the window"
        )
        features = features.noting("input.compaction", "tda", note)
    return features


def refuse_cut(cut: Mapping[str, int], model: str) -> None:
    """Truncation ``disabled``: a 400 when the window left out, condensed or cut any of the client's messages."""
    if cut["messages_cut"]:
        raise ContextTooLong(
            f"Your input exceeds the context window of this model: the window tda assembles for {model} would cut "
            f"{cut['messages_cut']} of the input's {cut['messages_received']} items ({cut['tokens_received']:,} "
            "tokens received). Send truncation: 'auto' to let tda condense it, or a shorter input.",
            param="input",
        )


# --- Anthropic's context_management edits ------------------------------------------------------------

TOOL_USES = "clear_tool_uses_20250919"
THINKING = "clear_thinking_20251015"
COMPACT = "compact_20260112"
COMPACT_TRIGGER = 150_000
"""Anthropic's default trigger of ``compact_20260112`` (input tokens)."""


async def anthropic_edits(
    svc: TDAService, call: ClientCall, profile: ProfileRow, context_management: Mapping[str, Any] | None
) -> ClientCall:
    """``call`` with Anthropic's ``context_management`` forwarded (Claude at Anthropic's API, for the model and every
    fallback) or applied by tda (any other upstream), and the snapshot told which."""
    if context_management is None:
        return call
    edits = checked_edits(context_management)
    model = call.model or profile.model or svc.settings.model
    upstream = svc.llm.upstream.merged(profile.upstream)
    if all(provider in EXPLICIT_CACHING for provider, _ in await routes_of(model, upstream)):
        note = "forwarded to Claude at Anthropic's API, which applies the edits and reports them"
        features = dataclasses.replace(call.features, native_edits=True).noting("context_management", "upstream", note)
        return dataclasses.replace(call, features=features)
    return applied_by_tda(call, edits, model)


def applied_by_tda(call: ClientCall, edits: list[dict[str, Any]], model: str) -> ClientCall:
    """``call`` with Anthropic's ``edits`` (checked by ``_edits``) applied by tda, counted with ``model``'s
    tokens: its messages edited, ``context_management`` no longer among the parameters, the trace told."""
    messages, features = list(call.messages), call.features
    params = {k: v for k, v in call.params.items() if k != "context_management"}
    tokens = estimator_for(model)
    for i, edit in enumerate(edits):
        applied: dict[str, Any] | None = None
        if edit["type"] == TOOL_USES:
            rule = _keep_recent(edit, f"context_management.edits.{i}")
            kept = keep_recent(messages, rule, tokens.count_message, tokens.count_tools(call.tools))
            messages = list(kept.messages)
            if kept.cleared:
                applied = {"type": TOOL_USES, "cleared_tool_uses": len(kept.cleared)}
                applied["cleared_input_tokens"] = kept.tokens
        elif edit["type"] == THINKING:
            messages, applied = _clear_thinking(messages, edit, f"context_management.edits.{i}", tokens.count_message)
        else:
            loc = f"context_management.edits.{i}.trigger"
            trigger = _value(edit.get("trigger"), "input_tokens", COMPACT_TRIGGER, loc, minimum=1) or COMPACT_TRIGGER
            limits = [n for n in (features.context_limit, trigger) if n]
            features = dataclasses.replace(features, context_limit=min(limits))
        if applied is not None:
            features = dataclasses.replace(features, applied_edits=(*features.applied_edits, applied))
    note = (
        "applied by tda (the upstream is not Claude at Anthropic's API): "
        + "; ".join(_described(edit) for edit in edits)
        + f"; applied: {list(features.applied_edits) or 'none (no trigger reached)'}"
    )
    features = features.noting("context_management", "tda", note)
    return dataclasses.replace(call, messages=messages, params=params, features=features)


def checked_edits(context_management: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The edits of Anthropic's ``context_management``, each of a type tda knows (else a 422 naming it)."""
    edits = context_management.get("edits") if isinstance(context_management, Mapping) else None
    if not isinstance(edits, list) or not all(isinstance(e, dict) for e in edits):
        raise invalid("context_management.edits", "send {'edits': [{'type': 'clear_tool_uses_20250919', ...}, ...]}")
    for i, edit in enumerate(edits):
        if edit.get("type") not in (TOOL_USES, THINKING, COMPACT):
            msg = f"edit type {edit.get('type')!r} is not one of {TOOL_USES}, {THINKING}, {COMPACT}"
            raise invalid(f"context_management.edits.{i}.type", msg)
    return edits


def _value(setting: Any, kind: str, default: int | None, loc: str, *kinds: str, minimum: int = 0) -> int | None:
    """The ``value`` of a ``{"type": kind, "value": N}`` setting (``default`` when not sent)."""
    if setting is None:
        return default
    if not isinstance(setting, Mapping) or setting.get("type") not in (kind, *kinds):
        raise invalid(loc, f"send {{'type': {kind!r}, 'value': N}}")
    value = setting.get("value")
    if type(value) is not int or value < minimum:
        raise invalid(f"{loc}.value", f"a whole number, {minimum} or more")
    return value


def _keep_recent(edit: Mapping[str, Any], loc: str) -> KeepRecent:
    trigger = edit.get("trigger")
    by_uses = isinstance(trigger, Mapping) and trigger.get("type") == "tool_uses"
    count = _value(trigger, "input_tokens", 100_000, f"{loc}.trigger", "tool_uses")
    exclude = edit.get("exclude_tools") or []
    inputs = edit.get("clear_tool_inputs") or False
    if not isinstance(exclude, list) or not all(isinstance(t, str) for t in exclude):
        raise invalid(f"{loc}.exclude_tools", "a list of tool names")
    if not isinstance(inputs, bool) and not (isinstance(inputs, list) and all(isinstance(t, str) for t in inputs)):
        raise invalid(f"{loc}.clear_tool_inputs", "true, false, or a list of tool names")
    return KeepRecent(
        trigger_tokens=None if by_uses else count,
        trigger_tool_uses=count if by_uses else None,
        keep=_value(edit.get("keep"), "tool_uses", 3, f"{loc}.keep") or 0,
        at_least=_value(edit.get("clear_at_least"), "input_tokens", 0, f"{loc}.clear_at_least") or 0,
        exclude=frozenset(exclude),
        inputs=inputs if isinstance(inputs, bool) else frozenset(inputs),
    )


def _clear_thinking(
    messages: list[Message], edit: Mapping[str, Any], loc: str, count: Any
) -> tuple[list[Message], dict[str, Any] | None]:
    """Thinking blocks kept in the newest ``keep`` assistant turns that have them (default 1; "all": every one)."""
    setting = edit.get("keep")
    keep = None if setting == "all" or (isinstance(setting, Mapping) and setting.get("type") == "all") else 1
    if keep is not None:
        keep = _value(setting, "thinking_turns", 1, f"{loc}.keep")
    thinking = [i for i, m in enumerate(messages) if m.role == "assistant" and any(map(_thought, m.parts or ()))]
    cleared = thinking if keep is None or keep == 0 else thinking[: max(0, len(thinking) - keep)]
    if keep is None or not cleared:
        return messages, None
    out, tokens = list(messages), 0
    for i in cleared:
        m = messages[i]
        parts = tuple(p for p in m.parts or () if not _thought(p))
        only_text = all(set(p) == {"type", "text"} for p in parts)
        text = "".join(str(p["text"]) for p in parts) if only_text else m.content
        out[i] = dataclasses.replace(m, content=text, parts=None if only_text else parts, tokens=None)
        tokens += count(m) - count(out[i])
    return out, {"type": THINKING, "cleared_thinking_turns": len(cleared), "cleared_input_tokens": max(0, tokens)}


def _thought(part: Mapping[str, Any]) -> bool:
    return part.get("type") in ("thinking", "redacted_thinking")


def _described(edit: Mapping[str, Any]) -> str:
    if edit["type"] == TOOL_USES:
        return f"{TOOL_USES} by tda's tool-result clearing (older results sent as references, the newest kept)"
    if edit["type"] == THINKING:
        return f"{THINKING}: older thinking blocks left out (a non-Claude model is sent none at all)"
    return f"{COMPACT} as tda's condensation: the window assembled within its trigger"


def response_context_management(call: ClientCall, result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The response's ``context_management`` as Anthropic reports it: the upstream's own when the edits went there
    (None when litellm did not pass it on: a streamed reply's), else what tda applied (None: the client sent none)."""
    features = call.features
    if features.native_edits:
        report = result.get("context_management")
        return dict(report) if report is not None else None
    if any(h["field"] == "context_management" for h in features.handled):
        return {"applied_edits": [dict(e) for e in features.applied_edits]}
    return None
