"""All nine built-in modules contribute on a live turn of the service (Balanced type, tool-enabled profile).

One scenario, played once through the REST API with the scripted mock model:
turn 1 asks about refunds (its answer becomes a champion case), turn 2 runs a tool loop (its results are
recorded), turn 3 asks the refund question again. Turn 3's snapshot and the window the model was sent are
then checked module by module.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from tda.app import create_app
from tda.config import Settings
from tda.knowledge.ingest import ingest_paths
from tda.knowledge.store import KnowledgeStore
from tests.service.support import ScriptedModel

HANDBOOK = """# Field handbook

## Refunds

Refunds for heliotrope kettles are granted within forty-five days of delivery, after an inspection
at the Ostrava depot. Keep the original receipt.
"""
REFUND = "How many days do customers have to get a refund for a heliotrope kettle?"
SPEC = "Kettle spec sheet: the heliotrope kettle holds 1.7 litres and boils in 140 seconds."
CHARTING = "Charts: call render_chart with a Vega-Lite spec and label every axis."
PROMPT = "You are the kettle shop's support agent."
TOOL = {
    "type": "function",
    "function": {
        "name": "lookup_orders",
        "description": "Look up a customer's orders by name. Returns one row per order.",
        "parameters": {"type": "object", "properties": {"customer": {"type": "string"}}, "required": ["customer"]},
    },
}
ROWS = '[{"order": 7, "status": "open", "amount": 39.9}, {"order": 9, "status": "shipped", "amount": 12.5}]'


async def _play(settings: Settings) -> dict[str, Any]:
    model = ScriptedModel(
        "Forty-five days, after an inspection at the Ostrava depot.",
        [("call_1", "lookup_orders", {"customer": "ACME"})],
        "ACME has one open order and one shipped.",
        "Forty-five days.",
    )
    app = create_app(settings, llm=model.llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as running:
        svc = running.app.extensions["tda"]
        token, _ = await svc.store.tokens.create("test-admin", "admin")
        client, headers = running.test_client(), {"Authorization": f"Bearer {token}"}

        async def call(method: str, url: str, body: Any = None) -> Any:
            r = await getattr(client, method)(url, json=body, headers=headers)
            assert r.status_code in (200, 201), await r.get_json()
            return await r.get_json()

        profile = {
            "id": "shop",
            "type": "tool_enabled",
            "system_prompt": PROMPT,
            "tools": [TOOL],
            "components": ["charting"],
            "knowledge_collections": ["handbook"],
        }
        await call("post", "/v1/profiles", profile)
        await call("put", "/v1/component-instructions/charting", {"full": CHARTING})
        await call("post", "/v1/sessions", {"id": "s1", "profile_id": "shop"})
        await call("post", "/v1/sessions/s1/attachments", {"name": "spec.txt", "text": SPEC})
        await call("post", "/v1/sessions/s1/turns", {"query": REFUND})
        await call("post", "/v1/sessions/s1/turns", {"query": "Look up ACME's kettle orders"})
        await call(
            "post", "/v1/sessions/s1/turns/2/tool-results", {"results": [{"tool_call_id": "call_1", "content": ROWS}]}
        )
        third = await call("post", "/v1/sessions/s1/turns", {"query": REFUND})
    return {"snapshot": third["snapshot"], "sent": model.sent[-1]}


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory, template_db: Path) -> dict[str, Any]:
    data = tmp_path_factory.mktemp("agents-modules")
    shutil.copy(template_db, data / "tda.db")
    (data / "handbook.md").write_text(HANDBOOK)
    store = KnowledgeStore.open(data, embedder="hashing")
    try:
        assert ingest_paths(store, [data / "handbook.md"], "handbook", base=data).chunks > 0
    finally:
        store.close()
    settings = Settings(data_dir=data, modules_dir=data / "modules", mock_model=True, embedder="hashing")
    return asyncio.run(_play(settings))


def _text(sent: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in sent["messages"])


def _system_text_containing(sent: dict[str, Any], needle: str) -> str:
    return next(m["content"] for m in sent["messages"] if m["role"] == "system" and needle in (m["content"] or ""))


CHECKS = {
    "system_prompt": lambda sent: sent["messages"][0]["content"].startswith(PROMPT),
    "tool_definitions": lambda sent: sent["tools"] == [TOOL],  # the full schema, callable
    "conversation_history": lambda sent: (
        [m["role"] for m in sent["messages"] if m["role"] in ("tool",)] == ["tool"]
        and any(m.get("tool_calls") for m in sent["messages"])
    ),
    "rag_context": lambda sent: (
        "Forty-five days, after an inspection" in _text(sent)
        and REFUND in _system_text_containing(sent, "Forty-five days, after an inspection")
    ),
    "knowledge_context": lambda sent: "Ostrava depot. Keep the original receipt" in _text(sent),
    "plan_hydration": lambda sent: "39.9" in _system_text_containing(sent, "Results of the previous turn (turn 2"),
    "document_context": lambda sent: SPEC in _system_text_containing(sent, "## Documents attached"),
    "component_instructions": lambda sent: CHARTING in _system_text_containing(sent, "## Component instructions"),
    "workflow_history": lambda sent: (
        "Turn 1" in _system_text_containing(sent, "## Workflow history")
        and "lookup_orders" in _system_text_containing(sent, "## Workflow history")
    ),
}


@pytest.mark.parametrize("module_id", list(CHECKS))
def test_the_module_contributes_on_a_live_turn(played: dict[str, Any], module_id: str):
    usage = next(m for m in played["snapshot"]["modules"] if m["module_id"] == module_id)
    assert usage["status"] == "ok" and usage["used"] > 0, usage
    assert CHECKS[module_id](played["sent"]), f"{module_id}'s content is not in the window the model was sent"


def test_the_window_is_within_budget_and_the_pair_is_kept_together(played: dict[str, Any]):
    snapshot, messages = played["snapshot"], played["sent"]["messages"]
    assert snapshot["total_used"] <= snapshot["available_budget"]
    call = next(i for i, m in enumerate(messages) if m.get("tool_calls"))
    assert messages[call + 1]["role"] == "tool" and messages[call + 1]["tool_call_id"] == "call_1"
