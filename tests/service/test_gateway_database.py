"""What a chat client's session call asks of the database: one read of the session, one of what places the call,
the snapshot's write while the model answers, and the call recorded in one transaction (tda/gateway.py, the
store's Core statements in tda/store/sessions.py). The proxy a gateway stands beside has none of these, so each
one more is CPU a call pays (docs/benchmarks.md); what they write is checked whole here."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import event
from sqlalchemy.sql.compiler import SQLCompiler

from tda.app import create_app
from tda.config import Settings
from tests.gateway.servers import free_port, server_env, start, stop, wait_until_serving
from tests.service.support import LOOKUP_ORDERS, ScriptedModel, check_a_tool_loop_is_recorded_whole


@pytest.fixture
async def scripted(settings: Settings) -> AsyncIterator[tuple[Any, Any, ScriptedModel]]:
    """The app with a scripted model: its svc, a test client and the model."""
    model = ScriptedModel()
    app = create_app(settings, llm=model.llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as running:
        yield app.extensions["tda"], running.test_client(), model


@contextlib.contextmanager
def _compiling() -> Iterator[list[str]]:
    """The statements SQLAlchemy compiles meanwhile (by an engine, the ORM's flush or a loop connection)."""
    statements: list[Any] = []
    init = SQLCompiler.__init__

    def noted(self: SQLCompiler, dialect: Any, statement: Any, *args: Any, **kwargs: Any) -> None:
        statements.append(statement)
        init(self, dialect, statement, *args, **kwargs)

    compiled: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SQLCompiler, "__init__", noted)
        yield compiled
    compiled.extend(str(statement)[:80] for statement in statements)


async def _admin(svc: Any) -> dict[str, str]:
    token, _ = await svc.store.tokens.create("db", "admin")
    return {"Authorization": f"Bearer {token}"}


async def test_a_tool_loop_is_recorded_whole(scripted: tuple[Any, Any, ScriptedModel]) -> None:
    svc, client, model = scripted
    await check_a_tool_loop_is_recorded_whole(client, await _admin(svc), model)


async def test_a_session_call_is_placed_by_one_read_and_recorded_in_one_transaction(
    scripted: tuple[Any, Any, ScriptedModel],
) -> None:
    """Per call, after the session's first turn: the session read (its project's filter), one read of what places
    the call (the turn its conversation opened, the newest turn, whether there are attachments; a tool loop's step
    finds what its turn recorded among the messages it sent, by the digest of the turn's conversation); then two
    transactions (the snapshot, while the model answers; the record, its model call priced in it). Before, placing
    a call read the session again, then the turn asked for and the newest turn separately, the attachments (the
    session once more), a step read its turn's messages, and a step was recorded through the ORM's unit of work
    (the session read again, each message its own INSERT): 11 and 13 statements, not 7 and 8. On SQLite every one
    of them goes by connections of the loop's own (``LoopReader``, ``LoopWriter``: no pooled connection, no
    SQLAlchemy execution), the pool none."""
    svc, client, model = scripted
    headers = await _admin(svc)
    r = await client.post("/v1/profiles", json={"id": "db_p", "type": "tool_enabled"}, headers=headers)
    assert r.status_code == 201
    call_headers = {**headers, "X-TDA-Session": "db_s", "X-TDA-Profile": "db_p"}
    pooled: list[str] = []
    engine = svc.store.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", lambda _c, _cur, sql, *_: pooled.append(sql.split(None, 1)[0]))
    event.listen(engine, "commit", lambda _c: pooled.append("COMMIT"))
    read: list[str] = []
    wrote: list[str] = []
    svc.store.db.reader._open().set_trace_callback(lambda sql: read.append(sql.split(None, 1)[0]))
    svc.store.db.single_writes._open().set_trace_callback(lambda sql: wrote.append(sql.split(None, 1)[0]))
    messages: list[dict[str, Any]] = []
    seen: list[tuple[list[str], list[str], list[str]]] = []
    for turn in range(2):
        model.replies = [[(f"call_{turn}", "lookup_orders", {"customer": "ACME"})], f"Answer {turn}."]
        messages.append({"role": "user", "content": f"Question {turn}?"})
        for step in range(2):
            await svc.writer.drain()  # the last call's work after its response is not this call's
            for kept in (pooled, read, wrote):
                kept.clear()
            body = {"model": "tda", "messages": messages, "tools": [LOOKUP_ORDERS]}
            r = await client.post("/v1/chat/completions", json=body, headers=call_headers)
            assert r.status_code == 200, await r.get_json()
            seen.append((list(read), list(wrote), list(pooled)))
            reply = {k: v for k, v in (await r.get_json())["choices"][0]["message"].items() if v is not None}
            messages.append(reply)
            if step == 0:
                messages.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": "[]"})
    snapshot = ["BEGIN", "INSERT", "COMMIT"]  # while the model answers
    priced, count = ["UPDATE"], ["UPDATE"]  # the snapshot's model call; the session's count of messages
    new_turn = [*priced, "INSERT", "INSERT", "INSERT", *count]  # the turn, its question and the model's call
    step = [*priced, "SELECT", "UPDATE", "INSERT", "INSERT", *count]  # the turn read and updated; result, answer
    assert seen[2] == (["SELECT", "SELECT"], [*snapshot, "BEGIN", *new_turn, "COMMIT"], []), seen[2]
    assert seen[3] == (["SELECT", "SELECT"], [*snapshot, "BEGIN", *step, "COMMIT"], []), seen[3]


