"""Agents on the native API: the tool loop through /turns and /tool-results, component instructions, phase
summaries, the reference's rule form, inactive slots and feedback that sticks, all on live turns."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import litellm
import pytest

from tda.app import create_app
from tda.builtins import DEFAULT_TYPES
from tda.config import Settings
from tests.service.support import LOOKUP_ORDERS as TOOL
from tests.service.support import ScriptedModel


class Agent:
    def __init__(self, client: Any, headers: dict[str, str], model: ScriptedModel, svc: Any) -> None:
        self.client, self.headers, self.model, self.svc = client, headers, model, svc

    async def call(self, method: str, url: str, status: int, body: Any = None, headers: Any = None) -> Any:
        r = await getattr(self.client, method)(url, json=body, headers=headers or self.headers)
        data = await r.get_json()
        assert r.status_code == status, data
        return data

    async def turn(self, query: str, session: str = "s1") -> dict[str, Any]:
        return await self.call("post", f"/v1/sessions/{session}/turns", 201, {"query": query})


@pytest.fixture
async def agent(settings: Settings) -> AsyncIterator[Agent]:
    model = ScriptedModel()
    app = create_app(settings, llm=model.llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as running:
        svc = running.app.extensions["tda"]
        token, _ = await svc.store.tokens.create("test-admin", "admin")
        await svc.knowledge.warm_up()  # as serve does: retrieval must not time out opening Chroma on turn 1
        a = Agent(running.test_client(), {"Authorization": f"Bearer {token}"}, model, svc)
        profile = {"id": "p1", "type": "tool_enabled", "tools": [TOOL], "components": ["charting", "maps"]}
        await a.call("post", "/v1/profiles", 201, profile)
        await a.call("post", "/v1/sessions", 201, {"id": "s1", "profile_id": "p1"})
        yield a


def module(body: dict[str, Any], module_id: str) -> dict[str, Any]:
    return next(m for m in body["snapshot"]["modules"] if m["module_id"] == module_id)


async def test_the_tool_loop_through_turns_and_tool_results(agent: Agent):
    # genie: tools, no champion cases, so the finished turn's case cannot change what a replay retrieves
    await agent.call("patch", "/v1/profiles/p1", 200, {"type": "genie"})
    agent.model.replies = [[("call_1", "lookup_orders", {"customer": "ACME"})], "ACME has 2 open orders."]
    first = await agent.turn("How many open orders does ACME have?")
    assert first["finish_reason"] == "tool_calls" and first["tool_calls"][0]["id"] == "call_1"
    wrong = {"results": [{"tool_call_id": "call_9", "content": "[]"}]}
    error = await agent.call("post", "/v1/sessions/s1/turns/1/tool-results", 422, wrong)
    assert "call_1" in error["message"] and {e["msg"] for e in error["errors"]} == {
        "'call_9' is not a pending call",
        "no result for 'call_1'",
    }
    rows = '[{"order": 7, "status": "open"}, {"order": 9, "status": "open"}]'
    results = {"results": [{"tool_call_id": "call_1", "content": rows}]}
    second = await agent.call("post", "/v1/sessions/s1/turns/1/tool-results", 201, results)
    assert (second["turn"], second["answer"], second["finish_reason"]) == (1, "ACME has 2 open orders.", "stop")
    assert [m["role"] for m in agent.model.sent[1]["messages"][-3:]] == ["user", "assistant", "tool"]
    again = await agent.call("post", "/v1/sessions/s1/turns/1/tool-results", 409, results)
    assert "not waiting for tool results" in again["message"]
    [turn] = (await agent.call("get", "/v1/sessions/s1/turns", 200))["turns"]
    assert turn["results"] == [
        {"tool": "lookup_orders", "rows": [{"order": 7, "status": "open"}, {"order": 9, "status": "open"}]}
    ]
    assert (turn["outcome"], turn["snapshot_id"]) == ("success", second["snapshot_id"])
    messages = (await agent.call("get", "/v1/sessions/s1/messages", 200))["messages"]
    assert [(m["role"], m["tool_call_id"]) for m in messages] == [
        ("user", None),
        ("assistant", None),
        ("tool", "call_1"),
        ("assistant", None),
    ]
    replayed = await agent.call("post", f"/v1/snapshots/{second['snapshot_id']}/replay", 200)
    assert replayed["identical"], replayed["differences"]


async def test_max_tokens_only_where_the_window_needs_it(agent: Agent):
    """None is added while the model's whole output limit fits in what the window leaves; a window smaller than
    that (a profile's context limit) gets the room it leaves, so the answer fits the model's context."""
    roomy = (await agent.turn("hello"))["snapshot"]
    await agent.call("post", "/v1/profiles", 201, {"id": "small", "type": "tool_enabled", "context_limit": 2000})
    await agent.call("post", "/v1/sessions", 201, {"id": "s2", "profile_id": "small"})
    small = (await agent.turn("hello", session="s2"))["snapshot"]

    output_limit = litellm.get_model_info(small["model"])["max_output_tokens"]  # the oracle: litellm's map
    assert roomy["effective_limit"] - roomy["total_used"] >= output_limit
    assert agent.model.sent[0]["max_tokens"] is None
    room = small["effective_limit"] - small["total_used"]
    assert 0 < room < output_limit
    assert agent.model.sent[1]["max_tokens"] == room


async def test_component_instructions_through_the_api_reach_a_live_turn(agent: Agent, viewer: dict[str, str]):
    texts = {"full": "Charts: call render_chart with a Vega-Lite spec; label every axis.", "light": "Label axes."}
    await agent.call("put", "/v1/component-instructions/charting", 403, texts, headers=viewer)
    assert (await agent.call("put", "/v1/component-instructions/charting", 201, texts))["light"] == "Label axes."
    await agent.call("put", "/v1/component-instructions/charting", 200, texts)
    blank = await agent.call("put", "/v1/component-instructions/tables", 422, {"full": " "})
    assert "at least one of full, medium, light" in str(blank)
    listed = await agent.call("get", "/v1/component-instructions", 200, headers=viewer)
    assert [c["component_id"] for c in listed["components"]] == ["charting"]

    body = await agent.turn("Plot revenue by month")
    used = module(body, "component_instructions")
    assert used["used"] > 0 and used["metadata"]["missing"] == ["maps"]
    assert used["metadata"]["intensities"] == {"charting": "full"}
    assert any(texts["full"] in str(m["content"]) for m in agent.model.sent[-1]["messages"])

    await agent.call("delete", "/v1/component-instructions/charting", 204)
    body = await agent.turn("Plot it again")
    assert module(body, "component_instructions")["used"] == 0
    assert module(body, "component_instructions")["metadata"]["missing"] == ["charting", "maps"]


async def test_a_forward_phase_change_carries_a_summary_into_the_next_turn(agent: Agent):
    await agent.call("patch", "/v1/sessions/s1", 200, {"phase": "ideate"})
    agent.model.replies = ["Three options: rail, road, sea."]
    await agent.turn("Brainstorm ways to ship kettles to Ostrava")
    moved = await agent.call("patch", "/v1/sessions/s1", 200, {"phase": "focus"})
    assert moved["phase"] == "focus"
    assert moved["carried"].startswith("[Summary carried from the ideate phase into focus]")
    assert "Brainstorm ways to ship kettles" in moved["carried"] and "Three options" in moved["carried"]
    await agent.turn("Pick the cheapest")
    assert any(moved["carried"] == m["content"] for m in agent.model.sent[-1]["messages"])
    back = await agent.call("patch", "/v1/sessions/s1", 200, {"phase": "ideate"})
    assert back["carried"] is None  # going back carries nothing: the earlier phase must not see later work
    told = await agent.call("patch", "/v1/sessions/s1", 200, {"phase": "operate", "phase_summary": "Ship by rail."})
    assert told["carried"].endswith("Ship by rail.")


async def test_the_reference_rule_form_is_accepted_by_the_types_api(agent: Agent):
    body = DEFAULT_TYPES["balanced"].model_dump() | {"id": "reference", "name": "Reference", "is_default": False}
    body["dynamic_adjustments"] = [
        {"condition": "high_confidence_rag", "action": {"reduce": "tool_definitions", "by_pct": 50}},
        {
            "condition": "no_documents_attached",
            "action": {"transfer": "document_context", "to": "conversation_history"},
        },
    ]
    created = await agent.call("post", "/v1/context-window-types", 201, body)
    stored = created.get("type", created)["dynamic_adjustments"]
    assert stored[0] == {
        "condition": {"type": "high_confidence_rag", "threshold": 0.85},
        "action": {"type": "reduce", "module": "tool_definitions", "by_pct": 50.0},
    }
    assert stored[1]["action"] == {"type": "transfer", "module": "document_context", "to": "conversation_history"}


async def test_an_inactive_slot_frees_its_share_on_a_live_turn(agent: Agent):
    body = DEFAULT_TYPES["balanced"].model_dump() | {"id": "no-rag", "name": "No RAG", "is_default": False}
    body["modules"]["rag_context"]["active"] = False  # the editor's toggle: 15% of the budget
    body["condensation_order"].remove("rag_context")
    body["dynamic_adjustments"] = []
    await agent.call("post", "/v1/context-window-types", 201, body)
    await agent.call("patch", "/v1/profiles/p1", 200, {"context_window_type_id": "no-rag"})
    snapshot = (await agent.turn("hello"))["snapshot"]
    active = [m for m in snapshot["modules"] if m["status"] != "skipped"]
    assert sum(m["target_pct"] for m in active) == pytest.approx(100, abs=0.05)  # nothing sits idle
    assert any("redistributed 15%" in line for line in snapshot["decisions"])


async def test_a_case_rated_wrong_stays_unserved_after_an_identical_turn(agent: Agent):
    agent.model.replies = ["Forty-five days."] * 3
    query = "How long is the refund window for kettles?"
    first = await agent.turn(query)
    await agent.call("post", "/v1/sessions/s1/turns/1/feedback", 200, {"feedback": -1})
    second = await agent.turn(query)  # the same question, the same answer: recorded again, unrated
    assert second["champion_case_id"] == first["champion_case_id"]
    third = await agent.turn(query)
    rag = module(third, "rag_context")
    assert rag["status"] == "ok" and rag["used"] == 0  # retrieval ran, and the wrong case is never served again


@pytest.mark.parametrize("type_id", ["balanced", "token_efficient"])
async def test_forty_tools_go_out_in_full_on_every_turn_of_the_shipped_types(agent: Agent, type_id: str):
    tools = [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i:02d}",
                "description": f"Tool {i} looks up one kind of record and returns it as rows.",
                "parameters": {
                    "type": "object",
                    "properties": {"id": {"type": "string", "description": "The record's id."}},
                    "required": ["id"],
                },
            },
        }
        for i in range(40)
    ]
    await agent.call("patch", "/v1/profiles/p1", 200, {"tools": tools, "context_window_type_id": type_id})
    for n in range(3):
        body = await agent.turn(f"Question {n}: look up record {n}")
        assert agent.model.sent[-1]["tools"] == tools  # full, callable, in the profile's order: caches keep hitting
        assert module(body, "tool_definitions")["strategy"] == "full"


async def test_a_tool_loops_results_are_indexed_for_recall_after_its_step_not_inside_the_next_window(agent: Agent):
    """The continuation records the tool results and the answer; they are indexed in the background after it, so
    the next turn's history recall does not index them (large results) while assembling its window."""
    from components.context_window.base import Session

    agent.model.replies = [[("call_1", "lookup_orders", {"customer": "ACME"})], "ACME has 2 open orders."]
    await agent.turn("How many open orders does ACME have?")
    rows = '[{"order": 7, "status": "open"}, {"order": 9, "status": "open"}]'
    await agent.call(
        "post", "/v1/sessions/s1/turns/1/tool-results", 201, {"results": [{"tool_call_id": "call_1", "content": rows}]}
    )
    await agent.svc.writer.settle("s1")
    index = agent.svc.sources.history_recall.index_of(Session("s1"))
    assert [m.role for m in index.messages] == ["user", "assistant", "tool", "assistant"]
