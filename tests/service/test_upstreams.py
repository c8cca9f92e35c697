"""Where a turn's model call goes: the profile's upstream (base URL, key variable, retries, fallbacks) merged over
the service's default, checked at a real HTTP fake upstream (tests.service.fake_upstream) that records what it
was sent. The client is the real `openai` SDK against a served app; the mock model is off."""

from __future__ import annotations

import dataclasses
import logging
import uuid

import litellm
import openai
import pytest

from tda.config import Settings
from tda.llm import Upstream
from tests.service.fake_upstream import FakeUpstream, fake_upstream
from tests.service.served_app import served

KEY_VAR = "TEST_UPSTREAM_KEY"
GPT_41_OUTPUT_LIMIT = 32_768
"""gpt-4.1's output limit as OpenAI documents it (platform.openai.com/docs/models/gpt-4.1)."""
CHAT = [{"role": "user", "content": "Which regions grew fastest last quarter?"}]


@pytest.fixture
def live(live: Settings) -> Settings:
    """The operator lists the test's key variable among those a profile may name (TDA_UPSTREAM_KEY_ENVS)."""
    return dataclasses.replace(live, upstream_key_envs=frozenset({KEY_VAR}))


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    value = f"sk-test-{uuid.uuid4().hex}"
    monkeypatch.setenv(KEY_VAR, value)
    return value


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """litellm's Router sleeps 0.5 s, 1 s, ... (plus jitter) between retries, and so do calls made without it
    (tda/openai_call.py); the tests count retries, not waits."""
    import litellm

    from tda import openai_call

    monkeypatch.setattr(litellm, "calculate_retry_after", lambda *args, **kwargs: 0.01)
    monkeypatch.setattr(openai_call, "retry_delay", lambda *args: 0.01)


async def test_a_profile_s_base_url_and_key_reach_its_upstream(
    live: Settings, upstream: FakeUpstream, secret: str, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.INFO)  # what `tda serve` logs by default (TDA_LOG_LEVEL)
    caplog.set_level(logging.DEBUG, logger="tda")
    async with served(live) as app:
        at = {"base_url": upstream.base_url, "api_key_env": KEY_VAR}
        await app.profile("local", model="my-local-model", upstream=at)  # a name litellm has no entry for
        client = app.sdk(**{"X-TDA-Profile": "local"})
        reply = await client.chat.completions.create(model="tda", messages=CHAT)  # type: ignore[arg-type]
        stream = await client.chat.completions.create(model="tda", messages=CHAT, stream=True)  # type: ignore[arg-type]
        streamed = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        shown = (await app.http("GET", "/v1/profiles/local")).text

    assert reply.choices[0].message.content == upstream.answer("my-local-model")
    assert streamed == upstream.answer("my-local-model")
    assert [r.path for r in upstream.received] == ["/v1/chat/completions"] * 2
    for sent in upstream.received:
        assert sent.headers["authorization"] == f"Bearer {secret}"
        assert sent.body["model"] == "my-local-model"  # sent as an OpenAI-compatible model, its name unchanged
        assert sent.body["messages"][-1] == CHAT[-1]
    assert upstream.received[1].body["stream"] is True
    assert KEY_VAR in shown and secret not in shown  # the profile names the variable, never holds the key
    assert secret not in caplog.text


async def test_the_default_upstream_applies_when_the_profile_names_none(
    live: Settings, upstream: FakeUpstream, secret: str
):
    settings = dataclasses.replace(live, upstream_base_url=upstream.base_url, upstream_api_key_env=KEY_VAR)
    async with served(settings) as app:
        await app.profile("plain", model="gpt-4o")
        client = app.sdk(**{"X-TDA-Profile": "plain"})
        reply = await client.chat.completions.create(model="tda", messages=CHAT)  # type: ignore[arg-type]

    assert reply.choices[0].message.content == upstream.answer("gpt-4o")
    (sent,) = upstream.received
    assert sent.headers["authorization"] == f"Bearer {secret}"
    assert sent.body["model"] == "gpt-4o"


