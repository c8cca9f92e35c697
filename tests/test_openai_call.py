"""Calls to an OpenAI-compatible upstream made without litellm (tda/openai_call.py) are the calls litellm makes:
the same bytes reach the upstream, the same reply comes back, the same retries, fallbacks and error reasons. The
oracle is litellm itself: every case is sent both ways to a recording fake upstream (tests/service/fake_upstream.py)
and the two recordings compared byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tda import llm as llm_module
from tda import openai_call
from tda.llm import LLM, Completion, Upstream, failure_reason, unsent_params
from tests.ops.live import bare_env
from tests.service.fake_upstream import FakeUpstream, fake_upstream

ROOT = Path(__file__).resolve().parent.parent
TOOL = {
    "type": "function",
    "function": {
        "name": "get_balance",
        "description": "The balance of an account.",
        "parameters": {"type": "object", "properties": {"account": {"type": "string"}}, "required": ["account"]},
    },
}
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}}
CHAT = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is my balance?"}]
TOOL_LOOP = [
    *CHAT,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_balance", "arguments": '{"account":"A"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "42 EUR"},
    {"role": "user", "content": [{"type": "text", "text": "And this?"}, IMAGE]},
]
PARAMS: dict[str, Any] = {
    "frequency_penalty": 0.1,
    "logit_bias": {"50256": -100},
    "logprobs": True,
    "top_logprobs": 2,
    "modalities": ["text"],
    "prediction": {"type": "content", "content": "The balance is"},
    "n": 2,
    "presence_penalty": 0.1,
    "seed": 7,
    "stop": ["END"],
    "temperature": 0.2,
    "top_p": 0.9,
    "parallel_tool_calls": False,
    "audio": {"voice": "alloy", "format": "wav"},
    "web_search_options": {"search_context_size": "low"},
    "service_tier": "auto",
    "safety_identifier": "user-hash-1",
    "prompt_cache_key": "tenant-1",
    "prompt_cache_retention": "24h",
    "store": True,
    "response_format": {"type": "json_object"},
    "user": "end-user-1",
    "metadata": {"run": "r1"},
}


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with fake_upstream() as fake:
        yield fake


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    monkeypatch.setattr(litellm, "calculate_retry_after", lambda *args, **kwargs: 0.01)
    monkeypatch.setattr(openai_call, "retry_delay", lambda *args: 0.01)


async def both_ways(
    monkeypatch: pytest.MonkeyPatch, upstream: FakeUpstream, call: Any, at: Upstream | None = None
) -> tuple[list[Any], list[Any]]:
    """(what ``call(llm)`` returned or raised, what the upstream received) through litellm, then without it."""
    outcomes = []
    for through_litellm in (True, False):
        upstream.received.clear()
        with monkeypatch.context() as patch:
            if through_litellm:
                patch.setattr(openai_call, "route", lambda *args: None)
            llm = LLM(mock=False, upstream=at or Upstream(base_url=upstream.base_url))
            try:
                done: Any = await call(llm)
            except Exception as exc:
                done = exc
            finally:
                await llm.aclose()
        outcomes.append((done, list(upstream.received)))
    (by_litellm, sent_by_litellm), (direct, sent_direct) = outcomes
    return [by_litellm, direct], [sent_by_litellm, sent_direct]


def raw_bodies(received: list[Any]) -> list[bytes]:
    return [r.raw for r in received]


CASES: dict[str, dict[str, Any]] = {
    "chat": {"model": "gpt-4.1", "messages": CHAT, "tools": []},
    "tools": {"model": "gpt-4.1", "messages": CHAT, "tools": [TOOL], "tool_choice": "auto"},
    "tool loop and an image": {"model": "gpt-4.1", "messages": TOOL_LOOP, "tools": [TOOL]},
    "max_tokens": {"model": "gpt-4.1", "messages": CHAT, "tools": [], "max_tokens": 10**6},
    "every parameter": {"model": "gpt-4.1", "messages": CHAT, "tools": [TOOL], "params": PARAMS},
    "a local model": {"model": "my-local-model", "messages": CHAT, "tools": [], "max_tokens": 300},
    "a local model's reasoning_effort": {
        "model": "my-local-model",
        "messages": CHAT,
        "tools": [],
        "params": {"reasoning_effort": "low", "temperature": 0.0},
    },
    "openai/ prefix": {"model": "openai/gpt-4o-mini", "messages": CHAT, "tools": []},
    "gpt-4 (no response_format)": {"model": "gpt-4", "messages": CHAT, "tools": [], "params": {"seed": 1}},
}


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("case", list(CASES))
async def test_the_upstream_receives_the_bytes_litellm_sends(
    monkeypatch: pytest.MonkeyPatch, upstream: FakeUpstream, case: str, streamed: bool
) -> None:
    request = CASES[case]
    params = request.get("params") or {}
    if streamed and "logprobs" in params:
        params = {k: v for k, v in params.items() if k not in ("logprobs", "top_logprobs")}
    deltas: list[list[dict[str, Any]]] = []  # each path's

    async def call(llm: LLM) -> Completion:
        taken: list[dict[str, Any]] = []
        deltas.append(taken)

        async def on_delta(delta: dict[str, Any]) -> None:
            taken.append(delta)

        return await llm.complete(
            request["model"],
            [dict(m) for m in request["messages"]],
            list(request["tools"]),
            tool_choice=request.get("tool_choice"),
            max_tokens=request.get("max_tokens"),
            params=params,
            on_delta=on_delta if streamed else None,
        )

    (by_litellm, direct), (sent_by_litellm, sent_direct) = await both_ways(monkeypatch, upstream, call)
    assert isinstance(direct, Completion), direct
    assert raw_bodies(sent_direct) == raw_bodies(sent_by_litellm)
    assert [r.path for r in sent_direct] == [r.path for r in sent_by_litellm]
    assert direct == by_litellm
    if streamed:
        assert deltas[1] == deltas[0] and deltas[0]


@pytest.mark.parametrize("name", sorted(PARAMS))
async def test_no_parameter_sent_without_litellm_is_one_litellm_would_not_send(
    upstream: FakeUpstream, name: str
) -> None:
    """What the trace says litellm leaves out (``unsent_params``, litellm's own built request) is nothing for a
    parameter the call without litellm sends: the two paths never disagree on what reached the model."""
    at = Upstream(base_url=upstream.base_url)
    for model in ("gpt-4.1", "my-local-model"):
        assert await unsent_params(model, {name: PARAMS[name]}, at) == ("openai", f"openai/{model}", ())
        kwargs = llm_module.param_kwargs({name: PARAMS[name]}, openai_body=True)
        assert llm_module._unsent(llm_module._litellm(), f"openai/{model}", at.base_url, kwargs) == ()


@pytest.mark.parametrize("status", [400, 401, 403, 404, 405, 408, 409, 413, 422, 429, 500, 501, 502, 503, 504, 529])
async def test_a_failure_is_retried_and_told_as_litellm_tells_it(
    monkeypatch: pytest.MonkeyPatch, upstream: FakeUpstream, no_backoff: None, status: int
) -> None:
    at = Upstream(base_url=upstream.base_url, num_retries=2)

    async def call(llm: LLM) -> Completion:
        upstream.failures["gpt-4.1"] = [status] * 3
        return await llm.complete("gpt-4.1", CHAT, [], upstream=at)

    (by_litellm, direct), (sent_by_litellm, sent_direct) = await both_ways(monkeypatch, upstream, call, at)
    assert isinstance(by_litellm, Exception) and isinstance(direct, Exception)
    assert len(sent_direct) == len(sent_by_litellm)
    assert failure_reason(direct) == failure_reason(by_litellm)
    assert getattr(direct, "status_code", None) == getattr(by_litellm, "status_code", None) == status


async def test_an_unreachable_upstream_fails_as_with_litellm(monkeypatch: pytest.MonkeyPatch, no_backoff: None) -> None:
    with fake_upstream() as gone:
        base = gone.base_url
    at = Upstream(base_url=base, num_retries=0)
    outcomes = []
    for through_litellm in (True, False):
        with monkeypatch.context() as patch:
            if through_litellm:
                patch.setattr(openai_call, "route", lambda *args: None)
            llm = LLM(mock=False, upstream=at)
            with pytest.raises(Exception) as failed:
                await llm.complete("gpt-4.1", CHAT, [])
            await llm.aclose()
            outcomes.append(failure_reason(failed.value))
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
async def test_fallbacks_are_tried_in_order_as_litellm_tries_them(
    monkeypatch: pytest.MonkeyPatch, upstream: FakeUpstream, no_backoff: None, streamed: bool
) -> None:
    upstream.always_failing.update({"primary", "second"})
    at = Upstream(base_url=upstream.base_url, num_retries=1, fallbacks=("second", "third"))

    async def ignore(delta: dict[str, Any]) -> None:
        pass

    async def call(llm: LLM) -> Completion:
        return await llm.complete("primary", CHAT, [], upstream=at, on_delta=ignore if streamed else None)

    (by_litellm, direct), (sent_by_litellm, sent_direct) = await both_ways(monkeypatch, upstream, call, at)
    assert direct == by_litellm and direct.text == upstream.answer("third")
    assert [r.body["model"] for r in sent_direct] == [r.body["model"] for r in sent_by_litellm]


@pytest.mark.parametrize(
    ("model", "base_url", "fallbacks", "direct"),
    [
        ("gpt-4.1", "http://127.0.0.1:9/v1", (), True),
        ("gpt-4.1", None, (), False),  # OpenAI's own API without a base URL: litellm's
        ("gpt-4.1", "https://api.openai.com/v1", (), False),  # litellm strips cache marks and tool schemas there
        ("ollama/llama3", "http://127.0.0.1:9/v1", (), False),
        ("meta-llama/Llama-3", "http://127.0.0.1:9/v1", (), False),  # whether "meta-llama" is a provider: litellm's
        ("o3-mini", "http://127.0.0.1:9/v1", (), False),  # a reasoning model: litellm maps max_tokens
        ("gpt-5-mini", "http://127.0.0.1:9/v1", (), False),
        ("gpt-4.1", "http://127.0.0.1:9/v1", ("anthropic/claude-3-5-sonnet",), False),
    ],
)
def test_only_openai_compatible_models_at_a_base_url_go_without_litellm(
    model: str, base_url: str | None, fallbacks: tuple[str, ...], direct: bool
) -> None:
    assert (openai_call.route(model, base_url, fallbacks) is not None) == direct


@pytest.mark.parametrize(
    ("messages", "tools", "params"),
    [
        ([{"role": "user", "content": [{"type": "image_url", "image_url": "https://x/y.png"}]}], [], {}),
        ([{"role": "user", "content": [{"type": "file", "file": {"file_data": "data:..."}}]}], [], {}),
        ([{"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "r"}]}], [], {}),
        (CHAT, [{**TOOL, "function": {"name": "f", "parameters": {"type": "string", "pattern": "(?i)x"}}}], {}),
        (CHAT, [], {"max_completion_tokens": 5}),  # litellm renames it
        (CHAT, [], {"moderation": {"model": "omni"}}),  # litellm drops it
    ],
    ids=["bare image URL", "file part", "tool parts", "tool pattern", "renamed parameter", "dropped parameter"],
)
def test_a_request_litellm_would_rewrite_goes_through_litellm(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]], params: dict[str, Any]
) -> None:
    assert openai_call.body(("gpt-4.1",), messages, tools, None, params, None, False) is None


def test_a_server_calling_an_openai_compatible_upstream_never_imports_litellm(upstream: FakeUpstream) -> None:
    """In a fresh process: a call, streamed and not, its model limit, output cap and dollars, and nothing has
    imported litellm (its import and cost map cost a server ~125 MB)."""
    script = textwrap.dedent(
        f"""
        import asyncio, json, sys
        from components.context_window.token_estimator import resolve_model_limit
        from tda import cost
        from tda.llm import LLM, Upstream, output_limit, routes_of

        async def main():
            at = Upstream(base_url={upstream.base_url!r})
            llm = LLM(mock=False, upstream=at)
            done = await llm.complete("gpt-4.1", [{{"role": "user", "content": "hi"}}], [], max_tokens=50)
            async def on_delta(delta): pass
            await llm.complete("gpt-4.1", [{{"role": "user", "content": "hi"}}], [], on_delta=on_delta)
            assert await routes_of("gpt-4.1", at) == [("openai", "openai/gpt-4.1")]
            await llm.aclose()
            figures = [resolve_model_limit("gpt-4.1"), output_limit("gpt-4.1"), cost.dollars("gpt-4.1", 1000, 10)]
            print(json.dumps([done.text, *figures, "litellm" in sys.modules]))

        asyncio.run(main())
        """
    )
    env = bare_env(PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    text, limit, output, (input_usd, output_usd), imported = json.loads(out.stdout.strip().splitlines()[-1])
    assert text == upstream.answer("gpt-4.1")
    assert (limit, output) == ([1_047_576, "litellm"], 32_768)  # gpt-4.1's, from litellm's map file
    assert (input_usd, output_usd) == pytest.approx((1000 * 2e-6, 10 * 8e-6))
    assert imported is False