async def test_a_session_s_calls_compile_no_statement_once_the_app_has_started(
    scripted: tuple[Any, Any, ScriptedModel],
) -> None:
    """The statements a session's chat call runs by the loop's own connections are compiled at start-up
    (``SessionStore.prepare`` with the gateway's ``CALL_NAMES``, and the window types' read): the process's first
    session call compiles none of its own (before, its first two calls compiled twelve, SQLAlchemy's compiler ~10 ms
    in all). A name the gateway
    or the pipeline adds to what it records without adding it to ``CALL_NAMES`` shows here as a compiled one. The
    session is created by its first call (by the loop writer, ``SessionStore._created_here``): nothing compiled
    either, by a loop connection, an engine or the ORM's flush (after a stateless call, the profile's first reads)."""
    svc, client, model = scripted
    headers = await _admin(svc)
    r = await client.post("/v1/profiles", json={"id": "prep_p", "type": "tool_enabled"}, headers=headers)
    assert r.status_code == 201
    reader, writer = svc.store.db.reader, svc.store.db.single_writes
    prepared = (dict(reader._compiled), dict(writer._compiled))
    assert prepared[0] and prepared[1]
    call_headers = {**headers, "X-TDA-Session": "prep_s", "X-TDA-Profile": "prep_p"}
    messages: list[dict[str, Any]] = []
    stateless = {"model": "tda", "messages": [{"role": "user", "content": "Hello?"}]}
    model.replies = ["Hi."]  # the profile's and its type's first reads, which are no session's
    r = await client.post("/v1/chat/completions", json=stateless, headers={**headers, "X-TDA-Profile": "prep_p"})
    assert r.status_code == 200, await r.get_json()
    for turn in range(2):
        model.replies = [[(f"call_{turn}", "lookup_orders", {"customer": "ACME"})], f"Answer {turn}."]
        messages.append({"role": "user", "content": f"Question {turn}?"})
        for step in range(2):
            body = {"model": "tda", "messages": messages, "tools": [LOOKUP_ORDERS]}
            with _compiling() as compiled:
                r = await client.post("/v1/chat/completions", json=body, headers=call_headers)
                await svc.writer.drain()
            assert r.status_code == 200, await r.get_json()
            assert compiled == [], compiled  # the first creates the session (through the ORM: its read and INSERT)
            messages.append({k: v for k, v in (await r.get_json())["choices"][0]["message"].items() if v is not None})
            if step == 0:
                messages.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": "[]"})
    assert writer.writes >= 6 and reader.reads >= 8  # every call went by them
    assert (reader._compiled, writer._compiled) == prepared


async def test_a_loop_edited_mid_turn_is_recorded_again_from_the_edit_once(
    scripted: tuple[Any, Any, ScriptedModel],
) -> None:
    """A client that changes a tool result it sent earlier in the turn has its loop recorded again from the change
    (what the turn holds no longer matches what it sends); the step after adds only its own messages, as any step
    does, whether its turn's loop is read or found among the messages sent (the usual step)."""
    svc, client, model = scripted
    headers = await _admin(svc)
    r = await client.post("/v1/profiles", json={"id": "edit_p", "type": "tool_enabled"}, headers=headers)
    assert r.status_code == 201
    call_headers = {**headers, "X-TDA-Session": "edit_s", "X-TDA-Profile": "edit_p"}
    model.replies = [[(f"call_{n}", "lookup_orders", {"customer": f"C{n}"})] for n in (1, 2, 3)] + ["Done."]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Which orders are open?"}]
    original: dict[str, Any] = {}
    for step in range(4):
        if step == 2:  # the client edits the first tool result
            original = messages[2]
            messages[2] = {**original, "content": "result 1, edited"}
        body = {"model": "tda", "messages": messages, "tools": [LOOKUP_ORDERS]}
        r = await client.post("/v1/chat/completions", json=body, headers=call_headers)
        assert r.status_code == 200, await r.get_json()
        reply = {k: v for k, v in (await r.get_json())["choices"][0]["message"].items() if v is not None}
        messages.append(reply)
        if step < 3:
            result = {"role": "tool", "tool_call_id": reply["tool_calls"][0]["id"], "content": f"result {step + 1}"}
            messages.append(result)
    recorded = [*messages[:2], original, messages[3], *messages[2:]]  # as first sent, then again from the edit on
    stored = (await (await client.get("/v1/sessions/edit_s/messages", headers=headers)).get_json())["messages"]
    assert [(m["role"], m["content"] or "") for m in stored] == [(m["role"], m.get("content") or "") for m in recorded]
    turns = (await (await client.get("/v1/sessions/edit_s/turns", headers=headers)).get_json())["turns"]
    assert [(t["turn"], t["answer"]) for t in turns] == [(1, "Done.")]
    results = [result["text"] for result in turns[0]["results"]]
    assert results == ["result 1", "result 1, edited", "result 2", "result 3"]


