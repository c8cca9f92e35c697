"""No caller can redirect a model call or pick its key: tried as an attacker would, against a served app with the
real `openai` SDK. Two fake upstreams record every request (tests.service.fake_upstream): the operator's, holding
the server's key, and an "attacker" host; the attacker must receive nothing, whatever a chat body or a profile says."""

from __future__ import annotations

import dataclasses
import socket
import uuid
from collections.abc import Iterator
from typing import Any, ClassVar, get_type_hints

import openai
import pytest
from openai.types.chat import completion_create_params
from openai.types.responses import response_create_params

from tda.api.schemas import ProfileFields, UpstreamIn
from tda.api.wire_fields import CHAT_FIELDS, RESPONSES_FIELDS
from tda.config import Settings
from tda.llm import failure_reason
from tests.service.fake_upstream import FakeUpstream, fake_upstream
from tests.service.served_app import served

KEY_VAR = "TEST_OPERATOR_KEY"
CHAT = [{"role": "user", "content": "Summarise the open invoices."}]
ROUTING = ["api_base", "base_url", "api_key", "extra_headers", "custom_llm_provider", "api_version"]


@pytest.fixture
def attacker() -> Iterator[FakeUpstream]:
    with fake_upstream() as fake:
        yield fake


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    value = f"sk-operator-{uuid.uuid4().hex}"
    monkeypatch.setenv(KEY_VAR, value)
    monkeypatch.setenv("TDA_SECRET_KEY", "cookie-signing-secret")
    return value


@pytest.fixture
def operated(live: Settings, upstream: FakeUpstream, secret: str) -> Settings:
    """The operator's default upstream with the server's key (a variable only the operator named)."""
    return dataclasses.replace(live, upstream_base_url=upstream.base_url, upstream_api_key_env=KEY_VAR)


def _nothing_reached(*fakes: FakeUpstream) -> None:
    assert [r.path for fake in fakes for r in fake.received] == []


@pytest.mark.parametrize("field", ROUTING)
async def test_a_routing_or_credential_field_in_a_chat_body_is_refused(
    operated: Settings, upstream: FakeUpstream, attacker: FakeUpstream, field: str
):
    value: Any = {"X-Api-Key": "client"} if field == "extra_headers" else attacker.base_url
    async with served(operated) as app:
        session = f"s-{uuid.uuid4().hex[:8]}"
        body = {"model": "tda", "messages": CHAT, field: value}
        chat = await app.http("POST", "/v1/chat/completions", json=body, headers={"X-TDA-Session": session})
        sdk = app.sdk()
        with pytest.raises(openai.UnprocessableEntityError) as refused:
            await sdk.chat.completions.create(model="tda", messages=CHAT, extra_body={field: value})  # type: ignore[arg-type]
        responses = await app.http("POST", "/v1/responses", json={"model": "tda", "input": "hi", field: value})
        stored = await app.http("GET", f"/v1/sessions/{session}")

    assert chat.status_code == 422
    assert chat.json()["error"]["message"].startswith(f"{field} chooses where the model is called")
    assert "operator" in chat.json()["error"]["message"]
    assert field in refused.value.message
    assert responses.status_code == 422 and field in responses.text
    assert stored.status_code == 404  # nothing was created, so nothing holds the client's credential
    _nothing_reached(upstream, attacker)


async def test_an_unknown_field_is_named_and_the_wire_format_s_own_fields_pass(
    operated: Settings, upstream: FakeUpstream
):
    async with served(operated) as app:
        unknown = await app.http("POST", "/v1/chat/completions", json={"messages": CHAT, "top_k": 5})
        reply = await app.sdk().chat.completions.create(
            model="tda",
            messages=CHAT,  # type: ignore[arg-type]
            temperature=0.2,
            seed=7,
            stop=["END"],
            user="end-user-1",
            presence_penalty=0.1,
            logit_bias={"50256": -100},
        )

    assert unknown.status_code == 422
    assert "top_k is not a field of chat completions" in unknown.json()["error"]["message"]
    assert reply.choices[0].message.content == upstream.answer("gpt-4o")
    (sent,) = upstream.received
    assert (sent.body["temperature"], sent.body["seed"], sent.body["stop"], sent.body["user"]) == (
        0.2,
        7,
        ["END"],
        "end-user-1",
    )