async def test_a_profile_s_own_base_url_never_gets_the_default_key(live: Settings, upstream: FakeUpstream, secret: str):
    settings = dataclasses.replace(live, upstream_base_url=upstream.base_url, upstream_api_key_env=KEY_VAR)
    with fake_upstream() as other:
        async with served(settings) as app:
            await app.profile("elsewhere", model="gpt-4o", upstream={"base_url": other.base_url})
            client = app.sdk(**{"X-TDA-Profile": "elsewhere"})
            await client.chat.completions.create(model="tda", messages=CHAT)  # type: ignore[arg-type]

    assert upstream.received == []
    (sent,) = other.received
    assert secret not in str(sent.headers)
    assert sent.headers["authorization"] == "Bearer no-key"


async def test_a_failed_call_is_retried_num_retries_times(
    live: Settings, upstream: FakeUpstream, secret: str, no_backoff: None
):
    upstream.failures["flaky"] = [500, 500]
    upstream.always_failing.add("down")
    async with served(live) as app:
        at = {"base_url": upstream.base_url, "api_key_env": KEY_VAR, "num_retries": 2}
        await app.profile("flaky", model="flaky", upstream=at)
        await app.profile("down", model="down", upstream=at)
        reply = await app.sdk(**{"X-TDA-Profile": "flaky"}).chat.completions.create(model="tda", messages=CHAT)  # type: ignore[arg-type]
        with pytest.raises(openai.APIStatusError) as failed:
            await app.sdk(**{"X-TDA-Profile": "down"}).chat.completions.create(model="tda", messages=CHAT)  # type: ignore[arg-type]

    assert reply.choices[0].message.content == upstream.answer("flaky")
    assert upstream.models_called() == ["flaky"] * 3 + ["down"] * 3  # the first call and two retries each
    assert failed.value.status_code == 502
    assert "the model call failed" in failed.value.message
    assert secret not in str(failed.value.body)


async def test_a_fallback_model_answers_when_the_first_fails(live: Settings, upstream: FakeUpstream, secret: str):
    upstream.always_failing.add("primary")
    async with served(live) as app:
        at = {"base_url": upstream.base_url, "api_key_env": KEY_VAR, "num_retries": 0, "fallbacks": ["backup"]}
        await app.profile("fallback", model="primary", upstream=at)
        client = app.sdk(**{"X-TDA-Profile": "fallback"})
        reply = await client.chat.completions.create(model="tda", messages=CHAT)  # type: ignore[arg-type]

    assert upstream.models_called() == ["primary", "backup"]
    assert reply.choices[0].message.content == upstream.answer("backup")
    assert all(r.headers["authorization"] == f"Bearer {secret}" for r in upstream.received)


async def test_max_tokens_is_the_client_s_capped_at_the_model_s_output_limit(
    live: Settings, upstream: FakeUpstream, secret: str
):
    """Only the client's max_tokens goes upstream, lowered to the model's output limit where it is known; none is
    added while the window has room for the model's whole output, and a model tda does not know (a local server's)
    never gets one it was not sent (issue 34, item 3)."""
    async with served(live) as app:
        at = {"base_url": upstream.base_url, "api_key_env": KEY_VAR}
        await app.profile("big", model="gpt-4.1", upstream=at)
        await app.profile("unknown", model="my-local-model", upstream=at)
        big, unknown = app.sdk(**{"X-TDA-Profile": "big"}), app.sdk(**{"X-TDA-Profile": "unknown"})
        await big.chat.completions.create(model="tda", messages=CHAT)  # type: ignore[arg-type]
        await big.chat.completions.create(model="tda", messages=CHAT, max_tokens=500)  # type: ignore[arg-type]
        await big.chat.completions.create(model="tda", messages=CHAT, max_tokens=10**6)  # type: ignore[arg-type]
        await unknown.chat.completions.create(model="tda", messages=CHAT)  # type: ignore[arg-type]
        await unknown.chat.completions.create(model="tda", messages=CHAT, max_tokens=10**6)  # type: ignore[arg-type]

    sent = [r.body.get("max_tokens") for r in upstream.received]
    assert sent == [None, 500, GPT_41_OUTPUT_LIMIT, None, 10**6]