async def test_a_session_call_sees_attachments_added_and_removed_between_its_calls(
    scripted: tuple[Any, Any, ScriptedModel],
) -> None:
    """Whether a session has attachments is read with the call's place, and their texts only when it has any: an
    attachment added (or removed) through the API between two calls is in (or out of) the next call's window."""
    svc, client, model = scripted
    headers = await _admin(svc)
    r = await client.post("/v1/profiles", json={"id": "att_p", "type": "tool_enabled"}, headers=headers)
    assert r.status_code == 201
    call_headers = {**headers, "X-TDA-Session": "att_s", "X-TDA-Profile": "att_p"}
    note = "The warehouse code for ACME is ZX-4471."
    messages: list[dict[str, Any]] = []

    async def call() -> str:
        messages.append({"role": "user", "content": f"What is ACME's warehouse code? ({len(messages)})"})
        r = await client.post("/v1/chat/completions", json={"model": "tda", "messages": messages}, headers=call_headers)
        assert r.status_code == 200, await r.get_json()
        messages.append({"role": "assistant", "content": (await r.get_json())["choices"][0]["message"]["content"]})
        return "\n".join(str(m.get("content")) for m in model.sent[-1]["messages"])

    assert "ZX-4471" not in await call()
    r = await client.post("/v1/sessions/att_s/attachments", json={"name": "acme.txt", "text": note}, headers=headers)
    assert r.status_code == 201, await r.get_json()
    assert "ZX-4471" in await call()
    attachment = (await r.get_json())["id"]
    assert (await client.delete(f"/v1/sessions/att_s/attachments/{attachment}", headers=headers)).status_code == 204
    assert "ZX-4471" not in await call()


async def test_a_session_call_goes_on_from_turns_another_process_recorded(settings: Settings) -> None:
    """Nothing of a session is kept between its calls: a call goes on from the turn another process (here a `tda
    serve` on the same database, as a replica would be) recorded since this one's last call, as the next turn, not
    as a fork of the turn it saw last nor a second turn with that number."""
    model = ScriptedModel()
    app = create_app(settings, llm=model.llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    port = free_port()
    env = server_env(settings.data_dir, port, "http://127.0.0.1:9/v1") | {"TDA_MOCK_MODEL": "1"}
    env["TDA_MODULES_DIR"] = str(settings.modules_dir)
    other = start([sys.executable, "-m", "tda.cli", "serve"], env, settings.data_dir / "other.log")
    try:
        async with app.test_app() as running, httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            headers = await _admin(app.extensions["tda"])
            client = running.test_client()
            r = await client.post("/v1/profiles", json={"id": "two_p", "type": "tool_enabled"}, headers=headers)
            assert r.status_code == 201
            await asyncio.to_thread(
                wait_until_serving, other, f"{http.base_url}/readyz", settings.data_dir / "other.log"
            )
            call_headers = {**headers, "X-TDA-Session": "two_s", "X-TDA-Profile": "two_p"}
            messages: list[dict[str, Any]] = []
            for turn in (1, 2, 3):
                messages.append({"role": "user", "content": f"Question {turn}?"})
                body = {"model": "tda", "messages": messages}
                if turn == 2:  # the other process's
                    r = await http.post("/v1/chat/completions", json=body, headers=call_headers)
                    assert r.status_code == 200, r.text
                    answer = r.json()
                else:
                    answered = await client.post("/v1/chat/completions", json=body, headers=call_headers)
                    answer = await answered.get_json()
                    assert answered.status_code == 200, answer  # 409 when it takes the other's turn number
                messages.append({"role": "assistant", "content": answer["choices"][0]["message"]["content"]})
            turns = (await (await client.get("/v1/sessions/two_s/turns", headers=headers)).get_json())["turns"]
            assert [(t["turn"], t["query"]) for t in turns] == [(n, f"Question {n}?") for n in (1, 2, 3)]
            listed = await (await client.get("/v1/sessions/two_s/messages", headers=headers)).get_json()
            expected = [(n // 2 + 1, m["content"]) for n, m in enumerate(messages)]
            assert [(m["turn"], m["content"]) for m in listed["messages"]] == expected
    finally:
        stop(other)
