"""Four agent frameworks run a tool loop through the gateway; the recorded upstream says what reached the model.

Each agent has its own system prompt (instructions) and one function tool, ``get_balance(account)``. The fake
upstream calls the tool first, then answers quoting its result (tests/gateway/upstream.py), so a loop is two model
calls. Run without any X-TDA-Session header (what an unmodified framework sends) and with one, with and without the
tool. Asserted on the upstream requests: the agent's system prompt comes first; each client model call made exactly
one upstream call; the tools upstream are exactly the agent's (none when it has none); the tool result reached the
model in the second call, paired with its call.

Frameworks: the raw `openai` SDK, the OpenAI Agents SDK (chat completions and its default, the Responses API; each
streamed too), LangChain + LangGraph (``create_react_agent``; streamed too) and pydantic-ai. None of them reaches
the network: they are given the gateway's URL and an httpx client of ours, and the Agents SDK's tracing is off.
"""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import openai
import pytest

from tests.gateway.servers import MODEL
from tests.gateway.support import (
    SYSTEM_PROMPT,
    ClientCalls,
    Gateway,
    answered_call_ids,
    balance_of,
    leading_instructions,
    tool_names,
    tool_results,
)
from tests.gateway.upstream import ECHO_PREFIX, TOOL_ARGUMENT, TOOL_RESULT_PREFIX, FakeUpstream

QUESTION = "What is the balance of account ACC-42?"
Run = Callable[[Gateway, ClientCalls, dict[str, str], bool], Awaitable[str]]
"""(gateway, call counter, extra headers, with the tool?) -> the agent's final text."""


def get_balance(account: str) -> str:
    """The current balance of a bank account.

    Args:
        account: The account number.
    """
    return balance_of(account)


def _openai_client(gateway: Gateway, calls: ClientCalls, headers: dict[str, str]) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=gateway.base_url, api_key=gateway.token, http_client=calls.http_client(headers), max_retries=0
    )


async def run_openai_sdk(gateway: Gateway, calls: ClientCalls, headers: dict[str, str], with_tool: bool) -> str:
    """The loop an application writes by hand with the SDK."""
    tool = {
        "type": "function",
        "function": {
            "name": "get_balance",
            "description": "The current balance of a bank account.",
            "parameters": {"type": "object", "properties": {"account": {"type": "string"}}, "required": ["account"]},
        },
    }
    tools: Any = [tool] if with_tool else openai.omit
    messages: list[Any] = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": QUESTION}]
    async with _openai_client(gateway, calls, headers) as client:
        for _ in range(4):
            reply = (await client.chat.completions.create(model=MODEL, messages=messages, tools=tools)).choices[0]
            if not reply.message.tool_calls:
                return reply.message.content or ""
            messages.append(reply.message.model_dump(exclude_none=True))
            for call in reply.message.tool_calls:
                result = get_balance(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise AssertionError("the loop did not end")


async def run_agents_sdk(
    gateway: Gateway,
    calls: ClientCalls,
    headers: dict[str, str],
    with_tool: bool,
    *,
    responses: bool = False,
    streamed: bool = False,
) -> str:
    """The Agents SDK on chat completions, or on its default, the Responses API (POST /v1/responses)."""
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)  # no traces to OpenAI's servers
    client = _openai_client(gateway, calls, headers)
    kind = OpenAIResponsesModel if responses else OpenAIChatCompletionsModel
    agent = Agent(
        name="Penny",
        instructions=SYSTEM_PROMPT,
        tools=[function_tool(get_balance)] if with_tool else [],
        model=kind(model=MODEL, openai_client=client),
    )
    try:
        if not streamed:
            return str((await Runner.run(agent, QUESTION, max_turns=4)).final_output)
        run = Runner.run_streamed(agent, QUESTION, max_turns=4)
        async for _ in run.stream_events():
            pass
        return str(run.final_output)
    finally:
        await client.close()


async def run_langgraph(
    gateway: Gateway, calls: ClientCalls, headers: dict[str, str], with_tool: bool, *, streamed: bool = False
) -> str:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.warnings import LangGraphDeprecatedSinceV10

    with warnings.catch_warnings():  # create_react_agent still works in langgraph 1.x; it moved to langchain
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        from langgraph.prebuilt import create_react_agent

        http = calls.http_client(headers)
        model = ChatOpenAI(
            model=MODEL,
            base_url=gateway.base_url,
            api_key=gateway.token,
            http_async_client=http,
            max_retries=0,
            streaming=streamed,
        )
        agent = create_react_agent(model, [tool(get_balance)] if with_tool else [], prompt=SYSTEM_PROMPT)
    try:
        result = await agent.ainvoke({"messages": [("user", QUESTION)]}, {"recursion_limit": 8})
    finally:
        await http.aclose()
    return str(result["messages"][-1].content)


