"""Bad input and abuse: what a client may send that no valid request holds (unpaired surrogates), and requests whose
size or pace would hold the server (a 100,000-message chat, a body that trickles in)."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tda import security
from tda.app import create_app
from tda.config import Settings
from tda.security import checked_json, common_prefix, json_depth_exceeds, loads_in_slices, loads_reusing
from tests.service.served_app import serving

QUIET = {"migrate": False, "warm_up_llm": False, "warm_up_knowledge": False}

LONE = "\ud800"
"""JSON's ``"\\ud800"``: half of a surrogate pair, sent without the other half. No character; UTF-8 cannot hold it."""
CHAT = {"model": "tda", "messages": [{"role": "user", "content": f"hi {LONE}"}]}
TYPE = {
    "id": "sur_type",
    "name": f"Surrogate {LONE}",
    "modules": {"conversation_history": {"target_pct": 50, "min_pct": 0, "max_pct": 90, "priority": 50}},
}
SURROGATE_REQUESTS: list[tuple[str, str, dict[str, Any], dict[str, str], str]] = [
    # (method, path, JSON body, headers, the location the 422 must name)
    ("POST", "/v1/chat/completions", CHAT, {}, "messages.0.content"),
    ("POST", "/v1/chat/completions", CHAT, {"X-TDA-Session": "sur_chat"}, "messages.0.content"),
    (
        "POST",
        "/v1/chat/completions",
        {"model": "tda", "messages": [{"role": "user", "content": "hi"}], "user": "\udc00x"},  # a low half alone
        {"X-TDA-Session": "sur_chat2"},
        "user",
    ),
    ("POST", "/v1/responses", {"model": "tda", "input": f"hello {LONE}"}, {}, "input"),
    (
        "POST",
        "/v1/responses",
        {"model": "tda", "input": [{"role": "user", "content": [{"type": "input_text", "text": "a\udc00\ud800"}]}]},
        {"X-TDA-Session": "sur_resp"},
        "input.0.content.0.text",  # a pair in the wrong order is two lone halves
    ),
    ("POST", "/v1/sessions/sur_s/turns", {"query": f"what is {LONE}"}, {}, "query"),
    (
        "POST",
        "/v1/sessions/sur_s/messages",
        {"messages": [{"role": "user", "content": "ok", "turn": 1}, {"role": "assistant", "content": LONE, "turn": 1}]},
        {},
        "messages.1.content",
    ),
    (
        "POST",
        "/v1/sessions/sur_s/messages",
        {"messages": [{"role": "user", "content": "ok", "turn": 1, f"k{LONE}": 1}]},
        {},
        "messages.0.'k\\\\ud800'",
    ),
    ("POST", "/v1/sessions/sur_s/attachments", {"name": "notes.txt", "text": LONE}, {}, "text"),
    ("PATCH", "/v1/sessions/sur_s", {"title": LONE}, {}, "title"),
    ("POST", "/v1/sessions", {"id": "sur_s2", "profile_id": "sur_p", "title": LONE}, {}, "title"),
    ("POST", "/v1/profiles", {"id": "sur_p2", "type": "llm_only", "system_prompt": LONE}, {}, "system_prompt"),
    ("POST", "/v1/context-window-types", TYPE, {}, "name"),
    (
        "POST",
        "/v1/knowledge/collections/sur_docs/documents",
        {"documents": [{"name": "a.md", "text": f"# Title\n\nbody {LONE}"}]},
        {},
        "documents.0.text",
    ),
    ("POST", "/v1/knowledge/search", {"query": LONE, "collections": ["sur_docs"]}, {}, "query"),
]


def _json_bytes(body: dict[str, Any]) -> bytes:
    """The body as a client's JSON encoder writes it: a lone surrogate escaped (``\\ud800``), all else ASCII."""
    return json.dumps(body).encode()


