"""litellm's per-call logging runs only when someone reads it: an operator's callbacks still see every call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tda.llm import LLM, _litellm

MESSAGES = [{"role": "user", "content": "Which regions grew fastest?"}]


@pytest.fixture
def litellm() -> Any:
    return _litellm()


@pytest.fixture
def success_logs(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every async success log litellm runs, by model: its handler, wrapped."""
    from litellm.litellm_core_utils.litellm_logging import Logging

    seen: list[str] = []
    original = Logging.async_success_handler

    async def recorded(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(self.model)
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(Logging, "async_success_handler", recorded)
    return seen


async def until(done: Any) -> None:
    """litellm's logging runs in a task of its own worker, after the reply: wait for it (at most 5 s)."""
    for _ in range(250):
        if done():
            return
        await asyncio.sleep(0.02)


async def test_without_callbacks_a_call_runs_no_litellm_logging(litellm: Any, success_logs: list[str]):
    done = await LLM(mock=True).complete("gpt-4o", MESSAGES, [])
    assert done.text
    # A direct call, after tda's: its log is queued after the one tda's call would have queued.
    await litellm.acompletion(model="gpt-4o-mini", messages=MESSAGES, mock_response="direct")
    await until(lambda: success_logs)
    assert success_logs == ["gpt-4o-mini"]  # the probe sees the direct call's log, and no log of tda's call


async def test_a_registered_callback_still_sees_every_call(litellm: Any, monkeypatch: pytest.MonkeyPatch):
    from litellm.integrations.custom_logger import CustomLogger

    class Recorder(CustomLogger):
        def __init__(self) -> None:
            super().__init__()
            self.models: list[str] = []

        async def async_log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any):
            self.models.append(kwargs["model"])

    async def ignore(_: dict[str, Any]) -> None:
        return None

    recorder = Recorder()
    monkeypatch.setattr(litellm, "callbacks", [recorder])
    await LLM(mock=True).complete("gpt-4o", MESSAGES, [])
    await LLM(mock=True).complete("gpt-4o-mini", MESSAGES, [], on_delta=ignore)
    await until(lambda: len(recorder.models) == 2)
    assert sorted(recorder.models) == ["gpt-4o", "gpt-4o-mini"]


async def test_a_call_ended_in_another_context_keeps_its_reply_and_restores_the_flag(
    litellm: Any, monkeypatch: pytest.MonkeyPatch
):
    """A caller that steps a coroutine inline first and in a task after (two contexts) cannot make the reset fail:
    the reply was thrown away with 'Token ... was created in a different Context'."""
    import contextvars

    from litellm._internal_context import is_internal_call

    from tda.llm import _CALLBACK_LISTS, _logged_only_if_read

    for name in _CALLBACK_LISTS:  # no reader: the flag is set (an earlier test's call may have registered one)
        monkeypatch.setattr(litellm, name, [], raising=False)
    block = _logged_only_if_read(litellm)
    block.__enter__()
    assert is_internal_call.get() is True
    other = contextvars.copy_context()  # what a task created after the first step runs in
    other.run(block.__exit__, None, None, None)
    assert other.run(is_internal_call.get) is False
    is_internal_call.set(False)