GPT_4_CONTEXT = 8_192
"""gpt-4's context window (input and output together), as OpenAI documents it."""


async def test_each_fallback_model_is_sent_a_window_assembled_for_it(
    live: Settings, upstream: FakeUpstream, secret: str
):
    """gpt-4o fails; its fallback gpt-4 gets a window that fits its own 8K context with the answer it may give,
    not gpt-4o's (issue 34, item 3)."""
    upstream.always_failing.add("gpt-4o")
    history: list[dict[str, str]] = []
    for n in range(40):  # about 20K tokens: within gpt-4o's window, over gpt-4's
        history += [
            {"role": "user", "content": f"Question {n}: " + "tell me about the regional sales figures " * 12},
            {"role": "assistant", "content": f"Answer {n}: " + "the figures grew in every region last year " * 12},
        ]
    question = {"role": "user", "content": "Which regions grew fastest last quarter?"}
    async with served(live) as app:
        at = {"base_url": upstream.base_url, "api_key_env": KEY_VAR, "num_retries": 0, "fallbacks": ["gpt-4"]}
        await app.profile("fallback", model="gpt-4o", upstream=at, system_prompt="")
        client = app.sdk(**{"X-TDA-Profile": "fallback"})
        reply = await client.chat.completions.create(model="tda", messages=[*history, question])  # type: ignore[arg-type]

    assert reply.choices[0].message.content == upstream.answer("gpt-4")
    answered = [r for r in upstream.received if r.body["messages"][-1] == question]
    assert [r.body["model"] for r in answered] == ["gpt-4o", "gpt-4"]
    primary, backup = (r.body for r in answered)
    assert primary["messages"] == [*history, question]  # the whole conversation fits gpt-4o's window
    assert primary.get("max_tokens") is None
    backup_prompt = litellm.token_counter(model="gpt-4", messages=backup["messages"])  # the oracle: litellm's count
    assert backup_prompt < litellm.token_counter(model="gpt-4o", messages=primary["messages"])
    answer_room = backup.get("max_tokens") or litellm.get_model_info("gpt-4")["max_output_tokens"]
    assert backup_prompt + answer_room <= GPT_4_CONTEXT


async def test_a_native_turn_s_fallback_is_assembled_for_its_own_model(
    live: Settings, upstream: FakeUpstream, secret: str
):
    upstream.always_failing.add("gpt-4o")
    async with served(live) as app:
        at = {"base_url": upstream.base_url, "api_key_env": KEY_VAR, "num_retries": 0, "fallbacks": ["gpt-4"]}
        await app.profile("native", model="gpt-4o", upstream=at)
        r = await app.http("POST", "/v1/sessions", json={"id": "native-1", "profile_id": "native"})
        assert r.status_code == 201, r.text
        r = await app.http("POST", "/v1/sessions/native-1/turns", json={"query": CHAT[0]["content"]})
        assert r.status_code == 201, r.text

    turn = r.json()
    assert turn["answer"] == upstream.answer("gpt-4") and turn["model"] == "gpt-4"
    assert turn["snapshot"]["model"] == "gpt-4"
    assert turn["snapshot"]["model_limit"] == litellm.get_model_info("gpt-4")["max_input_tokens"]
    assert [r.body["model"] for r in upstream.received] == ["gpt-4o", "gpt-4"]


async def test_a_client_may_name_any_model_at_a_base_url_but_only_a_routable_one_without(
    live: Settings, upstream: FakeUpstream, secret: str
):
    async with served(live) as app:
        await app.profile("local", model="my-local-model", upstream={"base_url": upstream.base_url})
        await app.profile("openai", model="gpt-4o")
        reply = await app.sdk(**{"X-TDA-Profile": "local"}).chat.completions.create(
            model="another-local-model",
            messages=CHAT,  # type: ignore[arg-type]
        )
        with pytest.raises(openai.UnprocessableEntityError) as refused:
            await app.sdk(**{"X-TDA-Profile": "openai"}).chat.completions.create(
                model="another-local-model",
                messages=CHAT,  # type: ignore[arg-type]
            )

    assert reply.choices[0].message.content == upstream.answer("another-local-model")
    assert upstream.models_called() == ["another-local-model"]
    assert "names no provider litellm knows" in refused.value.message