@pytest.mark.parametrize(("method", "path", "body", "headers", "loc"), SURROGATE_REQUESTS)
async def test_a_lone_surrogate_is_refused_naming_the_field_and_nothing_is_stored(
    client: Any, admin: dict[str, str], method: str, path: str, body: dict[str, Any], headers: dict[str, str], loc: str
) -> None:
    r = await client.post("/v1/profiles", json={"id": "sur_p", "type": "llm_only"}, headers=admin)
    assert r.status_code == 201, await r.get_json()
    r = await client.post("/v1/sessions", json={"id": "sur_s", "profile_id": "sur_p"}, headers=admin)
    assert r.status_code == 201, await r.get_json()
    before = await _stored(client, admin)

    sent = {**admin, **headers, "Content-Type": "application/json"}
    r = await client.open(path, method=method, data=_json_bytes(body), headers=sent)
    reply = await r.get_json()

    assert r.status_code == 422, reply
    error = reply["error"] if isinstance(reply["error"], dict) else reply  # OpenAI's shape on its routes
    assert error["errors"][0]["loc"] == loc and error["errors"][0]["type"] == "lone_surrogate", reply
    assert "surrogate" in error["message"] and loc in error["message"]
    assert error is reply or error["param"] == loc
    assert await _stored(client, admin) == before


async def _stored(client: Any, headers: dict[str, str]) -> dict[str, Any]:
    """Everything a refused request could have left behind, as the API shows it."""
    sessions = (await (await client.get("/v1/sessions", headers=headers)).get_json())["sessions"]
    session = await (await client.get("/v1/sessions/sur_s", headers=headers)).get_json()
    listings = {
        name: (await (await client.get(f"/v1/sessions/sur_s/{name}", headers=headers)).get_json())
        for name in ("turns", "snapshots", "messages", "attachments")
    }
    return {
        "sessions": sorted(s["id"] for s in sessions),
        "title": session["title"],
        "listings": listings,
        "profiles": await (await client.get("/v1/profiles", headers=headers)).get_json(),
        "type": (await client.get("/v1/context-window-types/sur_type", headers=headers)).status_code,
        "knowledge": await (await client.get("/v1/knowledge/collections", headers=headers)).get_json(),
    }


async def test_a_surrogate_pair_is_a_character_and_is_kept(client: Any, admin: dict[str, str]) -> None:
    """The check refuses halves, not characters outside the BMP: ``"\\ud83d\\ude00"`` is one emoji."""
    body = {"id": "pair_p", "type": "llm_only", "system_prompt": "smile \ud83d\ude00"}
    r = await client.post("/v1/profiles", data=_json_bytes(body), headers={**admin, "Content-Type": "application/json"})
    assert r.status_code == 201, await r.get_json()
    shown = await (await client.get("/v1/profiles/pair_p", headers=admin)).get_json()
    assert shown["system_prompt"] == "smile \U0001f600"


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.sampled_from([None, 2]), st.sampled_from([", ", ","]))
def test_a_body_parsed_in_slices_is_what_json_loads_makes_of_it(value: Any, indent: int | None, comma: str) -> None:
    """The oracle is json.loads itself, on texts json.dumps wrote (compact, spaced and indented)."""
    text = json.dumps(value, indent=indent, separators=(comma, ": "))
    assert loads_in_slices(text) == json.loads(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet='{}[]:,"ab1 \n-.etrunl', max_size=30))
def test_text_that_is_not_json_is_refused_as_json_loads_refuses_it(text: str) -> None:
    """The same error, message and position (a 400 says where), or the same value."""
    try:
        expected: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        expected = (exc.msg, exc.pos)
    try:
        got: Any = loads_in_slices(text)
    except json.JSONDecodeError as exc:
        got = (exc.msg, exc.pos)
    assert got == expected


MESSAGES = st.lists(st.dictionaries(st.sampled_from(["role", "content", "tool_calls"]), JSON_VALUES), max_size=6)


