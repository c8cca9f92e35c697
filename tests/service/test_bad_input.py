"""Bad input and abuse: what a client may send that no valid request holds (unpaired surrogates), and requests whose
size or pace would hold the server (a 100,000-message chat, a body that trickles in)."""

from __future__ import annotations

import json
from typing import Any

import pytest

LONE = "\ud800"
"""JSON's ``"\\ud800"``: half of a surrogate pair, sent without the other half. No character; UTF-8 cannot hold it."""
CHAT = {"model": "tda", "messages": [{"role": "user", "content": f"hi {LONE}"}]}
TYPE = {
    "id": "sur_type",
    "name": f"Surrogate {LONE}",
    "modules": {"conversation_history": {"target_pct": 50, "min_pct": 0, "max_pct": 90, "priority": 50}},
}
SURROGATE_REQUESTS: list[tuple[str, str, dict[str, Any], dict[str, str], str]] = [
    # (method, path, JSON body, headers, the location the 422 must name)
    ("POST", "/v1/chat/completions", CHAT, {}, "messages.0.content"),
    ("POST", "/v1/chat/completions", CHAT, {"X-TDA-Session": "sur_chat"}, "messages.0.content"),
    (
        "POST",
        "/v1/chat/completions",
        {"model": "tda", "messages": [{"role": "user", "content": "hi"}], "user": "\udc00x"},  # a low half alone
        {"X-TDA-Session": "sur_chat2"},
        "user",
    ),
    ("POST", "/v1/responses", {"model": "tda", "input": f"hello {LONE}"}, {}, "input"),
    (
        "POST",
        "/v1/responses",
        {"model": "tda", "input": [{"role": "user", "content": [{"type": "input_text", "text": "a\udc00\ud800"}]}]},
        {"X-TDA-Session": "sur_resp"},
        "input.0.content.0.text",  # a pair in the wrong order is two lone halves
    ),
    ("POST", "/v1/sessions/sur_s/turns", {"query": f"what is {LONE}"}, {}, "query"),
    (
        "POST",
        "/v1/sessions/sur_s/messages",
        {"messages": [{"role": "user", "content": "ok", "turn": 1}, {"role": "assistant", "content": LONE, "turn": 1}]},
        {},
        "messages.1.content",
    ),
    (
        "POST",
        "/v1/sessions/sur_s/messages",
        {"messages": [{"role": "user", "content": "ok", "turn": 1, f"k{LONE}": 1}]},
        {},
        "messages.0.'k\\\\ud800'",
    ),
    ("POST", "/v1/sessions/sur_s/attachments", {"name": "notes.txt", "text": LONE}, {}, "text"),
    ("PATCH", "/v1/sessions/sur_s", {"title": LONE}, {}, "title"),
    ("POST", "/v1/sessions", {"id": "sur_s2", "profile_id": "sur_p", "title": LONE}, {}, "title"),
    ("POST", "/v1/profiles", {"id": "sur_p2", "type": "llm_only", "system_prompt": LONE}, {}, "system_prompt"),
    ("POST", "/v1/context-window-types", TYPE, {}, "name"),
    (
        "POST",
        "/v1/knowledge/collections/sur_docs/documents",
        {"documents": [{"name": "a.md", "text": f"# Title\n\nbody {LONE}"}]},
        {},
        "documents.0.text",
    ),
    ("POST", "/v1/knowledge/search", {"query": LONE, "collections": ["sur_docs"]}, {}, "query"),
]


def _json_bytes(body: dict[str, Any]) -> bytes:
    """The body as a client's JSON encoder writes it: a lone surrogate escaped (``\\ud800``), all else ASCII."""
    return json.dumps(body).encode()


@pytest.mark.parametrize(("method", "path", "body", "headers", "loc"), SURROGATE_REQUESTS)
async def test_a_lone_surrogate_is_refused_naming_the_field_and_nothing_is_stored(
    client: Any, admin: dict[str, str], method: str, path: str, body: dict[str, Any], headers: dict[str, str], loc: str
) -> None:
    r = await client.post("/v1/profiles", json={"id": "sur_p", "type": "llm_only"}, headers=admin)
    assert r.status_code == 201, await r.get_json()
    r = await client.post("/v1/sessions", json={"id": "sur_s", "profile_id": "sur_p"}, headers=admin)
    assert r.status_code == 201, await r.get_json()
    before = await _stored(client, admin)

    sent = {**admin, **headers, "Content-Type": "application/json"}
    r = await client.open(path, method=method, data=_json_bytes(body), headers=sent)
    reply = await r.get_json()

    assert r.status_code == 422, reply
    error = reply["error"] if isinstance(reply["error"], dict) else reply  # OpenAI's shape on its routes
    assert error["errors"][0]["loc"] == loc and error["errors"][0]["type"] == "lone_surrogate", reply
    assert "surrogate" in error["message"] and loc in error["message"]
    assert error is reply or error["param"] == loc
    assert await _stored(client, admin) == before


async def _stored(client: Any, headers: dict[str, str]) -> dict[str, Any]:
    """Everything a refused request could have left behind, as the API shows it."""
    sessions = (await (await client.get("/v1/sessions", headers=headers)).get_json())["sessions"]
    session = await (await client.get("/v1/sessions/sur_s", headers=headers)).get_json()
    listings = {
        name: (await (await client.get(f"/v1/sessions/sur_s/{name}", headers=headers)).get_json())
        for name in ("turns", "snapshots", "messages", "attachments")
    }
    return {
        "sessions": sorted(s["id"] for s in sessions),
        "title": session["title"],
        "listings": listings,
        "profiles": await (await client.get("/v1/profiles", headers=headers)).get_json(),
        "type": (await client.get("/v1/context-window-types/sur_type", headers=headers)).status_code,
        "knowledge": await (await client.get("/v1/knowledge/collections", headers=headers)).get_json(),
    }


async def test_a_surrogate_pair_is_a_character_and_is_kept(client: Any, admin: dict[str, str]) -> None:
    """The check refuses halves, not characters outside the BMP: ``"\\ud83d\\ude00"`` is one emoji."""
    body = {"id": "pair_p", "type": "llm_only", "system_prompt": "smile \ud83d\ude00"}
    r = await client.post("/v1/profiles", data=_json_bytes(body), headers={**admin, "Content-Type": "application/json"})
    assert r.status_code == 201, await r.get_json()
    shown = await (await client.get("/v1/profiles/pair_p", headers=admin)).get_json()
    assert shown["system_prompt"] == "smile \U0001f600"