def test_upstream_settings_are_read_and_bad_ones_refused_without_echoing_a_key():
    env = {
        "TDA_UPSTREAM_BASE_URL": "http://127.0.0.1:11434/v1/",
        "TDA_UPSTREAM_API_KEY_ENV": "TEAM_LLM_KEY",
        "TDA_UPSTREAM_RETRIES": "0",
        "TDA_UPSTREAM_FALLBACKS": "gpt-4o-mini, gpt-4.1-mini",
    }
    settings = Settings.from_env(env)
    assert settings.upstream_base_url == "http://127.0.0.1:11434/v1"
    assert settings.upstream_api_key_env == "TEAM_LLM_KEY"
    assert settings.upstream_retries == 0
    assert settings.upstream_fallbacks == ("gpt-4o-mini", "gpt-4.1-mini")
    assert Settings.from_env({}).upstream_retries == 2
    key = "sk-proj-" + "x" * 40  # the key itself where its variable's name belongs
    with pytest.raises(ValueError, match="put the key in a variable of its own") as refused:
        Settings.from_env({"TDA_UPSTREAM_API_KEY_ENV": key})
    assert key not in str(refused.value)
    with pytest.raises(ValueError, match="0 to 5"):
        Settings.from_env({"TDA_UPSTREAM_RETRIES": "9"})
    with pytest.raises(ValueError, match="http"):
        Settings.from_env({"TDA_UPSTREAM_BASE_URL": "127.0.0.1:11434"})


def test_a_profile_s_upstream_overrides_the_default_field_by_field():
    default = Upstream(base_url="https://llm.internal/v1", api_key_env="TEAM_KEY", num_retries=2, fallbacks=("b",))
    assert default.merged({}) == default
    assert default.merged({"num_retries": 0}) == Upstream("https://llm.internal/v1", "TEAM_KEY", 0, ("b",))
    assert default.merged({"api_key_env": "MINE"}) == Upstream("https://llm.internal/v1", "MINE", 2, ("b",))
    # its own host: neither the default's key nor its fallback models go there
    assert default.merged({"base_url": "http://127.0.0.1:11434/v1"}) == Upstream("http://127.0.0.1:11434/v1", None, 2)
    own = {"base_url": "http://127.0.0.1:11434/v1", "api_key_env": "LOCAL", "fallbacks": ["qwen"]}
    assert default.merged(own) == Upstream("http://127.0.0.1:11434/v1", "LOCAL", 2, ("qwen",))


async def test_the_user_a_client_names_reaches_the_upstream(live: Settings, upstream: FakeUpstream, secret: str):
    """OpenAI's ``user`` (the end user behind the client) is passed on, on chat completions and on Responses, with
    and without a session, as docs/agents.md says: a provider's abuse monitoring keys on it."""
    async with served(live) as app:
        await app.profile(
            "local", model="my-local-model", upstream={"base_url": upstream.base_url, "api_key_env": KEY_VAR}
        )
        client = app.sdk(**{"X-TDA-Profile": "local"})
        await client.chat.completions.create(model="tda", messages=CHAT, user="end-user-1")  # type: ignore[arg-type]
        recorded = app.sdk(**{"X-TDA-Profile": "local", "X-TDA-Session": "with-user"})
        await recorded.chat.completions.create(model="tda", messages=CHAT, user="end-user-2")  # type: ignore[arg-type]
        await client.responses.create(model="tda", input="Which regions grew?", user="end-user-3", store=False)
        await client.responses.create(model="tda", input="Which regions grew?", user="end-user-4")

    assert [r.body.get("user") for r in upstream.received] == [f"end-user-{n}" for n in (1, 2, 3, 4)]
