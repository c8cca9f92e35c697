"""tda in process: the three framework integrations run their own examples (examples/*.py) with the real framework
and a scripted model (no network). What the model was sent is checked against the window tda assembled for that
call, and against litellm's count of the model's input (an independent oracle): within the budget, although the
agent's whole conversation is not."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import litellm
import pytest

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 4_000
"""The examples' Window(model_limit=...)."""
FRAMEWORKS = ("langchain", "langgraph", "langchain_core", "pydantic_ai", "agents")


def example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the example's annotations through it
    spec.loader.exec_module(module)
    return module


def tokens(messages: list[dict[str, Any]]) -> int:
    return int(litellm.token_counter(model="gpt-4o", messages=messages))


def same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """Equal as chat messages (a tool-calling reply's empty content may be spelled None or "")."""

    def plain(m: dict[str, Any]) -> dict[str, Any]:
        return {k: (v or "") if k == "content" else v for k, v in m.items() if k != "name" or v}

    return [plain(m) for m in a] == [plain(m) for m in b]


def assert_budgeted(sent: list[dict[str, Any]], whole: list[dict[str, Any]]) -> None:
    """The model was sent the question, the tool loop and the newest history within the limit; not all of it."""
    assert tokens(whole) > LIMIT >= tokens(sent), (tokens(whole), tokens(sent))
    text = json.dumps(sent)
    assert "Where is order 7?" in text and "left the warehouse on Monday" in text
    assert "invoice 39." in text and len(sent) < len(whole)  # which older messages fill the rest is the type's call
    tool_result = next(i for i, m in enumerate(sent) if m["role"] == "tool")
    assert sent[tool_result - 1]["tool_calls"][0]["id"] == sent[tool_result]["tool_call_id"] == "call_1"


def test_langchain_middleware_sends_the_model_the_assembled_window():
    from langchain_core.messages import convert_to_openai_messages

    ex = example("langchain_agent")
    answer, model, window = ex.run()
    assert answer == "Order 7 left on Monday." and len(model.sent) == 2
    sent = convert_to_openai_messages(model.sent[-1])
    assert same(sent, window.last.messages)
    whole = [{"role": "system", "content": "Answer briefly."}, *ex.conversation()]
    assert_budgeted(sent, whole)
    assert sent[0] == {"role": "system", "content": "Answer briefly."}  # the agent's own prompt, first