def test_the_accepted_fields_are_the_openai_sdk_s_own():
    """The oracle is OpenAI's published SDK: every field it can send is accepted, and nothing beyond them."""
    chat = set(get_type_hints(completion_create_params.CompletionCreateParamsBase)) | {"stream"}
    responses = set(get_type_hints(response_create_params.ResponseCreateParamsBase)) | {"stream"}
    assert chat == CHAT_FIELDS
    assert responses == RESPONSES_FIELDS


@pytest.mark.parametrize(
    ("upstream_fields", "field"),
    [
        ({"api_key_env": "TDA_SECRET_KEY"}, "api_key_env"),
        ({"api_key_env": "TDA_DATABASE_URL"}, "api_key_env"),
        ({"api_key_env": "AWS_SECRET_ACCESS_KEY"}, "api_key_env"),
        ({"api_key_env": "HOME"}, "api_key_env"),
        ({"base_url": "http://169.254.169.254/latest/v1"}, "base_url"),
        ({"base_url": "http://[::ffff:169.254.169.254]/v1"}, "base_url"),
        ({"base_url": "http://metadata.google.internal/v1"}, "base_url"),
    ],
)
async def test_a_profile_may_not_name_a_secret_or_a_metadata_host(
    operated: Settings, attacker: FakeUpstream, upstream_fields: dict[str, str], field: str
):
    at = {"base_url": attacker.base_url, **upstream_fields}
    async with served(operated) as app:
        created = await app.http("POST", "/v1/profiles", json={"id": "evil", "upstream": at})
        await app.profile("fine")
        patched = await app.http("PATCH", "/v1/profiles/fine", json={"upstream": at})
        shown = (await app.http("GET", "/v1/profiles/fine")).json()

    for refused in (created, patched):
        assert refused.status_code == 422
        assert refused.json()["errors"][0]["loc"] == f"upstream.{field}"
    assert shown["upstream"]["base_url"] is None  # the refused change left the profile as it was
    _nothing_reached(attacker)


async def test_a_stored_profile_the_policy_now_refuses_sends_nothing(
    operated: Settings, upstream: FakeUpstream, attacker: FakeUpstream
):
    """A profile written before the policy (or before the operator narrowed it) is refused at call time."""
    async with served(operated) as app:
        at = {"base_url": attacker.base_url, "api_key_env": "TDA_SECRET_KEY"}
        fields = ProfileFields(upstream=UpstreamIn()).model_dump()
        await app.svc.store.profiles.create("legacy", {**fields, "upstream": at}, "test")
        r = await app.http("POST", "/v1/chat/completions", json={"messages": CHAT}, headers={"X-TDA-Profile": "legacy"})

    assert r.status_code == 403
    assert r.json()["error"]["code"] == "upstream_not_allowed"
    assert "cookie-signing-secret" not in r.text
    _nothing_reached(upstream, attacker)