@settings(max_examples=300, deadline=None)
@given(MESSAGES, MESSAGES, st.integers(min_value=0, max_value=8), JSON_VALUES, st.booleans())
def test_a_body_parsed_on_from_an_earlier_one_is_what_json_loads_makes_of_it(
    sent: list[Any], added: list[Any], edited: int, edit: Any, same_model: bool
) -> None:
    """A conversation sent again, longer, perhaps with a message edited or another model named: what the earlier
    body's parse lends the next is exactly what json.loads makes of the next (the oracle), never a stale message."""
    first = json.dumps({"model": "m", "messages": sent})
    later = [*sent, *added]
    if edited < len(later):
        later[edited] = {"content": edit}
    second = json.dumps({"model": "m" if same_model else "n", "messages": later})
    _, parsed = loads_reusing(first)
    value, _ = loads_reusing(second, parsed)
    assert value == json.loads(second)


def test_the_messages_a_body_sent_before_are_not_parsed_again() -> None:
    """The messages before the first that changed are the earlier body's own values; the others are parsed."""
    sent = [{"role": "user", "content": f"question {i}"} for i in range(5)]
    first, parsed = loads_reusing(json.dumps({"model": "m", "messages": sent}))
    edited = [*sent[:3], {"role": "user", "content": "question 3, edited"}, sent[4], {"role": "user", "content": "5"}]
    second, _ = loads_reusing(json.dumps({"model": "m", "messages": edited}), parsed)
    assert [a is b for a, b in zip(first["messages"], second["messages"], strict=False)] == [1, 1, 1, 0, 0]
    assert second["messages"] == edited


def test_a_message_nested_too_deep_after_those_sent_before_is_refused() -> None:
    """The messages a body lent are not walked for depth again; the ones after them are, and one too deep is
    refused as when the body is parsed alone."""
    sent = [{"role": "user", "content": f"question {i}"} for i in range(40)]
    _, _, parsed = checked_json(json.dumps({"model": "m", "messages": sent}), 8)
    deep: Any = "x"
    for _ in range(8):
        deep = [deep]
    later = json.dumps({"model": "m", "messages": [*sent, {"role": "user", "content": deep}]})
    with pytest.raises(security.NestedTooDeep):
        checked_json(later, 8)
    with pytest.raises(security.NestedTooDeep):
        checked_json(later, 8, parsed)
    shallow = json.dumps({"model": "m", "messages": [*sent, {"role": "user", "content": deep[0][0][0][0][0]}]})
    assert checked_json(shallow, 8, parsed)[0] == json.loads(shallow)