async def test_langchain_middleware_in_an_async_agent():
    """``ainvoke`` goes through the async hook: the same window."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, convert_to_openai_messages

    from tda.integrations import Window
    from tda.integrations.langchain import TDAMiddleware

    ex = example("langchain_agent")
    window = Window("balanced", model="gpt-4o", model_limit=LIMIT)
    model = ex.ScriptedModel(messages=iter([AIMessage("Nothing to look up.")]))
    agent = create_agent(model, [], middleware=[TDAMiddleware(window)])
    result = await agent.ainvoke({"messages": ex.conversation()})
    assert result["messages"][-1].content == "Nothing to look up."
    sent = convert_to_openai_messages(model.sent[-1])
    assert same(sent, window.last.messages) and tokens(sent) <= LIMIT < tokens(ex.conversation())


def pydantic_ai_as_chat(messages: list[Any]) -> list[dict[str, Any]]:
    """What a pydantic-ai model is handed, as chat messages (the test's own reading of pydantic-ai's parts)."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart

    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            calls = [
                {
                    "id": p.tool_call_id,
                    "type": "function",
                    "function": {"name": p.tool_name, "arguments": p.args_as_json_str()},
                }
                for p in message.parts
                if isinstance(p, ToolCallPart)
            ]
            out.append({"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})})
            continue
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                out.append({"role": "user", "content": part.content})
            elif isinstance(part, ToolReturnPart):
                out.append({"role": "tool", "tool_call_id": part.tool_call_id, "content": str(part.content)})
            else:
                out.append({"role": "system", "content": part.content})
    return out


def responses_merged(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """As pydantic-ai sends a history: back-to-back replies (a recalled answer after another) are one response."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if (
            out
            and m["role"] == out[-1]["role"] == "assistant"
            and not (m.get("tool_calls") or out[-1].get("tool_calls"))
        ):
            out[-1] = {**out[-1], "content": (out[-1]["content"] or "") + (m["content"] or "")}
        else:
            out.append(m)
    return out


def test_pydantic_ai_capability_sends_the_model_the_assembled_window():
    ex = example("pydantic_ai_agent")
    answer, model, window = asyncio.run(ex.run())
    assert answer == "Order 7 left on Monday." and len(model.sent) == 2
    sent = pydantic_ai_as_chat(model.sent[-1])
    instructions = {"role": "system", "content": "Answer briefly."}
    assert model.sent[-1][-1].instructions == "Answer briefly."  # still pydantic-ai's to send
    assert window.last.messages[0] == instructions
    # A system message the window puts after the first user message reaches a model without inline system prompts
    # as pydantic-ai renders it (its profile's ``supports_inline_system_prompts``): a user message in <system> tags.
    expected = [
        {"role": "user", "content": f"<system>{m['content']}</system>"} if m["role"] == "system" and i else m
        for i, m in enumerate(window.last.messages[1:])
    ]
    assert same(sent, responses_merged(expected))
    whole = [instructions, *pydantic_ai_as_chat([*ex.history()]), {"role": "user", "content": "Where is order 7?"}]
    assert_budgeted([instructions, *sent], whole)
    assert window.last.snapshot.total_used >= tokens([instructions, *sent])  # the tool's schema counted too


def test_agents_sdk_session_sends_the_model_the_assembled_window():
    from agents.models.chatcmpl_converter import Converter

    ex = example("openai_agents_session")
    answer, model, window = asyncio.run(ex.run())
    assert answer == "Order 7 left on Monday." and len(model.sent) == 2
    sent = Converter.items_to_messages(model.sent[-1])
    instructions = {"role": "system", "content": "Answer briefly."}
    assert window.last.messages[0] == instructions and same(sent, window.last.messages[1:])
    whole = [instructions, *ex.history(), {"role": "user", "content": "Where is order 7?"}]
    assert_budgeted([instructions, *sent], whole)


async def test_agents_sdk_session_keeps_every_item_and_serves_the_window():
    """Without the per-call filter the session alone budgets the history it hands the runner; its store keeps all."""
    from agents import Agent, Runner

    from tda.integrations import Window
    from tda.integrations.openai_agents import TDASession

    ex = example("openai_agents_session")
    ex.set_tracing_disabled(True)
    window = Window("balanced", model="gpt-4o", model_limit=LIMIT)
    session = TDASession("s", window)
    assert await session.get_items() == []  # nothing asked yet: nothing to assemble
    await session.add_items(ex.history())
    model = ex.ScriptedModel()
    agent = Agent(name="A", instructions="Answer briefly.", model=model, tools=[ex.order_status])
    result = await Runner.run(agent, "Where is order 7?", session=session)
    assert result.final_output == "Order 7 left on Monday."
    first = chat_of_items(model.sent[0])
    assert first[-1] == {"role": "user", "content": "Where is order 7?"}
    assert tokens(first) <= LIMIT < tokens(chat_of_items([*ex.history(), {"role": "user", "content": "x"}]))
    assert "invoice 39." in json.dumps(first)
    stored = await session.store.get_items()
    assert len(stored) == len(ex.history()) + 4  # the question, the call, its result, the answer: nothing lost
    assert await session.pop_item() == stored[-1]
    await session.clear_session()
    assert await session.store.get_items() == []


def chat_of_items(items: list[Any]) -> list[dict[str, Any]]:
    from agents.models.chatcmpl_converter import Converter

    return Converter.items_to_messages(items)


def test_a_conversation_without_a_question_is_refused_with_what_to_change():
    from tda.integrations import Window

    with pytest.raises(ValueError, match="no user message"):
        asyncio.run(Window().assemble([{"role": "system", "content": "Hi."}]))
    with pytest.raises(ValueError, match="unknown window type 'roomy'"):
        Window("roomy")


@pytest.mark.parametrize("name", ["langchain_agent", "pydantic_ai_agent", "openai_agents_session"])
def test_the_examples_run_as_scripts(name):
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / f"{name}.py")],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[-1] == "Order 7 left on Monday." and lines[-2].startswith("Balanced: ")
    assert len([line for line in lines if line.startswith("model ")]) == 2


def test_importing_tda_imports_no_framework():
    code = "import sys, tda.integrations, tda.app; print([m for m in sys.modules if m.split('.')[0] in %r])"
    done = subprocess.run(
        [sys.executable, "-c", code % (FRAMEWORKS,)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"


def test_pydantic_ai_parts_the_window_does_not_read_stay_in_place():
    """A part with no chat message (a tool-availability marker) goes with the message after it, and an image in a
    user prompt stays in the prompt: the window drops neither."""
    from pydantic_ai.messages import BinaryContent, ModelRequest, ToolAvailabilityDeltaPart, UserPromptPart

    from tda.integrations import Window
    from tda.integrations.pydantic_ai import assembled

    marker = ToolAvailabilityDeltaPart(tools_added=["order_status"])
    image = BinaryContent(data=b"\x89PNG\r\n", media_type="image/png")
    question = UserPromptPart(["What is in this picture?", image])
    out = asyncio.run(assembled(Window(), [ModelRequest(parts=[marker, question])]))
    assert [type(m).__name__ for m in out] == ["ModelRequest"]
    assert out[0].parts[-2:] == [marker, question]
