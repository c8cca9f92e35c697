"""Provider context features on the Responses API (issue 34, item 2), driven by the real `openai` SDK against a
served app whose model is litellm's mock, scripted (tests.service.support.ScriptedModel): ``context_management``
compaction, compaction items in ``input``, ``truncation``, and ``POST /v1/responses/compact``.

Oracles: ``model.sent`` (what reached the model), litellm's own token counter for the window's size, the stored
snapshot read back over the API, and the SDK's own parsing of each answer.
"""

from __future__ import annotations

from typing import Any

import httpx
import litellm
import openai
import pytest

from tests.service.support import Served

MODEL = "gpt-4o"
FACT = "The invoice INV-{n} for customer C-{n} was paid on day {n} of the quarter, by wire transfer."


def _conversation(pairs: int) -> list[dict[str, Any]]:
    """A long chat as Responses input items: ``pairs`` questions and answers, then the question being asked."""
    items: list[dict[str, Any]] = []
    for n in range(pairs):
        items.append({"role": "user", "content": f"Tell me about invoice {n}. " + FACT.format(n=n) * 4})
        items.append({"role": "assistant", "content": "Noted: " + FACT.format(n=n) * 4})
    items.append({"role": "user", "content": "Which invoice was paid last?"})
    return items


def _tokens(messages: list[dict[str, Any]]) -> int:
    """The window's prompt tokens as litellm counts them for the model (an oracle independent of tda's estimator)."""
    return int(litellm.token_counter(model=MODEL, messages=messages))


async def _post(served: Served, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=served.base_url.removesuffix("/v1"), timeout=30) as http:
        return await http.post(path, json=body, headers={"Authorization": f"Bearer {served.token}", **headers})


async def _profile(served: Served, profile_id: str, context_limit: int | None = None) -> str:
    body = {"id": profile_id, "type": "tool_enabled", "system_prompt": "", "model": MODEL}
    if context_limit is not None:
        body["context_limit"] = context_limit
    created = await _post(served, "/v1/profiles", body)
    assert created.status_code == 201, created.text
    return f"tda/{profile_id}"


async def _snapshot(served: Served, raw: Any) -> dict[str, Any]:
    return await served.get(f"/v1/snapshots/{raw.headers['X-TDA-Snapshot']}")


async def test_compact_threshold_keeps_the_window_within_it_and_the_snapshot_says_tda_did(served: Served):
    client = served.client()
    items = _conversation(30)
    model = await _profile(served, "plain")
    whole = await client.responses.create(model=model, input=items, store=False)  # no champion case recorded
    whole_sent = served.model.sent[-1]["messages"]
    raw = await client.responses.with_raw_response.create(
        model=model,
        input=items,
        context_management=[{"type": "compaction", "compact_threshold": 2_000}],
        extra_headers={"X-TDA-Session": "compacting"},
    )
    compacted = raw.parse()
    sent = served.model.sent[-1]["messages"]

    assert whole.status == compacted.status == "completed"
    assert len(whole_sent) == len(items)  # without it, the whole conversation fits the model and is sent
    assert _tokens(whole_sent) > 2_000
    assert _tokens(sent) <= 2_000 < _tokens(whole_sent)
    assert sent[-1] == {"role": "user", "content": "Which invoice was paid last?"}
    snapshot = await _snapshot(served, raw)
    [feature] = snapshot["snapshot"]["provider_features"]
    assert feature["field"] == "context_management" and feature["by"] == "tda"
    assert "2,000" in feature["note"]
    assert snapshot["snapshot"]["effective_limit"] <= 2_000
    replayed = await served.get(f"/v1/snapshots/{raw.headers['X-TDA-Snapshot']}/replay", method="POST")
    assert replayed["identical"], [(d["path"], d.get("recorded"), d.get("replayed")) for d in replayed["differences"]]


