"""POST /v1/responses driven by the real `openai` SDK (and the Agents SDK, pydantic-ai) against a served app.

The model is litellm's mock, scripted reply by reply (tests.service.support.ScriptedModel); ``model.sent`` is what
the service sent it, in chat-completions form: the oracle for what reached the model.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.service.support import Served
from tests.service.test_chat_completions import ORDERS

LOOKUP = {
    "type": "function",
    "name": "lookup_orders",
    "description": "Look up a customer's orders. Returns one row per order with its status and amount.",
    "parameters": {
        "type": "object",
        "properties": {"customer": {"type": "string", "description": "The customer's name, e.g. ACME."}},
        "required": ["customer"],
        "additionalProperties": False,
    },
    "strict": True,
}
AS_CHAT_TOOL = {
    "type": "function",
    "function": {k: LOOKUP[k] for k in ("name", "description", "parameters", "strict")},
}
INSTRUCTIONS = "You are the sales agent. Answer in one sentence."
QUESTION = "How many open orders does ACME have?"


async def _sessions(served: Served) -> set[str]:
    return {s["id"] for s in (await served.get("/v1/sessions"))["sessions"]}


def _items(response: Any) -> list[dict[str, Any]]:
    """A response's output as input items for the next call (what the Agents SDK sends back)."""
    return [item.model_dump(exclude_none=True) for item in response.output]


async def test_a_tool_loop_through_responses_create_with_instructions(served: Served):
    served.model.replies = [[("call_1", "lookup_orders", {"customer": "ACME"})], "ACME has 3 open orders."]
    client = served.client()

    first = await client.responses.create(model="tda", instructions=INSTRUCTIONS, input=QUESTION, tools=[LOOKUP])
    assert first.status == "completed" and first.object == "response"
    [call] = first.output
    assert (call.type, call.call_id, call.name, json.loads(call.arguments)) == (
        "function_call",
        "call_1",
        "lookup_orders",
        {"customer": "ACME"},
    )
    assert first.output_text == ""
    assert first.instructions == INSTRUCTIONS and first.tools[0].name == "lookup_orders"
    assert first.usage.input_tokens > 0 and first.usage.total_tokens == first.usage.input_tokens + 9
    sent = served.model.sent[0]
    assert sent["messages"] == [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": QUESTION}]
    assert sent["tools"] == [AS_CHAT_TOOL]

    loop = [
        {"role": "user", "content": QUESTION},
        *_items(first),
        {"type": "function_call_output", "call_id": "call_1", "output": json.dumps(ORDERS)},
    ]
    second = await client.responses.create(model="tda", instructions=INSTRUCTIONS, input=loop, tools=[LOOKUP])
    assert second.output_text == "ACME has 3 open orders."
    assert second.output[0].type == "message" and second.output[0].role == "assistant"
    sent = served.model.sent[1]["messages"]
    assert sent[0] == {"role": "system", "content": INSTRUCTIONS}
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[2]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "lookup_orders", "arguments": call.arguments}}
    ]
    assert sent[3] == {"role": "tool", "content": json.dumps(ORDERS), "tool_call_id": "call_1"}