async def test_listed_hosts_are_the_only_ones_a_profile_may_name(
    operated: Settings, upstream: FakeUpstream, attacker: FakeUpstream, monkeypatch: pytest.MonkeyPatch
):
    port = upstream.base_url.split(":")[2].split("/")[0]
    settings = dataclasses.replace(
        operated, upstream_hosts=(f"127.0.0.1:{port}",), upstream_key_envs=frozenset({"OPENAI_API_KEY"})
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-team-key")
    async with served(settings) as app:
        elsewhere = await app.http(
            "POST", "/v1/profiles", json={"id": "away", "upstream": {"base_url": attacker.base_url}}
        )
        at = {"base_url": upstream.base_url, "api_key_env": "OPENAI_API_KEY"}
        await app.profile("listed", model="team-model", upstream=at)
        reply = await app.sdk(**{"X-TDA-Profile": "listed"}).chat.completions.create(model="tda", messages=CHAT)  # type: ignore[arg-type]

    assert elsewhere.status_code == 422
    assert "TDA_UPSTREAM_HOSTS" in elsewhere.json()["message"]
    assert reply.choices[0].message.content == upstream.answer("team-model")
    assert upstream.received[0].headers["authorization"] == "Bearer sk-team-key"
    _nothing_reached(attacker)


async def test_a_name_that_resolves_to_a_metadata_address_is_refused_at_call_time(
    operated: Settings, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
):
    real = socket.getaddrinfo

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "models.example.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", 80))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    async with served(operated) as app:
        await app.profile("rebound", upstream={"base_url": "http://models.example.test/v1"})  # a name passes as written
        r = await app.http(
            "POST", "/v1/chat/completions", json={"messages": CHAT}, headers={"X-TDA-Profile": "rebound"}
        )

    assert r.status_code == 403
    assert "169.254.169.254" in r.json()["error"]["message"]
    _nothing_reached(upstream)


async def test_an_upstream_s_error_body_is_not_relayed(operated: Settings, upstream: FakeUpstream):
    upstream.always_failing.add("gpt-4o")
    upstream.error_body = ("text/plain", b"-ERR wrong number of arguments; requirepass hunter2-internal")
    async with served(operated) as app:
        plain = await app.http("POST", "/v1/chat/completions", json={"messages": CHAT})
        upstream.error_body = None  # now an OpenAI-shaped error: its own message is a useful, short reason
        shaped = await app.http("POST", "/v1/chat/completions", json={"messages": CHAT})

    assert plain.status_code == shaped.status_code == 502
    assert "hunter2" not in plain.text and "requirepass" not in plain.text
    assert "status 500" in plain.json()["error"]["message"]
    assert "scripted failure of gpt-4o" in shaped.json()["error"]["message"]


def test_a_provider_s_message_is_shown_without_secrets():
    class BadRequest(Exception):
        status_code = 400
        body: ClassVar = {
            "message": "Incorrect API key sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a at http://u:pw@10.0.0.5/v1 " * 5
        }

    reason = failure_reason(BadRequest())
    assert reason.startswith("BadRequest, status 400: Incorrect API key *** at http://***@10.0.0.5/v1")
    assert "4f9a8b7c" not in reason and "pw@" not in reason
    assert len(reason) < 260


@pytest.mark.parametrize(
    ("env", "complaint"),
    [
        ({"TDA_UPSTREAM_KEY_ENVS": "OPENAI_API_KEY,TDA_SECRET_KEY"}, "TDA_SECRET_KEY"),
        ({"TDA_UPSTREAM_KEY_ENVS": "OPENAI API KEY"}, "not an environment variable"),
        ({"TDA_UPSTREAM_HOSTS": "http://api.openai.com/v1"}, "not a host pattern"),
    ],
)
def test_the_operator_s_lists_are_checked_at_start(env: dict[str, str], complaint: str):
    with pytest.raises(ValueError, match=complaint):
        Settings.from_env(env)


def test_the_operator_s_lists_are_read():
    env = {"TDA_UPSTREAM_KEY_ENVS": "MY_LLM_KEY, OPENAI_API_KEY", "TDA_UPSTREAM_HOSTS": "*.Example.com"}
    settings = Settings.from_env(env)
    assert settings.upstream_key_envs == {"MY_LLM_KEY", "OPENAI_API_KEY"}
    assert settings.upstream_hosts == ("*.example.com",)
    assert "ANTHROPIC_API_KEY" in Settings.from_env({}).upstream_key_envs