async def run_pydantic_ai(gateway: Gateway, calls: ClientCalls, headers: dict[str, str], with_tool: bool) -> str:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = _openai_client(gateway, calls, headers)
    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))
    agent = Agent(model, instructions=SYSTEM_PROMPT, tools=[get_balance] if with_tool else [])
    try:
        result = await agent.run(QUESTION)
    finally:
        await client.close()
    return str(result.output)


FRAMEWORKS: dict[str, Run] = {
    "openai-sdk": run_openai_sdk,
    "agents-sdk": run_agents_sdk,
    "agents-sdk-streamed": partial(run_agents_sdk, streamed=True),
    "agents-sdk-responses": partial(run_agents_sdk, responses=True),
    "agents-sdk-responses-streamed": partial(run_agents_sdk, responses=True, streamed=True),
    "langgraph": run_langgraph,
    "langgraph-streamed": partial(run_langgraph, streamed=True),
    "pydantic-ai": run_pydantic_ai,
}


def _headers(with_session: bool) -> dict[str, str]:
    return {"X-TDA-Session": f"fw-{uuid.uuid4().hex[:12]}"} if with_session else {}


def check_tool_loop(answer: str, calls: ClientCalls, upstream: FakeUpstream) -> None:
    """Every property of a faithful tool loop; all that fail are listed together."""
    sent = upstream.requests
    problems = []
    if answer != TOOL_RESULT_PREFIX + balance_of(TOOL_ARGUMENT):
        problems.append(f"the loop did not end with the tool's result: {answer!r}")
    if calls.model_calls != 2:
        problems.append(f"the framework made {calls.model_calls} model calls for one tool loop, not 2")
    if len(sent) != calls.model_calls:
        problems.append(f"{calls.model_calls} client calls made {len(sent)} upstream calls")
    if sent and SYSTEM_PROMPT not in leading_instructions(sent[0]):
        problems.append(f"the agent's system prompt is not first upstream: {leading_instructions(sent[0])!r}")
    if [tool_names(r) for r in sent] != [["get_balance"]] * len(sent):
        problems.append(f"the tools upstream are not the agent's: {[tool_names(r) for r in sent]}")
    results = tool_results(sent[1]) if len(sent) > 1 else []
    if [balance_of(TOOL_ARGUMENT) in json.dumps(r.get("content")) for r in results] != [True]:
        problems.append(f"the second upstream call did not carry the tool result once: {results}")
    elif results[0]["tool_call_id"] not in answered_call_ids(sent[1]):
        problems.append("the tool result is not paired with its call upstream")
    assert not problems, "\n".join(problems)


def check_no_tools(answer: str, calls: ClientCalls, upstream: FakeUpstream) -> None:
    sent = upstream.requests
    problems = []
    if answer != ECHO_PREFIX + QUESTION:
        problems.append(f"the model's answer did not come back: {answer!r}")
    if not calls.model_calls == len(sent) == 1:
        problems.append(f"{calls.model_calls} client calls made {len(sent)} upstream calls")
    if sent and SYSTEM_PROMPT not in leading_instructions(sent[0]):
        problems.append(f"the agent's system prompt is not first upstream: {leading_instructions(sent[0])!r}")
    if any(tool_names(r) for r in sent):
        problems.append(f"tools reached the model though the agent has none: {[tool_names(r) for r in sent]}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("with_session", [False, True], ids=["no-session-header", "session-header"])
@pytest.mark.parametrize("framework", list(FRAMEWORKS))
async def test_a_tool_loop(gateway: Gateway, upstream: FakeUpstream, framework: str, with_session: bool):
    calls = ClientCalls()
    check_tool_loop(await FRAMEWORKS[framework](gateway, calls, _headers(with_session), True), calls, upstream)


@pytest.mark.parametrize("with_session", [False, True], ids=["no-session-header", "session-header"])
@pytest.mark.parametrize("framework", list(FRAMEWORKS))
async def test_an_agent_without_tools(gateway: Gateway, upstream: FakeUpstream, framework: str, with_session: bool):
    calls = ClientCalls()
    check_no_tools(await FRAMEWORKS[framework](gateway, calls, _headers(with_session), False), calls, upstream)


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
async def test_the_checks_hold_for_a_client_talking_to_the_upstream_itself(upstream: FakeUpstream, framework: str):
    """The harness's own control: with no gateway in between, every check above passes, so a failure above is
    the gateway's, not the framework's or the fake's."""
    direct = Gateway(upstream.base_url, "sk-direct")
    calls = ClientCalls()
    check_tool_loop(await FRAMEWORKS[framework](direct, calls, {}, True), calls, upstream)
    upstream.clear()
    calls = ClientCalls()
    check_no_tools(await FRAMEWORKS[framework](direct, calls, {}, False), calls, upstream)
