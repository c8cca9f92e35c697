"""A chat client's snapshots keep the conversation each call sent, for replay, a trace's request and the Responses
API's ``previous_response_id``: read back whole, whatever the session did (new turns, a retry, an edited history),
while most snapshots store only what their call added (tda/gateway.py ``WHOLE_COPY_EVERY``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from tda.gateway import WHOLE_COPY_EVERY
from tda.models import SnapshotRow
from tests.service.support import Served

CALLS = WHOLE_COPY_EVERY + 8


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
        query = select(SnapshotRow.inputs).where(SnapshotRow.session_id == "kept-1").order_by(SnapshotRow.id)
        stored = (await s.scalars(query)).all()
    whole = [inputs for inputs in stored if inputs["gateway"].get("chat") is not None]
    assert 2 <= len(whole) <= CALLS // WHOLE_COPY_EVERY + 1  # the first call's, then one every WHOLE_COPY_EVERY
    for i, inputs in enumerate(stored):  # what the call added, not the conversation (the edit changed the rest)
        assert len(inputs["gateway"].get("chat_tail", [])) <= (len(sent[i]) - 2 if i == 12 else 2)