def test_a_body_parsed_on_from_the_last_walks_only_the_messages_it_adds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chat client sends its conversation again, a few messages longer, on every call (an agent session's turn:
    two calls of two more messages each): the parse's steps in Python (``_skip``, one between any two values it
    walks) are as many at turn 100 as at turn 5, the messages sent before taken as one slice; and every body, parsed
    on from the last, is what json.loads makes of it (the oracle)."""
    steps = 0
    skip = security._skip

    def counted(text: str, at: int) -> int:
        nonlocal steps
        steps += 1
        return skip(text, at)

    monkeypatch.setattr(security, "_skip", counted)
    chat: list[dict[str, Any]] = [{"role": "system", "content": "You look up orders."}]
    parsed, per_call = None, {}
    for turn in range(1, 101):
        call = {"id": f"call_{turn}", "type": "function", "function": {"name": "orders", "arguments": "{}"}}
        for added in (
            [{"role": "user", "content": f"turn {turn}: which orders are open?"}],
            [{"role": "assistant", "content": None, "tool_calls": [call]}],
            [{"role": "tool", "tool_call_id": f"call_{turn}", "content": json.dumps([{"order": turn}] * 3)}],
            [{"role": "assistant", "content": f"{turn} orders"}],
        ):
            chat += added
            text = json.dumps({"model": "tda", "messages": chat, "tools": [{"type": "function"}]})
            steps = 0
            value, parsed = loads_reusing(text, parsed)
            assert value == json.loads(text)
            per_call[len(chat)] = steps
    assert per_call[len(chat)] == per_call[21]  # 400 messages sent before against 20


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab", max_size=40), st.text(alphabet="ab", max_size=40), st.text(alphabet="ab", max_size=40))
def test_the_beginning_two_texts_share_is_found_whole(shared: str, a: str, b: str) -> None:
    """The oracle is a walk character by character, over steps shorter than the texts (``PREFIX_STEP`` 4 here)."""
    first, second = shared + a, shared + b
    shorter = min(len(first), len(second))
    walked = next((i for i, (x, y) in enumerate(zip(first, second, strict=False)) if x != y), shorter)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(security, "PREFIX_STEP", 4)
        assert common_prefix(first, second) == walked


@pytest.mark.parametrize(
    ("first", "second", "loc"),
    [
        # a pair's high half within the beginning both share, its low half gone in the second
        (
            '{"messages": [{"content": "\\ud83d\\ude00"}]}',
            '{"messages": [{"content": "\\ud83d\\u0041"}]}',
            "messages.0.content",
        ),
        # a NUL escaped in a message the second body adds
        (
            '{"messages": [{"content": "a"}]}',
            '{"messages": [{"content": "a"}, {"content": "\\u0000"}]}',
            "messages.1.content",
        ),
        # in a field between the messages the first body lent
        (
            '{"messages": [{"content": "a"}], "user": "b"}',
            '{"messages": [{"content": "a"}], "user": "\\udc00"}',
            "user",
        ),
    ],
)
def test_a_body_parsed_on_from_an_earlier_one_is_checked_for_what_cannot_be_stored(
    first: str, second: str, loc: str
) -> None:
    """What the earlier body passed is not searched again; what the second adds or changes is, as it would be alone."""
    _, found, parsed = checked_json(first, 64)
    assert found is None
    assert checked_json(second, 64, parsed)[1] == checked_json(second, 64)[1]
    assert checked_json(second, 64, parsed)[1] is not None and checked_json(second, 64, parsed)[1][0] == loc


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in ``value`` (the outermost is 1; a text or number is 0)."""
    if isinstance(value, dict | list):
        children = value.values() if isinstance(value, dict) else value
        return 1 + max((_depth(child) for child in children), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.integers(min_value=0, max_value=6))
def test_a_body_nests_too_deep_exactly_when_its_arrays_and_objects_go_past_the_limit(value: Any, limit: int) -> None:
    """The oracle is the recursive definition: empty arrays and objects count, texts and numbers do not."""
    assert json_depth_exceeds(value, limit) is (_depth(value) > limit)


async def test_a_body_that_trickles_in_is_cut_with_408(settings: Settings) -> None:
    """A client that sends its body a byte at a time holds a connection (and the body so far) for as long as it
    likes, unless the body has a deadline: TDA_BODY_TIMEOUT_S after the request began, 408 and the connection is
    closed, long before the body would have been complete."""
    app = create_app(dataclasses.replace(settings, body_timeout_s=1), **QUIET)
    async with serving(app) as (_, base_url, token):
        port = int(base_url.rsplit(":", 1)[1].split("/")[0])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        head = (
            "POST /v1/profiles HTTP/1.1\r\nHost: tda\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {token}\r\nContent-Length: 1000\r\n\r\n"
        )
        writer.write(head.encode())
        answer = asyncio.ensure_future(reader.read())  # until the server closes the connection
        sent = 0
        while not answer.done() and sent < 1000:
            writer.write(b" ")
            sent += 1
            await asyncio.sleep(0.05)  # the whole body would take 50 s
        reply = await asyncio.wait_for(answer, 30)
        writer.close()
    status, _, rest = reply.partition(b"\r\n")
    assert status.startswith(b"HTTP/1.1 408") and sent < 1000, reply
    body = json.loads(rest.partition(b"\r\n\r\n")[2])
    assert body["error"] == "request_timeout" and "TDA_BODY_TIMEOUT_S" in body["message"]
    assert b"connection: close" in rest.lower()


