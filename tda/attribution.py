"""Who contributed each message of an assembled window: the trace, the what-if preview and the OTLP content
attributes name the module behind every message (and tool) sent."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from components.context_window.base import Contribution
from components.context_window.token_estimator import estimator_for

QUERY = "query"
"""The module id given the user's query (no module contributes it)."""


def attribution(assembled: Any, model: str, owners: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
    """For each message of an assembled window, in order: the module that contributed it and its tokens by the
    model's counter. The query is the last user message no module contributed (a chat client's tool loop after it
    is no module's either: ``""``). ``owners`` is consumed (tools are attributed from what is left)."""
    tokens = estimator_for(model)
    owners = owners_of(assembled.contributions.values()) if owners is None else owners
    modules = [take(owners, chat) for chat in assembled.messages]
    unowned_users = [i for i, chat in enumerate(assembled.messages) if chat["role"] == "user" and not modules[i]]
    query = unowned_users[-1] if unowned_users else len(assembled.messages) - 1
    return [
        {"module_id": QUERY if i == query else module, "tokens": tokens.count_chat(chat)}
        for i, (chat, module) in enumerate(zip(assembled.messages, modules, strict=True))
    ]


def _key(item: dict[str, Any]) -> str:
    return json.dumps(item, sort_keys=True, default=str)


def owners_of(contributions: Any) -> dict[str, list[str]]:
    """Each message and tool a contribution renders, by its JSON, to the modules that rendered it (in order)."""
    owners: dict[str, list[str]] = defaultdict(list)
    for c in contributions:
        for item in _rendered(c):
            owners[_key(item)].append(c.module_id)
    return owners


def _rendered(c: Contribution) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [m.to_chat() for m in c.messages()] + [t.to_openai() for t in c.tool_schemas()]
    text = c.text()
    if text:
        out.append({"role": "system", "content": text})
    return out


def take(owners: dict[str, list[str]], item: dict[str, Any]) -> str:
    found = owners.get(_key(item))
    return found.pop(0) if found else ""