async def test_a_streamed_tool_loop_arrives_as_response_events(served: Served):
    served.model.replies = [
        "Let me look that up.",
        [("call_2", "lookup_orders", {"customer": "ACME"})],
        "Three open orders, all in all.",
    ]
    client = served.client()
    headers = {"X-TDA-Session": "stream-r"}
    stream = await client.responses.create(
        model="tda", instructions=INSTRUCTIONS, input=QUESTION, tools=[LOOKUP], stream=True, extra_headers=headers
    )
    events = [event async for event in stream]
    kinds = [e.type for e in events]
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) > 1 and "".join(deltas) == "Let me look that up."  # really in pieces
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].response.output_text == "Let me look that up."
    assert events[0].response.id == events[-1].response.id and events[0].response.id.endswith("_stream-r")

    # The SDK's stream helper checks each event against the snapshot it accumulates.
    async with client.responses.stream(
        model="tda", instructions=INSTRUCTIONS, input=QUESTION, tools=[LOOKUP], extra_headers=headers
    ) as stream:
        kinds = [event.type async for event in stream]
        final = await stream.get_final_response()
    assert kinds[-5:] == [
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    [call] = final.output
    assert (call.type, call.call_id, call.name) == ("function_call", "call_2", "lookup_orders")

    async with client.responses.stream(
        model="tda",
        instructions=INSTRUCTIONS,
        previous_response_id=final.id,
        input=[{"type": "function_call_output", "call_id": "call_2", "output": "3 rows"}],
        tools=[LOOKUP],
    ) as stream:
        done = await stream.get_final_response()
    assert done.output_text == "Three open orders, all in all."
    sent = served.model.sent[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[2]["tool_calls"][0]["id"] == "call_2" and sent[3]["tool_call_id"] == "call_2"
    turns = (await served.get("/v1/sessions/stream-r/turns"))["turns"]
    assert [t["turn"] for t in turns] == [1]  # a retry and its tool loop: one turn, recorded once
    assert turns[0]["answer"] == "Three open orders, all in all."

    # Two calls in one reply: each item is opened, streamed and closed before the next, as OpenAI sends them.
    served.model.replies = [[("call_a", "lookup_orders", {"customer": "ACME"}), ("call_b", "lookup_orders", {})]]
    stream = await client.responses.create(model="tda", input=QUESTION, tools=[LOOKUP], stream=True)
    events = [event async for event in stream]
    one_call = [
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ]
    assert [e.type for e in events] == [
        "response.created",
        "response.in_progress",
        *one_call,
        *one_call,
        "response.completed",
    ]
    assert [getattr(e, "output_index", None) for e in events[2:-1]] == [0] * 4 + [1] * 4
    assert [(c.call_id, c.arguments) for c in events[-1].response.output] == [
        ("call_a", json.dumps({"customer": "ACME"})),
        ("call_b", "{}"),
    ]

    # Text, then a call: the message is closed before the call opens, and comes first in the output.
    served.model.replies = [("Let me check.", [("call_c", "lookup_orders", {"customer": "ACME"})])]
    async with client.responses.stream(model="tda", input=QUESTION, tools=[LOOKUP]) as stream:
        kinds = [(event.type, getattr(event, "output_index", None)) async for event in stream]
        final = await stream.get_final_response()
    assert kinds.index(("response.output_item.done", 0)) < kinds.index(("response.output_item.added", 1))
    assert [item.type for item in final.output] == ["message", "function_call"]
    assert final.output_text == "Let me check." and final.output[1].call_id == "call_c"


async def test_previous_response_id_continues_the_conversation_without_a_session_header(served: Served):
    served.model.replies = ["Hello Alice.", "Your name is Alice.", "Bonjour Alice."]
    client = served.client()
    before = await _sessions(served)
    first = await client.responses.create(model="tda", instructions="Be brief.", input="My name is Alice.")
    raw = await client.responses.with_raw_response.create(
        model="tda", instructions="Be kind.", input="What is my name?", previous_response_id=first.id
    )
    second = raw.parse()
    assert second.output_text == "Your name is Alice." and second.previous_response_id == first.id
    assert served.model.sent[1]["messages"] == [
        {"role": "system", "content": "Be kind."},  # the previous response's instructions are not carried over
        {"role": "user", "content": "My name is Alice."},
        {"role": "assistant", "content": "Hello Alice."},
        {"role": "user", "content": "What is my name?"},
    ]
    [session] = await _sessions(served) - before  # OpenAI stores responses: the chain is one session
    assert raw.headers["X-TDA-Session"] == session
    turns = (await served.get(f"/v1/sessions/{session}/turns"))["turns"]
    assert [(t["turn"], t["query"]) for t in turns] == [(1, "My name is Alice."), (2, "What is my name?")]

    # Going on from the first response again forks: the model reads that conversation, not the second turn.
    await client.responses.create(model="tda", input="Say it in French.", previous_response_id=first.id)
    assert [m["content"] for m in served.model.sent[2]["messages"]] == [
        "My name is Alice.",
        "Hello Alice.",
        "Say it in French.",
    ]
    stored = await client.responses.retrieve(second.id)
    assert stored.id == second.id and stored.output_text == "Your name is Alice."


async def test_previous_response_id_within_a_named_session_and_its_tool_loop(served: Served):
    served.model.replies = [[("call_3", "lookup_orders", {"customer": "ACME"})], "Three.", "242.75 in all."]
    client = served.client()
    session = {"X-TDA-Session": "chain-1"}
    first = await client.responses.create(
        model="tda", instructions=INSTRUCTIONS, input=QUESTION, tools=[LOOKUP], extra_headers=session
    )
    outputs = [{"type": "function_call_output", "call_id": "call_3", "output": json.dumps(ORDERS)}]
    second = await client.responses.create(
        model="tda",
        instructions=INSTRUCTIONS,
        input=outputs,
        previous_response_id=first.id,
        tools=[LOOKUP],
        extra_headers=session,
    )
    third = await client.responses.create(
        model="tda", input="And in total?", previous_response_id=second.id, extra_headers=session
    )
    assert third.output_text == "242.75 in all."
    sent = served.model.sent[2]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[2]["content"] == json.dumps(ORDERS) and sent[3]["content"] == "Three."
    turns = (await served.get("/v1/sessions/chain-1/turns"))["turns"]
    assert [t["turn"] for t in turns] == [1, 2] and turns[0]["results"] == [{"tool": "lookup_orders", "rows": ORDERS}]
    with pytest.raises(openai.ConflictError, match="send X-TDA-Session: chain-1"):
        await client.responses.create(
            model="tda", input="hi", previous_response_id=third.id, extra_headers={"X-TDA-Session": "other"}
        )


async def test_store_false_without_a_session_is_stateless(served: Served):
    client = served.client()
    before = await _sessions(served)
    response = await client.responses.create(model="tda", input="hi", store=False)
    assert response.output_text == "Done."
    assert await _sessions(served) == before
    with pytest.raises(openai.NotFoundError, match="not found"):
        await client.responses.create(model="tda", input="again", previous_response_id=response.id)


async def test_parameters_and_json_schema_format_reach_the_model(served: Served):
    client = served.client()
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    image = "data:image/png;base64,iVBORw0KGgo="
    await client.responses.create(
        model="tda",
        input=[
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is in this picture?"},
                    {"type": "input_image", "image_url": image, "detail": "low"},
                ],
            },
        ],
        text={"format": {"type": "json_schema", "name": "reply", "schema": schema, "strict": True}},
        tools=[LOOKUP],
        tool_choice={"type": "function", "name": "lookup_orders"},
        temperature=0.2,
        top_p=0.9,
        max_output_tokens=50,
        parallel_tool_calls=False,
        metadata={"run": "r1"},
        user="end-user-1",
        reasoning={"effort": "low", "summary": "auto"},
        store=False,
        truncation="disabled",
        include=["message.output_text.logprobs"],
        prompt_cache_retention="24h",
    )
    sent = served.model.sent[-1]
    assert sent["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image_url", "image_url": {"url": image, "detail": "low"}},
            ],
        }
    ]
    assert sent["max_tokens"] == 50
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "lookup_orders"}}
    assert sent["params"] == {
        "temperature": 0.2,
        "top_p": 0.9,
        "metadata": {"run": "r1"},
        "user": "end-user-1",
        "parallel_tool_calls": False,
        "reasoning_effort": "low",
        "response_format": {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": True}},
        "prompt_cache_retention": "24h",  # OpenAI's 24-hour prompt cache, asked for on chat completions too
    }


async def test_mistakes_get_openai_errors_that_say_what_to_change_and_create_nothing(served: Served):
    client = served.client()
    before = await _sessions(served)
    session = {"X-TDA-Session": "never"}
    with pytest.raises(openai.UnprocessableEntityError, match="'web_search' tools are hosted by OpenAI"):
        await client.responses.create(model="tda", input="hi", tools=[{"type": "web_search"}], extra_headers=session)
    with pytest.raises(openai.NotFoundError, match="resp_nope"):
        await client.responses.create(model="tda", input="hi", previous_response_id="resp_nope")
    with pytest.raises(openai.NotFoundError, match="not found"):  # a real snapshot id, another session's name
        await client.responses.create(model="tda", input="hi", previous_response_id="resp_1_someone-else")
    with pytest.raises(openai.UnprocessableEntityError, match="not 'item_reference'"):
        await client.responses.create(model="tda", input=[{"type": "item_reference", "id": "msg_1"}])
    with pytest.raises(openai.UnprocessableEntityError, match="need a user message"):
        await client.responses.create(model="tda", input=[{"role": "developer", "content": "rules"}])
    with pytest.raises(openai.UnprocessableEntityError, match="needs its call_id"):
        bad_call = {"type": "function_call", "name": "lookup_orders", "arguments": "{}"}
        await client.responses.create(model="tda", input=[{"role": "user", "content": "hi"}, bad_call])
    with pytest.raises(openai.UnprocessableEntityError, match="send the image as image_url"):
        image = {"type": "input_image", "file_id": "file-1", "detail": "auto"}
        await client.responses.create(model="tda", input=[{"role": "user", "content": [image]}])
    with pytest.raises(openai.UnprocessableEntityError, match="a json_schema format needs a name and a schema"):
        bad_format = {"format": {"type": "json_schema", "schema": {"type": "object"}}}
        await client.responses.create(model="tda", input="hi", text=bad_format, extra_headers=session)
    with pytest.raises(openai.UnprocessableEntityError, match="tool_choice is 'none', 'auto', 'required'"):
        choice = {"type": "file_search"}
        await client.responses.create(
            model="tda", input="hi", tools=[LOOKUP], tool_choice=choice, extra_headers=session
        )
    with pytest.raises(openai.UnprocessableEntityError, match="names no provider"):
        await client.responses.create(model="no-such-model-xyz", input="hi", extra_headers=session)
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        await client.responses.create(model="tda", input="hi", temperature=7)
    assert caught.value.body["errors"][0]["loc"] == "temperature"
    assert served.model.sent == [] and await _sessions(served) == before  # nothing sent, nothing half-written


async def test_an_agents_sdk_agent_runs_its_tool_loop_on_the_responses_api(served: Served):
    agents = pytest.importorskip("agents")
    agents.set_tracing_disabled(True)  # no traces to OpenAI's servers
    served.model.replies = [[("call_5", "lookup_orders", {"customer": "ACME"})], "ACME has 3 open orders."]
    seen: list[str] = []

    @agents.function_tool
    def lookup_orders(customer: str) -> str:
        """Look up a customer's orders.

        Args:
            customer: The customer's name.
        """
        seen.append(customer)
        return json.dumps(ORDERS)

    agent = agents.Agent(
        name="Sales",
        instructions=INSTRUCTIONS,
        tools=[lookup_orders],
        model=agents.OpenAIResponsesModel(model="tda", openai_client=served.client()),
    )
    result = await agents.Runner.run(agent, QUESTION, max_turns=4)
    assert result.final_output == "ACME has 3 open orders." and seen == ["ACME"]
    first, second = served.model.sent
    for sent in (first, second):
        assert sent["messages"][0] == {"role": "system", "content": INSTRUCTIONS}
        assert [t["function"]["name"] for t in sent["tools"]] == ["lookup_orders"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][3] == {"role": "tool", "content": json.dumps(ORDERS), "tool_call_id": "call_5"}

    # The SDK's server-side conversation: it sends only the new input and the id of the last response.
    served.model.replies = ["242.75 in all."]
    followup = await agents.Runner.run(agent, "And in total?", previous_response_id=result.last_response_id)
    assert followup.final_output == "242.75 in all."
    sent = served.model.sent[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[0]["content"] == INSTRUCTIONS and sent[4]["content"] == "ACME has 3 open orders."

    streamed = agents.Runner.run_streamed(agent, QUESTION, max_turns=4)
    served.model.replies = [[("call_6", "lookup_orders", {"customer": "ACME"})], "Still 3."]
    async for _ in streamed.stream_events():
        pass
    assert streamed.final_output == "Still 3." and seen == ["ACME", "ACME"]


async def test_pydantic_ai_openai_models_complete_their_tool_loop(served: Served, monkeypatch: pytest.MonkeyPatch):
    """pydantic-ai's ``openai:`` models speak the Responses API; pointed at tda by the environment, as a user would."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent

    monkeypatch.setenv("OPENAI_BASE_URL", served.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", served.token)

    def lookup_orders(customer: str) -> str:
        """Look up a customer's orders."""
        return json.dumps(ORDERS)

    agent = Agent("openai:tda", instructions=INSTRUCTIONS, tools=[lookup_orders])
    served.model.replies = [[("call_8", "lookup_orders", {"customer": "ACME"})], "ACME has 3 open orders."]
    async with agent:  # its own HTTP client, closed on the way out
        result = await agent.run(QUESTION)
    assert result.output == "ACME has 3 open orders."
    first, second = served.model.sent
    assert first["messages"][0] == {"role": "system", "content": INSTRUCTIONS}
    assert [t["function"]["name"] for t in first["tools"]] == ["lookup_orders"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][3] == {"role": "tool", "content": json.dumps(ORDERS), "tool_call_id": "call_8"}

    served.model.replies = [[("call_9", "lookup_orders", {"customer": "ACME"})], "Still three open orders."]
    agent = Agent("openai-responses:tda", instructions=INSTRUCTIONS, tools=[lookup_orders])
    async with agent, agent.run_stream(QUESTION) as streamed:
        text = await streamed.get_output()
    assert text == "Still three open orders."
    assert served.model.sent[-1]["messages"][3]["tool_call_id"] == "call_9"


async def test_each_response_of_a_turn_continues_from_its_own_reply_past_a_failure_and_a_retry(served: Served):
    """Which recorded reply a response id names when a turn's call failed (the SDK retries a 502) or was retried."""
    client = served.client()
    session = {"X-TDA-Session": "steps-1"}
    served.model.replies = [RuntimeError("provider down"), "Hello Alice.", "Noted.", "Got it.", "Bonjour.", "Hola."]
    with pytest.raises(openai.APIStatusError, match="the model call failed"):
        await client.responses.create(model="tda", input="My name is Alice.", extra_headers=session)
    first = await client.responses.create(model="tda", input="My name is Alice.", extra_headers=session)
    assert first.output_text == "Hello Alice."
    noted = await client.responses.create(
        model="tda", input="I live in Paris.", previous_response_id=first.id, extra_headers=session
    )
    retried = await client.responses.create(
        model="tda", input="I live in Paris.", previous_response_id=first.id, extra_headers=session
    )
    assert (noted.output_text, retried.output_text) == ("Noted.", "Got it.")
    for previous, reply in ((noted, "Noted."), (retried, "Got it.")):
        await client.responses.create(
            model="tda", input="And?", previous_response_id=previous.id, extra_headers=session
        )
        sent = [m["content"] for m in served.model.sent[-1]["messages"]]
        assert sent == ["My name is Alice.", "Hello Alice.", "I live in Paris.", reply, "And?"]
    snapshots = (await served.get("/v1/sessions/steps-1/snapshots"))["snapshots"]
    assert [s["turn"] for s in snapshots] == [1, 1, 2, 2, 3, 4]  # the failed call's window was kept too


async def test_a_reply_with_text_and_calls_sent_back_as_items_is_the_one_message_recorded(served: Served):
    served.model.replies = [("Let me check.", [("call_d", "lookup_orders", {"customer": "ACME"})]), "Three."]
    client = served.client()
    session = {"X-TDA-Session": "merge-1"}
    first = await client.responses.create(model="tda", input=QUESTION, tools=[LOOKUP], extra_headers=session)
    assert [item.type for item in first.output] == ["message", "function_call"]
    loop = [
        {"role": "user", "content": QUESTION},
        *_items(first),
        {"type": "function_call_output", "call_id": "call_d", "output": "3 rows"},
    ]
    await client.responses.create(model="tda", input=loop, tools=[LOOKUP], extra_headers=session)
    sent = served.model.sent[-1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["content"] == "Let me check." and sent[1]["tool_calls"][0]["id"] == "call_d"
    stored = (await served.get("/v1/sessions/merge-1/messages"))["messages"]
    assert [(m["turn"], m["role"]) for m in stored] == [(1, "user"), (1, "assistant"), (1, "tool"), (1, "assistant")]
