"""A profile's gateway options: stored as sent, read back, and refused with a field error when malformed."""

from __future__ import annotations

from typing import Any

import pytest


async def test_gateway_options_default_to_the_client_and_the_user(client: Any, admin: dict[str, str]) -> None:
    r = await client.post("/v1/profiles", json={"id": "plain"}, headers=admin)
    assert r.status_code == 201, await r.get_json()
    body = await r.get_json()
    assert body["system_prompt_mode"] == "client"
    assert body["case_sharing"] == "user"
    assert body["query_rewrite"] is False
    assert body["upstream"] == {"base_url": None, "api_key_env": None, "fallbacks": [], "num_retries": None}


async def test_gateway_options_are_stored_and_patched(client: Any, admin: dict[str, str]) -> None:
    upstream = {
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": "OPENAI_API_KEY",
        "fallbacks": ["gpt-4o"],
        "num_retries": 2,
    }
    fields = {"id": "gw", "system_prompt_mode": "prepend", "case_sharing": "session", "upstream": upstream}
    assert (await client.post("/v1/profiles", json=fields, headers=admin)).status_code == 201
    r = await client.patch("/v1/profiles/gw", json={"query_rewrite": True, "case_sharing": "profile"}, headers=admin)
    assert r.status_code == 200, await r.get_json()
    got = await (await client.get("/v1/profiles/gw", headers=admin)).get_json()
    assert (got["system_prompt_mode"], got["case_sharing"], got["query_rewrite"]) == ("prepend", "profile", True)
    assert got["upstream"] == upstream


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("system_prompt_mode", "replace"),
        ("case_sharing", "everyone"),
        ("upstream", {"base_url": "ftp://example"}),
        ("upstream", {"api_key_env": "not a name"}),
        ("upstream", {"num_retries": 9}),
        ("upstream", {"model": "x"}),
    ],
)
async def test_a_malformed_option_is_a_field_error(client: Any, admin: dict[str, str], field: str, value: Any) -> None:
    r = await client.post("/v1/profiles", json={"id": "bad", field: value}, headers=admin)
    assert r.status_code == 422
    assert field in str(await r.get_json())
    assert (await client.get("/v1/profiles/bad", headers=admin)).status_code == 404