async def test_a_compaction_item_is_kept_out_of_the_window_and_named_in_the_snapshot(served: Served):
    client = served.client()
    secret = "gAAAAABencrypted-summary-only-openai-reads"
    raw = await client.responses.with_raw_response.create(
        model="tda",
        input=[
            {"type": "compaction", "id": "cmp_1", "encrypted_content": secret},
            {"role": "user", "content": "And the total?"},
        ],
        extra_headers={"X-TDA-Session": "with-compaction"},
    )
    reply = raw.parse()
    sent = served.model.sent[-1]["messages"]

    assert reply.status == "completed"
    assert secret not in str(sent)
    assert sent[-1] == {"role": "user", "content": "And the total?"}
    [feature] = (await _snapshot(served, raw))["snapshot"]["provider_features"]
    assert feature["field"] == "input.compaction" and feature["by"] == "tda"
    assert "input.0" in feature["note"] and "cmp_1" in feature["note"]
    assert raw.headers["X-TDA-Features"] == "input.compaction=tda"


async def test_a_stateless_call_names_its_features_in_a_header(served: Served):
    """No snapshot is kept without a session (store: false): the response's header is the trace."""
    raw = await served.client().responses.with_raw_response.create(
        model="tda",
        input=[{"type": "compaction", "encrypted_content": "gAAAA"}, {"role": "user", "content": "Go on."}],
        truncation="auto",
        store=False,
    )
    assert raw.parse().status == "completed"
    assert "X-TDA-Session" not in raw.headers
    assert raw.headers["X-TDA-Features"] == "truncation=tda, input.compaction=tda, store=tda"


async def test_a_compaction_item_without_its_content_is_a_422_naming_it(served: Served):
    with pytest.raises(openai.UnprocessableEntityError, match=r"input\.0\.encrypted_content"):
        await served.client().responses.create(
            model="tda",
            input=[{"type": "compaction", "id": "cmp_1"}, {"role": "user", "content": "hi"}],
        )
    assert served.model.sent == []


async def test_truncation_disabled_refuses_what_the_window_would_cut_as_openai_does(served: Served):
    client = served.client()
    model = await _profile(served, "small", context_limit=1_500)
    items = _conversation(30)
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(
            model=model,
            input=items,
            truncation="disabled",
            extra_headers={"X-TDA-Session": "refused"},
        )
    assert served.model.sent == []  # refused before the model was called
    assert refused.value.code == "context_length_exceeded"
    assert "truncation: 'auto'" in refused.value.message
    session = await served.get("/v1/sessions/refused")
    assert session["turns"] == []  # nothing recorded

    cut = await client.responses.create(model=model, input=items, truncation="auto")
    assert cut.status == "completed" and cut.truncation == "auto"
    assert cut.usage is not None and cut.usage.model_extra["tda"]["messages_cut"] > 0
    short = await client.responses.create(model=model, input="Which invoice was paid last?", truncation="disabled")
    assert short.status == "completed" and short.truncation == "disabled"
    with pytest.raises(openai.BadRequestError, match="exceeds the context window"):  # streamed: before any event
        await client.responses.create(model=model, input=items, truncation="disabled", stream=True)


async def test_an_unknown_truncation_or_context_management_entry_is_a_422(served: Served):
    client = served.client()
    with pytest.raises(openai.UnprocessableEntityError, match="truncation"):
        await client.responses.create(model="tda", input="hi", truncation="middle")
    with pytest.raises(openai.UnprocessableEntityError, match=r"context_management\.0\.type"):
        await client.responses.create(model="tda", input="hi", context_management=[{"type": "summarise"}])
    assert served.model.sent == []


