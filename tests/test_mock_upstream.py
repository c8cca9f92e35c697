"""The mock model's text answers go through the OpenAI SDK at an in-process upstream (tda/mock_upstream.py), not
litellm: the same Completion and the same streamed deltas as litellm's ``mock_response`` (the oracle: the same call
with the light path turned off), and a server answering with the mock model never imports litellm."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tda import mock_upstream
from tda.llm import LLM, MOCK_ANSWER, Completion, Upstream
from tests.ops.live import bare_env

ROOT = Path(__file__).resolve().parent.parent
CHAT = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is my balance?"}]
TOOL = {"type": "function", "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}}}


async def _answer(
    llm: LLM, model: str, params: dict[str, Any] | None, streamed: bool, upstream: Upstream | None = None
) -> tuple[Completion, list[dict[str, Any]]]:
    deltas: list[dict[str, Any]] = []

    async def on_delta(delta: dict[str, Any]) -> None:
        deltas.append(delta)

    done = await llm.complete(
        model, CHAT, [TOOL], max_tokens=50, params=params, upstream=upstream, on_delta=on_delta if streamed else None
    )
    return done, deltas


async def _both_ways(
    monkeypatch: pytest.MonkeyPatch, answer: str, model: str, params: dict[str, Any] | None, streamed: bool
) -> tuple[tuple[Completion, list[dict[str, Any]]], tuple[Completion, list[dict[str, Any]]]]:
    """(light path, litellm's mock_response) for the same call."""
    llm = LLM(mock=True, mock_answer=answer)
    light = await _answer(llm, model, params, streamed)
    with monkeypatch.context() as patched:
        patched.setattr(mock_upstream, "serves", lambda *_: False)
        oracle = await _answer(llm, model, params, streamed)
    await llm.aclose()
    return light, oracle


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(
    "params",
    [None, {"n": 2}, {"temperature": 0.3, "logprobs": True, "response_format": {"type": "json_object"}}],
    ids=["plain", "n=2", "parameters"],
)
@pytest.mark.parametrize("model", ["gpt-4o", "openai/gpt-4.1-mini"])
async def test_the_mock_answer_is_litellms_mock_answer(
    monkeypatch: pytest.MonkeyPatch, model: str, params: dict[str, Any] | None, streamed: bool
) -> None:
    light, oracle = await _both_ways(monkeypatch, MOCK_ANSWER, model, params, streamed)
    assert light[1] == oracle[1]  # the same deltas, three characters at a time (for each of n choices)
    if streamed and params and params.get("n"):
        # litellm's stream builder keeps one choice of n; the SDK path keeps all n, as for a real upstream
        assert light[0] == Completion(**{**oracle[0].__dict__, "more": light[0].more})
        assert [c.text for c in light[0].more] == [MOCK_ANSWER]
    else:
        assert light[0] == oracle[0]
    assert light[0].tokens_in == 0  # a mock's usage is made up: the caller reports the window's own count


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=st.text(min_size=1, max_size=40).filter(lambda t: not t.startswith(mock_upstream.LITELLM_SIGNALS)))
async def test_any_configured_answer_comes_back_as_litellm_gives_it(
    monkeypatch: pytest.MonkeyPatch, answer: str
) -> None:
    for streamed in (False, True):
        light, oracle = await _both_ways(monkeypatch, answer, "gpt-4o", None, streamed)
        assert light == oracle
        assert light[0].text == answer


async def test_the_mock_at_a_base_url_answers_without_calling_it() -> None:
    """A profile's upstream is checked as before, but the mock never sends anything there."""
    llm = LLM(mock=True)
    done, _ = await _answer(llm, "llama3", None, False, Upstream(base_url="http://127.0.0.1:9/v1"))
    assert done.text == MOCK_ANSWER
    await llm.aclose()


@pytest.mark.parametrize(
    ("answer", "model", "base_url", "served"),
    [
        (MOCK_ANSWER, "gpt-4o", None, True),
        ("", "gpt-4o", None, True),
        (MOCK_ANSWER, "ollama/llama3", "http://127.0.0.1:9/v1", True),
        (MOCK_ANSWER, "claude-3-5-sonnet-20241022", None, False),  # only litellm places (or refuses) it
        (MOCK_ANSWER, "no-such-model", None, False),  # litellm's mock refuses a name it cannot route
        ("litellm.RateLimitError", "gpt-4o", None, False),  # litellm's mock raises it
        ("Exception: mock_streaming_error", "gpt-4o", None, False),
        (ValueError("provider down"), "gpt-4o", None, False),
        ({"choices": []}, "gpt-4o", None, False),
    ],
)
def test_only_a_plain_text_for_a_model_routed_without_litellm_skips_it(
    answer: Any, model: str, base_url: str | None, served: bool
) -> None:
    assert mock_upstream.serves(answer, model, base_url) is served
    assert LLM(mock=True, mock_answer=answer, upstream=Upstream(base_url=base_url)).needs_litellm(model) is not served


def test_a_server_answering_with_the_mock_model_never_imports_litellm(tmp_path: Path) -> None:
    """In a fresh process, as `tda serve` runs with the default settings (the mock model, gpt-4o): start-up with
    its warm-up, a gateway call whole and streamed and a native turn all answer, and nothing imported litellm."""
    script = textwrap.dedent(
        f"""
        import asyncio, json, sys
        from pathlib import Path
        from quart.testing import TestApp
        from tda.app import create_app
        from tda.config import Settings

        async def main():
            data = Path({str(tmp_path)!r})
            settings = Settings(data_dir=data, modules_dir=data / "modules", embedder="hashing")
            app = create_app(settings, migrate=True, warm_up_knowledge=False)
            async with TestApp(app, startup_timeout=120, shutdown_timeout=120) as running:  # as conftest's
                svc = running.app.extensions["tda"]
                token, _ = await svc.store.tokens.create("probe", "admin")
                auth = {{"Authorization": f"Bearer {{token}}"}}
                client = running.test_client()
                body = {{"model": "gpt-4o", "messages": [{{"role": "user", "content": "hi"}}]}}
                whole = await client.post("/v1/chat/completions", json=body, headers=auth)
                whole = (await whole.get_json())["choices"][0]["message"]["content"]
                streamed = await client.post("/v1/chat/completions", json={{**body, "stream": True}}, headers=auth)
                events = (await streamed.get_data(as_text=True)).split("\\n\\n")
                pieces = [json.loads(e[6:]) for e in events if e.startswith("data: {{")]
                text = "".join(c["choices"][0]["delta"].get("content") or "" for c in pieces if c["choices"])
                profile = {{"id": "p1", "type": "llm_only", "context_window_type_id": "balanced"}}
                assert (await client.post("/v1/profiles", json=profile, headers=auth)).status_code == 201
                session = {{"id": "s1", "profile_id": "p1"}}
                assert (await client.post("/v1/sessions", json=session, headers=auth)).status_code == 201
                query = {{"query": "How are refunds handled?"}}
                turn = await client.post("/v1/sessions/s1/turns", json=query, headers=auth)
                native = json.dumps(await turn.get_json()) if turn.status_code == 201 else turn.status_code
                print(json.dumps([settings.mock_model, whole, text, native, "litellm" in sys.modules]))

        asyncio.run(main())
        """
    )
    env = bare_env(PYTHONPATH=str(ROOT), HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    mock, whole, streamed, native, imported = json.loads(out.stdout.strip().splitlines()[-1])
    assert mock is True
    assert whole == streamed == MOCK_ANSWER
    assert MOCK_ANSWER in native
    assert imported is False
