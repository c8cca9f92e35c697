"""A chat client's snapshots keep the conversation each call sent, for replay, a trace's request and the Responses
API's ``previous_response_id``: read back whole, whatever the session did (new turns, a retry, an edited history),
while each stores only what the calls since the one it names added, and a read follows a chain of at most log2 of the
calls (tda/gateway.py ``_chat_link``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from tda.models import SnapshotRow
from tests.service.support import Served

CALLS = 40


async def test_each_snapshot_gives_back_the_conversation_its_call_sent(served: Served):
    client = served.client()
    session = {"X-TDA-Session": "kept-1"}
    served.model.replies = [f"Answer {i}." for i in range(CALLS)]
    chat: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    sent = []
    for i in range(CALLS):
        chat.append({"role": "user", "content": f"Question {i}: what ships from depot {i}?"})
        if i == 5:  # a retry: the same conversation again
            chat.pop()
        if i == 12:  # an edited history: a fork
            chat[3] = {"role": "user", "content": "Question 1, edited: what ships from depot 100?"}
        reply = await client.chat.completions.create(model="tda", messages=chat, extra_headers=session)  # type: ignore[arg-type]
        sent.append([dict(m) for m in chat[1:]])
        chat.append({"role": "assistant", "content": reply.choices[0].message.content})

    rows = (await served.get("/v1/sessions/kept-1/snapshots"))["snapshots"]
    assert len(rows) == CALLS
    for row, conversation in zip(rows, sent, strict=True):
        snapshot = await served.get(f"/v1/snapshots/{row['id']}")
        assert snapshot["inputs"]["gateway"]["chat"] == conversation
        assert "chat_from" not in snapshot["inputs"]["gateway"]
    async with served.svc.store.sessions.db.read() as s:
        query = select(SnapshotRow.id, SnapshotRow.inputs).where(SnapshotRow.session_id == "kept-1")
        by_id = {row.id: row.inputs["gateway"] for row in (await s.execute(query)).all()}
    whole = [i for i, gateway in by_id.items() if gateway.get("chat") is not None]
    assert whole == [min(by_id)]  # the first call's alone: the edit goes on from the beginning it kept
    for gateway in by_id.values():  # the conversation is put back together from a few snapshots, not from every call
        links = 0
        while "chat_from" in gateway:
            gateway, links = by_id[gateway["chat_from"]["snapshot_id"]], links + 1
        assert links <= CALLS.bit_length()  # log2 of the calls, + 1


async def test_a_session_deleted_and_made_again_under_its_id_keeps_what_its_calls_sent(served: Served):
    """A client deletes its session and goes on under the same id (the gateway makes it again): the new session's
    snapshots give back the conversation each call sent, never naming a snapshot that went with the one deleted."""
    import httpx

    client = served.client()
    session = {"X-TDA-Session": "kept-2"}
    served.model.replies = [f"Answer {i}." for i in range(6)]
    chat: list[dict[str, Any]] = []
    sent = []
    for i in range(6):
        if i == 3:
            async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
                r = await http.delete("/sessions/kept-2", headers={"Authorization": f"Bearer {served.token}"})
                assert r.status_code == 204, r.text
        chat.append({"role": "user", "content": f"Question {i}: what ships from depot {i}?"})
        reply = await client.chat.completions.create(model="tda", messages=chat, extra_headers=session)  # type: ignore[arg-type]
        sent.append([dict(m) for m in chat])
        chat.append({"role": "assistant", "content": reply.choices[0].message.content})
    rows = (await served.get("/v1/sessions/kept-2/snapshots"))["snapshots"]
    assert len(rows) == 3  # the session made again has the last three calls'
    for row, conversation in zip(sorted(rows, key=lambda row: row["id"]), sent[3:], strict=True):
        assert (await served.get(f"/v1/snapshots/{row['id']}"))["inputs"]["gateway"]["chat"] == conversation