async def test_compact_answers_the_window_as_items_the_client_sends_back(served: Served):
    client = served.client()
    model = await _profile(served, "compact", context_limit=1_500)
    items = _conversation(30)
    compacted = await client.responses.compact(model=model, input=items, instructions="Answer briefly.")

    assert served.model.sent == []  # compaction calls no model
    assert compacted.object == "response.compaction"
    output = [item.model_dump(exclude_unset=True, warnings=False) for item in compacted.output]  # as the Agents SDK
    assert 1 < len(output) < len(items)
    assert output[-1]["role"] == "user"
    assert output[-1]["content"] == [{"type": "input_text", "text": "Which invoice was paid last?"}]
    assert all(item.get("role") != "system" for item in output)
    assert "Answer briefly." not in str(output)  # the instructions go with each request, as OpenAI leaves them out
    usage = compacted.usage
    assert usage.input_tokens > usage.output_tokens > 0
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert abs(usage.input_tokens - _tokens(items)) <= 0.01 * usage.input_tokens  # litellm's count (it adds priming)
    assert (await served.get("/v1/sessions"))["sessions"] == []  # nothing was recorded

    again = await client.responses.create(model=model, input=output, instructions="Answer briefly.")
    assert again.status == "completed"
    sent = served.model.sent[-1]["messages"]
    assert sent[0]["role"] == "system" and sent[-1]["content"] == "Which invoice was paid last?"


async def test_compact_goes_on_from_a_previous_response(served: Served):
    client = served.client()
    served.model.replies = ["ACME has 3 open orders."]
    first = await client.responses.create(
        model="tda", input="How many open orders does ACME have?", extra_headers={"X-TDA-Session": "prev"}
    )
    compacted = await client.responses.compact(model="tda", input="And BETA?", previous_response_id=first.id)
    texts = [part.text for item in compacted.output for part in getattr(item, "content", [])]
    assert texts == ["How many open orders does ACME have?", "ACME has 3 open orders.", "And BETA?"]


async def test_compact_names_an_openai_compaction_item_it_kept_out(served: Served):
    body = {
        "model": "tda",
        "input": [
            {"type": "compaction", "id": "cmp_7", "encrypted_content": "gAAAA-opaque"},
            {"role": "user", "content": "Go on."},
        ],
    }
    answer = await _post(served, "/v1/responses/compact", body)
    assert answer.status_code == 200, answer.text
    compacted = answer.json()
    assert "gAAAA-opaque" not in str(compacted["output"])
    [feature] = compacted["provider_features"]
    assert feature["field"] == "input.compaction" and "cmp_7" in feature["note"]


async def test_compact_refuses_what_it_does_not_take(served: Served):
    refused = await _post(served, "/v1/responses/compact", {"model": "tda", "input": "hi", "tools": []})
    assert refused.status_code == 422 and "tools is not a field" in refused.json()["error"]["message"]
    empty = await _post(served, "/v1/responses/compact", {"model": "tda", "input": []})
    assert empty.status_code == 422 and "user message" in empty.json()["error"]["message"]


async def test_the_agents_sdk_compaction_session_compacts_through_tda(served: Served):
    """The OpenAI Agents SDK's own compaction session, with its client pointed at tda: its history is replaced by
    tda's window, which the next run sends back as input."""
    agents = pytest.importorskip("agents")
    from agents.memory import OpenAIResponsesCompactionSession

    await _profile(served, "agents", context_limit=1_500)
    client = openai.AsyncOpenAI(
        base_url=served.base_url, api_key=served.token, max_retries=0, default_headers={"X-TDA-Profile": "agents"}
    )
    served.clients.append(client)
    store = agents.SQLiteSession("compacted")
    await store.add_items(_conversation(30))
    session = OpenAIResponsesCompactionSession("compacted", store, client=client, model=MODEL)
    await session.run_compaction({"force": True, "compaction_mode": "input"})
    kept = await store.get_items()

    assert served.model.sent == []
    assert 1 < len(kept) < 61
    assert kept[-1]["content"] == [{"type": "input_text", "text": "Which invoice was paid last?"}]
    agent = agents.Agent(name="clerk", model=agents.OpenAIResponsesModel(model="tda", openai_client=client))
    result = await agents.Runner.run(agent, "And the one before?", session=session)
    assert result.final_output == "Done."
    sent = served.model.sent[-1]["messages"]
    assert sent[-1]["content"] == "And the one before?"
    assert sent[-2]["content"] == "Which invoice was paid last?"