def test_the_body_timeout_is_a_setting() -> None:
    assert Settings.from_env({"TDA_BODY_TIMEOUT_S": "15"}).body_timeout_s == 15
    assert Settings().body_timeout_s == 60  # as quart's own default
    with pytest.raises(ValueError, match="TDA_BODY_TIMEOUT_S"):
        Settings.from_env({"TDA_BODY_TIMEOUT_S": "0"})


def conversation(n: int) -> list[dict[str, str]]:
    """``n`` short messages, user and assistant in turn, ending with the user's."""
    roles = ("user", "assistant")
    return [{"role": roles[(n - 1 - i) % 2], "content": f"message {i}: what happened next?"} for i in range(n)]


async def _healthz_while(client: Any, request: Any) -> tuple[float, list[float]]:
    """How long ``request`` took (s), and each /healthz answer's wait (s) while it was in flight."""
    waits: list[float] = []
    loop = asyncio.get_running_loop()
    big = asyncio.ensure_future(request)
    started = loop.time()
    while not big.done():
        asked = loop.time()
        assert (await client.get("/healthz")).status_code == 200
        waits.append(loop.time() - asked)
        await asyncio.sleep(0.005)
    r = await big
    assert r.status_code == 200, await r.get_json()
    return loop.time() - started, waits


async def test_a_long_chat_request_leaves_the_event_loop_to_the_others(client: Any, admin: dict[str, str]) -> None:
    """The work of a 100,000-message chat (parsing, validating, converting, indexing its history for recall)
    grows with it; sliced and off the loop, /healthz keeps answering while it runs. No wait is timed here (a loaded
    machine stretches any one of them); a regression guard only: in process, with the
    heap frozen as `tda serve` freezes it, main passes it too; the served figures that tell them apart (main's
    /healthz waited 15.5 s) are bench/big_request_bench.py's."""
    headers = {**admin, "Content-Type": "application/json"}
    warm = {"model": "tda", "messages": conversation(3)}  # litellm loads on first use (served, at start)
    assert (await client.post("/v1/chat/completions", json=warm, headers=admin)).status_code == 200
    body = json.dumps({"model": "tda", "messages": conversation(100_000)}).encode()
    gc.collect()
    gc.freeze()  # as `tda serve` does once loaded: the collector walks only what came after (not pytest's heap)
    try:
        took, waits = await _healthz_while(client, client.post("/v1/chat/completions", data=body, headers=headers))
    finally:
        gc.unfreeze()
    assert len(waits) >= 3, (took, sorted(waits)[-5:])  # answered while it ran: how fast is the bench's to say


async def test_a_long_anthropic_request_is_read_in_slices_and_errors_name_their_place(
    client: Any, admin: dict[str, str]
) -> None:
    """/v1/messages validates a long conversation a slice at a time off the loop, as chat completions does: a bad
    message far down is named at its place in the whole list, and a good conversation is answered."""
    messages = [{"role": ("user", "assistant")[i % 2], "content": f"line {i} of a long chat"} for i in range(1_201)]
    body = {"model": "tda", "max_tokens": 16, "messages": messages}
    ok = await client.post("/v1/messages", json=body, headers=admin)
    assert ok.status_code == 200, await ok.get_json()
    bad = [*messages[:1_100], {"role": "narrator", "content": "x"}, *messages[1_101:]]
    refused = await client.post("/v1/messages", json={**body, "messages": bad}, headers=admin)
    reply = await refused.get_json()
    assert refused.status_code == 422, reply
    assert any(e["loc"].startswith("messages.1100.role") for e in reply["error"]["errors"]), reply
    counted = await client.post("/v1/messages/count_tokens", json={"model": "tda", "messages": messages}, headers=admin)
    assert counted.status_code == 200 and (await counted.get_json())["input_tokens"] > 1_201
