"""Old tool results cleared over HTTP: a type saved with the clearing options, a session with imported tool turns,
one turn to Claude through litellm at a fake Anthropic upstream. What Anthropic receives keeps its pairing rule
(each tool_result answers a tool_use of the assistant message just before it), the cleared results are references,
the part of the one the question needs is recalled after the history, and the snapshot says which."""

from __future__ import annotations

import json
from typing import Any

from tda.builtins import DEFAULT_TYPES
from tests.service.served_app import served
from tests.test_tool_clearing import chat, pairing_errors, result_text


def anthropic_pairing_errors(messages: list[dict[str, Any]]) -> list[str]:
    """Anthropic's rule, written apart from tda: a user message's tool_result blocks answer exactly the tool_use
    blocks of the assistant message right before it."""
    errors = []
    for i, message in enumerate(messages):
        blocks = message["content"] if isinstance(message["content"], list) else []
        results = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
        uses = {b["id"] for b in blocks if b.get("type") == "tool_use"}
        before = messages[i - 1]["content"] if i and isinstance(messages[i - 1]["content"], list) else []
        asked = {b["id"] for b in before if b.get("type") == "tool_use"}
        if results and results != asked:
            errors.append(f"message {i} answers {sorted(results)}, the assistant before asked {sorted(asked)}")
        if uses and not (i + 1 < len(messages) and messages[i + 1]["role"] == "user"):
            errors.append(f"tool_use {sorted(uses)} at {i} has no user message answering it")
    return errors


def text_of(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return str(content)


async def test_a_claude_turn_sends_references_for_old_results_and_recalls_the_one_asked_about(live, upstream):
    wtype = DEFAULT_TYPES["balanced"].model_dump()
    wtype.update(id="clearing", name="Clearing", is_default=False)
    wtype["modules"]["conversation_history"]["config"] = {"clear_tool_results_after_turns": 4}
    history = [{**m.to_chat(), "turn": m.turn} for m in chat(14)]
    async with served(live) as app:
        r = await app.http("POST", "/v1/context-window-types", json=wtype)
        assert r.status_code == 201, r.text
        at = {"base_url": upstream.base_url}
        await app.profile(
            "claude", model="anthropic/claude-3-5-sonnet-20241022", context_window_type_id="clearing", upstream=at
        )
        assert (await app.http("POST", "/v1/sessions", json={"id": "s", "profile_id": "claude"})).status_code == 201
        r = await app.http("POST", "/v1/sessions/s/messages", json={"messages": history})
        assert r.status_code == 201, r.text
        r = await app.http("POST", "/v1/sessions/s/turns", json={"query": "Which carrier shipped order 3017?"})
        assert r.status_code == 201, r.text
    snapshot = r.json()["snapshot"]
    meta = next(m for m in snapshot["modules"] if m["module_id"] == "conversation_history")["metadata"]
    assert [c["turn"] for c in meta["tool_results_cleared"]["results"]] == list(range(1, 9))
    assert [(c["turn"], c["tool"]) for c in meta["tool_results_recalled"]] == [(3, "search_orders")]
    body = upstream.received[-1].body
    assert anthropic_pairing_errors(body["messages"]) == []
    results = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    results = [text_of(b) for b in results if b.get("type") == "tool_result"]
    assert len(results) == 14
    assert all(results[t - 1].endswith("tokens, cleared]") for t in range(1, 9))
    planted = next(line for line in result_text(3).splitlines() if line.startswith("order 3017:"))
    last = body["messages"][-1]  # the recall note and the question: Anthropic's last user turn
    assert last["role"] == "user" and planted in json.dumps(last["content"])
    assert "Which carrier shipped order 3017?" in json.dumps(last["content"])
    assert all(results[t - 1] == result_text(t) for t in range(9, 15))


async def test_a_chat_clients_old_results_are_cleared_by_age_without_turn_numbers(live, upstream):
    """Through /v1/chat/completions (the real openai SDK): the client's messages carry no turn numbers, so age is
    counted in its user messages (batched by position); what the provider receives keeps OpenAI's pairing rule."""
    wtype = DEFAULT_TYPES["balanced"].model_dump()
    wtype.update(id="clearing", name="Clearing", is_default=False)
    wtype["modules"]["conversation_history"]["config"] = {"clear_tool_results_after_turns": 4, "recall_pct": 0}
    conversation = [m.to_chat() for m in chat(14)] + [{"role": "user", "content": "Thanks, anything else?"}]
    async with served(live) as app:
        assert (await app.http("POST", "/v1/context-window-types", json=wtype)).status_code == 201
        at = {"base_url": upstream.base_url}
        await app.profile("agent", model="gpt-4o", context_window_type_id="clearing", upstream=at)
        client = app.sdk(**{"X-TDA-Profile": "agent"})
        await client.chat.completions.create(model="tda", messages=conversation)  # type: ignore[arg-type]
    sent = upstream.received[-1].body["messages"]
    assert pairing_errors(sent) == []
    results = [m["content"] for m in sent if m["role"] == "tool"]
    assert len(results) == 14
    assert all(r.startswith("[result of search_orders, ") and r.endswith(" tokens, cleared]") for r in results[:8])
    assert results[8:] == [result_text(t) for t in range(9, 15)]
