"""A type is checked against its modules' options models when saved (POST/PUT: 422 naming the module and the
option, nothing written), and against what the budget can hold; a type stored before the check still runs."""

from __future__ import annotations

import copy
from typing import Any

from components.context_window.window_type import ContextWindowType
from tda.builtins import DEFAULT_TYPES

URL = "/v1/context-window-types"


def _balanced(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(DEFAULT_TYPES["balanced"].model_dump(mode="json"))
    return body | {"id": "mine", "name": "Mine", "is_default": False} | changes


def _errors(body: dict[str, Any]) -> dict[str, str]:
    return {e["loc"]: e["msg"] for e in body["errors"]}


async def test_a_bad_option_value_and_an_unknown_option_are_422_naming_module_and_option(client, admin):
    body = _balanced()
    body["modules"]["workflow_history"]["config"] = {"max_turns": "lots", "colour": "red"}
    r = await client.post(URL, json=body, headers=admin)
    assert r.status_code == 422
    errors = _errors(await r.get_json())
    bad = errors["modules.workflow_history.config.max_turns"]
    assert "workflow_history option 'max_turns'" in bad and "integer" in bad and "'lots'" in bad
    unknown = errors["modules.workflow_history.config.colour"]
    assert "workflow_history has no option 'colour'; remove it" in unknown and "max_turns" in unknown
    assert (await client.get(f"{URL}/mine", headers=admin)).status_code == 404  # nothing written


async def test_put_checks_options_too_and_leaves_the_stored_type_as_it_was(client, admin):
    r = await client.get(f"{URL}/balanced", headers=admin)
    before, etag = await r.get_json(), r.headers["ETag"]
    body = {k: v for k, v in before.items() if k not in ("etag", "version", "updated_at")}
    body["modules"]["component_instructions"]["config"] = {"intensity": "loud"}
    r = await client.put(f"{URL}/balanced", json=body, headers={**admin, "If-Match": etag})
    assert r.status_code == 422
    msg = _errors(await r.get_json())["modules.component_instructions.config.intensity"]
    assert "component_instructions option 'intensity'" in msg and "'full', 'medium' or 'light'" in msg
    after = await (await client.get(f"{URL}/balanced", headers=admin)).get_json()
    assert after["version"] == before["version"]


async def test_valid_options_save_as_given(client, admin):
    body = _balanced()
    body["modules"]["workflow_history"]["config"] = {"max_turns": 3}
    body["modules"]["conversation_history"]["config"] = {"cache_block": "auto", "summarize_dropped": False}
    r = await client.post(URL, json=body, headers=admin)
    assert r.status_code == 201, await r.get_json()
    assert (await r.get_json())["modules"]["workflow_history"]["config"] == {"max_turns": 3}


async def test_an_unknown_condense_strategy_is_422_saying_which_exist(client, admin):
    body = _balanced()
    body["dynamic_adjustments"][2]["action"]["strategy"] = "foo"
    r = await client.post(URL, json=body, headers=admin)
    assert r.status_code == 422
    msg = _errors(await r.get_json())["dynamic_adjustments.2.action.strategy"]
    assert "'foo' is not a strategy; use one of summarize, truncate" in msg


async def test_targets_over_100_percent_are_422_with_the_total(client, admin):
    body = _balanced()
    for module_id, share in {"tool_definitions": 80, "conversation_history": 60, "rag_context": 30}.items():
        body["modules"][module_id].update(target_pct=share, max_pct=max(share, body["modules"][module_id]["max_pct"]))
    total = sum(s["target_pct"] for s in body["modules"].values() if s["active"])
    assert total == 211
    r = await client.post(URL, json=body, headers=admin)
    assert r.status_code == 422
    assert "target_pct add up to 211%" in _errors(await r.get_json())["modules"]
    body["modules"]["rag_context"]["active"] = False  # inactive shares do not count
    body["condensation_order"].remove("rag_context")
    body["modules"]["tool_definitions"].update(target_pct=22)
    body["modules"]["conversation_history"].update(target_pct=22)
    assert sum(s["target_pct"] for s in body["modules"].values() if s["active"]) <= 100
    assert (await client.post(URL, json=body, headers=admin)).status_code == 201


async def test_a_type_stored_with_a_bad_option_still_runs_and_names_it_in_the_decisions(client, admin, svc):
    await svc.store.types.seed_defaults()
    body = _balanced()
    body["modules"]["workflow_history"]["config"] = {"max_turns": "lots"}
    await svc.store.types.create(ContextWindowType.model_validate(body), "before-the-check")  # as an old row
    r = await client.post(
        "/v1/profiles", json={"id": "old", "type": "llm_only", "context_window_type_id": "mine"}, headers=admin
    )
    assert r.status_code == 201, await r.get_json()
    assert (
        await client.post("/v1/sessions", json={"id": "s-old", "profile_id": "old"}, headers=admin)
    ).status_code == 201
    for query in ("first", "second"):
        r = await client.post("/v1/sessions/s-old/turns", json={"query": query}, headers=admin)
        assert r.status_code in (200, 201), await r.get_json()
        snapshot = (await r.get_json())["snapshot"]
        usage = {m["module_id"]: m for m in snapshot["modules"]}
        assert usage["workflow_history"]["status"] != "failed"
        assert any("workflow_history: ignored invalid options ['max_turns']" in d for d in snapshot["decisions"])


async def test_the_modules_api_serves_each_options_schema(client, viewer):
    modules = (await (await client.get("/v1/context-window/modules", headers=viewer)).get_json())["modules"]
    schemas = {m["module_id"]: m["options_schema"] for m in modules}
    history = schemas["workflow_history"]
    assert (
        history["properties"]["max_turns"]["type"] == "integer" and history["properties"]["max_turns"]["minimum"] == 1
    )
    assert history["additionalProperties"] is False
    assert schemas["component_instructions"]["properties"]["intensity"]["enum"] == ["full", "medium", "light"]
    assert schemas["fixture_echo"] is None  # a module that declares no options
