"""No hidden model calls: a client call makes one model call unless the profile asks for query rewriting; then
the rewrite is one more call, bounded, listed in the snapshot and counted in the turn's usage.

Calls are counted at the litellm boundary (``litellm.acompletion``, wrapped): each goes on through litellm's
real path with a scripted ``mock_response`` whose usage is litellm's own token count of what was sent."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from components.context_window.base import AssemblyContext, Message, Passage, Profile, Session
from components.context_window.handler import ContextWindowHandler
from components.context_window.module_registry import ModuleRegistry
from tda.app import create_app
from tda.config import Settings
from tda.knowledge.ingest import ingest_paths
from tda.knowledge.store import KnowledgeStore
from tda.llm import LLM, LLMSummarizer, _litellm
from tests.modules_builtin.test_knowledge_context import FakeKnowledge, make_module
from tests.support import wtype

HANDBOOK = """# Field handbook

## Refunds

Refunds for heliotrope kettles are granted within forty-five days of delivery, after an inspection
at the Ostrava depot. Keep the original receipt.
"""
EARLIER = [
    {"role": "user", "content": "What does the handbook say about heliotrope kettles?"},
    {"role": "assistant", "content": "It covers their refunds and the inspection at the depot."},
]
FOLLOW_UP = {"role": "user", "content": "And how many days do I have?"}
REWRITE = "refund period in days for heliotrope kettles"
ANSWER = "Forty-five days, after an inspection."
REWRITE_OUT, ANSWER_OUT = 6, 7
TOOL = {"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object", "properties": {}}}}


class Upstream:
    """Wraps ``litellm.acompletion``: keeps every call, replies through litellm's mock with a known usage."""

    def __init__(self, litellm: Any) -> None:
        self.litellm = litellm
        self.original = litellm.acompletion
        self.calls: list[dict[str, Any]] = []
        self.usages: list[tuple[int, int]] = []
        self.tool_call_next = False

    async def acompletion(self, **kwargs: Any) -> Any:
        from litellm import ModelResponse

        self.calls.append(kwargs)
        rewrite = "standalone search query" in str(kwargs["messages"][0]["content"])
        usage = (self.litellm.token_counter(model=kwargs["model"], messages=kwargs["messages"]), ANSWER_OUT)
        message: dict[str, Any] = {"role": "assistant", "content": ANSWER}
        if rewrite:
            usage, message = (usage[0], REWRITE_OUT), {"role": "assistant", "content": REWRITE}
        elif self.tool_call_next:
            self.tool_call_next = False
            call = {"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": "{}"}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        self.usages.append(usage)
        finish = "tool_calls" if "tool_calls" in message else "stop"
        reply = ModelResponse(
            choices=[{"index": 0, "finish_reason": finish, "message": message}],
            usage={"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
        )
        return await self.original(**kwargs, mock_response=reply)

    def is_rewrite(self, i: int) -> bool:
        return "standalone search query" in str(self.calls[i]["messages"][0]["content"])


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Upstream:
    litellm = _litellm()
    fake = Upstream(litellm)
    monkeypatch.setattr(litellm, "acompletion", fake.acompletion)
    return fake


@pytest.fixture
def handbook(settings: Settings, tmp_path: Path) -> str:
    path = tmp_path / "handbook.md"
    path.write_text(HANDBOOK)
    store = KnowledgeStore.open(settings.data_dir, embedder="hashing")
    try:
        assert ingest_paths(store, [path], "handbook", base=tmp_path).chunks > 0
    finally:
        store.close()
    return "handbook"


@pytest.fixture
async def gateway(handbook: str, settings: Settings, upstream: Upstream) -> AsyncIterator[Any]:
    """The app on a real (not mocked) LLM whose provider is the wrapped litellm, and a knowledge profile."""
    app = create_app(settings, llm=LLM(mock=False), migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as running:
        client = running.test_client()
        token, _ = await running.app.extensions["tda"].store.tokens.create("test-admin", "admin")
        headers = {"Authorization": f"Bearer {token}", "X-TDA-Profile": "librarian", "X-TDA-Session": "s1"}
        profile = {
            "id": "librarian",
            "type": "tool_enabled",
            "context_window_type_id": "knowledge_heavy",
            "knowledge_collections": [handbook],
            "system_prompt": "Answer from the knowledge base.",
        }
        r = await client.post("/v1/profiles", json=profile, headers=headers)
        assert r.status_code == 201, await r.get_json()
        yield client, headers


async def chat(client: Any, headers: dict[str, str], messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    r = await client.post("/v1/chat/completions", json={"model": "tda", "messages": messages, **extra}, headers=headers)
    assert r.status_code == 200, await r.get_json()
    body = await r.get_json()
    snapshot = await client.get(f"/v1/snapshots/{r.headers['X-TDA-Snapshot']}", headers=headers)
    body["snapshot"] = (await snapshot.get_json())["snapshot"]
    return body


def knowledge(snapshot: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in snapshot["modules"] if m["module_id"] == "knowledge_context")


async def test_without_query_rewrite_each_client_call_is_one_model_call(gateway, upstream: Upstream):
    client, headers = gateway
    first = await chat(client, headers, [*EARLIER, FOLLOW_UP])
    assert len(upstream.calls) == 1 and not upstream.is_rewrite(0)
    assert knowledge(first["snapshot"])["metadata"]["retrieval_query"] == FOLLOW_UP["content"]
    assert first["snapshot"]["auxiliary_calls"] == []
    prompt, completion = upstream.usages[0]
    assert first["usage"].pop("tda")["messages_cut"] == 0  # the whole conversation was sent (docs/agents.md)
    assert first["usage"] == {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }

    later = [*EARLIER, FOLLOW_UP, {"role": "assistant", "content": ANSWER}, {"role": "user", "content": "And abroad?"}]
    await chat(client, headers, later)
    assert len(upstream.calls) == 2 and not upstream.is_rewrite(1)


async def test_with_query_rewrite_the_rewrite_is_one_bounded_call_in_the_snapshot_and_the_usage(
    gateway, upstream: Upstream
):
    client, headers = gateway
    r = await client.patch("/v1/profiles/librarian", json={"query_rewrite": True}, headers=headers)
    assert r.status_code == 200, await r.get_json()
    body = await chat(client, headers, [*EARLIER, FOLLOW_UP])

    assert [upstream.is_rewrite(i) for i in range(len(upstream.calls))] == [True, False]
    rewrite_call = upstream.calls[0]
    assert rewrite_call["max_tokens"] == 64 and FOLLOW_UP["content"] in rewrite_call["messages"][0]["content"]
    # Its result is used (it was thrown away when the call failed on litellm's context variable).
    assert knowledge(body["snapshot"])["metadata"]["retrieval_query"] == REWRITE
    (rewrite_in, rewrite_out), (answer_in, answer_out) = upstream.usages
    [listed] = body["snapshot"]["auxiliary_calls"]
    assert {k: listed[k] for k in ("module_id", "purpose", "model", "tokens_in", "tokens_out", "max_tokens")} == {
        "module_id": "knowledge_context",
        "purpose": "query_rewrite",
        "model": "gpt-4o",
        "tokens_in": rewrite_in,
        "tokens_out": rewrite_out,
        "max_tokens": 64,
    }
    assert listed["status"] == "ok" and not listed["estimated"] and listed["ms"] > 0
    assert body["usage"].pop("tda")["messages_cut"] == 0
    assert body["usage"] == {
        "prompt_tokens": rewrite_in + answer_in,
        "completion_tokens": rewrite_out + answer_out,
        "total_tokens": rewrite_in + answer_in + rewrite_out + answer_out,
    }
    turns = await (await client.get("/v1/sessions/s1/turns", headers=headers)).get_json()
    newest = max(turns["turns"], key=lambda t: t["turn"])
    assert (newest["tokens_in"], newest["tokens_out"]) == (rewrite_in + answer_in, rewrite_out + answer_out)
    metrics = (await (await client.get("/metrics")).get_data()).decode()
    assert 'tda_auxiliary_model_calls_total{module="knowledge_context",purpose="query_rewrite",status="ok"}' in metrics


async def test_a_tool_loop_step_makes_no_second_rewrite_and_searches_with_the_turns(gateway, upstream: Upstream):
    client, headers = gateway
    r = await client.patch("/v1/profiles/librarian", json={"query_rewrite": True}, headers=headers)
    assert r.status_code == 200, await r.get_json()
    upstream.tool_call_next = True
    asked = await chat(client, headers, [*EARLIER, FOLLOW_UP], tools=[TOOL])
    assert asked["choices"][0]["finish_reason"] == "tool_calls" and len(upstream.calls) == 2

    result = {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"order": 7})}
    step = await chat(client, headers, [*EARLIER, FOLLOW_UP, asked["choices"][0]["message"], result], tools=[TOOL])
    assert len(upstream.calls) == 3 and not upstream.is_rewrite(2)  # the answer's call only
    assert step["snapshot"]["auxiliary_calls"] == []
    assert knowledge(step["snapshot"])["metadata"]["retrieval_query"] == REWRITE


async def test_a_summary_call_inside_an_assembly_returns_its_reply(upstream: Upstream):
    """The context-variable bug, at the assembly: the module's first step ran inline, the rest in a task, so the
    reset of litellm's ``is_internal_call`` failed and the reply was thrown away."""
    module = make_module()
    ctx = AssemblyContext(
        query=FOLLOW_UP["content"],
        profile=Profile(id="p", knowledge_collections=("kb",), query_rewrite=True),
        session=Session(id="s", messages=[Message(m["role"], m["content"], turn=1) for m in EARLIER]),
        knowledge=FakeKnowledge([Passage("Forty-five days.", 0.9, "d", collection="kb")]),
        summarizer=LLMSummarizer(LLM(mock=False), "gpt-4o"),
    )
    handler = ContextWindowHandler(ModuleRegistry.from_modules([module]), timeout_s=10)
    assembled = await handler.assemble(ctx, wtype({"knowledge_context": (50, 0, 100, 50)}))
    usage = assembled.snapshot.module("knowledge_context")
    assert usage.status == "ok" and usage.metadata["retrieval_query"] == REWRITE
    assert [c.status for c in assembled.snapshot.auxiliary_calls] == ["ok"]
