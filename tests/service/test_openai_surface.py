"""The OpenAI surface around chat completions, read by the real `openai` SDK against a served app: GET /v1/models
(and ``model: "tda/<profile_id>"`` choosing a profile), and /v1 paths or methods the server lacks answered in
OpenAI's error shape, while tda's own routes keep theirs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import openai
import pytest

from tda.config import Settings
from tests.service.served_app import App, served

CHAT = [{"role": "user", "content": "What changed in the returns policy?"}]
OPENAI_ERROR_FIELDS = {"message", "type", "code", "param"}


def _epoch(iso: str) -> int:
    moment = datetime.fromisoformat(iso)
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp())


async def _profiles(app: App) -> dict[str, dict[str, Any]]:
    await app.profile("analyst", model="gpt-4.1")
    await app.profile("plain")  # no model: the service's (TDA_MODEL, gpt-4o in the tests)
    await app.profile("local", model="my-local-model", upstream={"base_url": "http://127.0.0.1:9/v1"})
    listed = (await app.http("GET", "/v1/profiles")).json()
    return {p["id"]: p for p in listed["profiles"]}


async def test_the_sdk_lists_tda_each_profile_and_the_models_they_call(settings: Settings):
    async with served(settings) as app:
        profiles = await _profiles(app)
        viewer, _ = await app.svc.store.tokens.create("reader", "viewer")
        client = app.sdk(key=viewer)  # reading the list needs no more than a viewer token
        models = [m async for m in client.models.list()]
        one = await client.models.retrieve("tda/analyst")
        with pytest.raises(openai.NotFoundError) as missing:
            await client.models.retrieve("tda/nobody")
        with pytest.raises(openai.AuthenticationError) as stranger:
            await app.sdk(key="not-a-token").models.list()

    ids = [m.id for m in models]
    assert ids == ["tda", "tda/analyst", "tda/local", "tda/plain", "gpt-4.1", "gpt-4o", "my-local-model"]
    assert {m.object for m in models} == {"model"}
    by_id = {m.id: m for m in models}
    for profile_id, profile in profiles.items():
        assert by_id[f"tda/{profile_id}"].created == _epoch(profile["created_at"])
        assert by_id[f"tda/{profile_id}"].owned_by == "tda"
    assert by_id["gpt-4.1"].created == _epoch(profiles["analyst"]["created_at"])  # when a profile first used it
    assert by_id["gpt-4.1"].owned_by == "openai"
    assert one.model_dump() == by_id["tda/analyst"].model_dump()
    assert "GET /v1/models lists" in missing.value.message
    assert missing.value.body["code"] == "model_not_found"  # type: ignore[index]
    assert stranger.value.status_code == 401 and isinstance(stranger.value.body, dict)
    assert set(stranger.value.body) == OPENAI_ERROR_FIELDS


async def test_model_tda_slash_profile_runs_the_chat_under_that_profile(settings: Settings):
    async with served(settings) as app:
        await _profiles(app)
        client = app.sdk()
        recorded = app.sdk(**{"X-TDA-Session": "by-model"})
        raw = await recorded.chat.completions.with_raw_response.create(model="tda/analyst", messages=CHAT)  # type: ignore[arg-type]
        session = (await app.http("GET", "/v1/sessions/by-model")).json()
        with pytest.raises(openai.UnprocessableEntityError) as both:
            await app.sdk(**{"X-TDA-Profile": "plain"}).chat.completions.create(model="tda/analyst", messages=CHAT)  # type: ignore[arg-type]
        with pytest.raises(openai.NotFoundError) as unknown:
            await client.chat.completions.create(model="tda/nobody", messages=CHAT)  # type: ignore[arg-type]

    assert session["profile_id"] == "analyst"
    assert raw.parse().model == "gpt-4.1"  # the profile's model answered
    assert "X-TDA-Profile names 'plain'" in both.value.message
    assert "nobody" in unknown.value.message


async def test_a_path_the_server_lacks_answers_in_openai_s_shape(settings: Settings):
    async with served(settings) as app:
        client = app.sdk()
        with pytest.raises(openai.NotFoundError) as embeddings:
            await client.embeddings.create(model="tda", input="hello")
        unknown = await app.http("GET", "/v1/assistants/asst_1")
        wrong_method = await app.http("GET", "/v1/chat/completions")
        wrong_on_models = await app.http("DELETE", "/v1/models")
        tda_route_405 = await app.http("DELETE", "/v1/profiles")
        tda_404 = await app.http("GET", "/v1/profiles/nobody")
        tda_unrouted = await app.http("GET", "/v1/snapshots/99999999999")  # past the integer route's range

    message = embeddings.value.message
    assert "POST /v1/embeddings is not a route of this server" in message
    assert "POST /v1/chat/completions" in message and "GET /v1/models" in message
    assert set(unknown.json()["error"]) == OPENAI_ERROR_FIELDS
    assert unknown.json()["error"]["code"] == "unknown_url"
    assert wrong_method.status_code == 405 and "POST" in wrong_method.headers["Allow"]
    assert wrong_method.json()["error"]["code"] == "method_not_allowed"
    assert "GET /v1/chat/completions is not allowed" in wrong_method.json()["error"]["message"]
    assert wrong_on_models.status_code == 405 and set(wrong_on_models.json()["error"]) == OPENAI_ERROR_FIELDS
    # tda's own routes keep the error shape /openapi.json documents for them
    assert tda_route_405.status_code == 405 and tda_route_405.json()["error"] == "method_not_allowed"
    assert tda_404.status_code == 404 and tda_404.json()["error"] == "not_found"
    assert tda_unrouted.status_code == 404 and tda_unrouted.json()["error"] == "not_found"
