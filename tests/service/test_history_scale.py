"""A turn's cost follows its window, not the history: what a turn reads from the database, what is kept between
turns (and when it is dropped), token counts stored at write, paged session reads, and case recording after
the response with nothing lost at shutdown."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from sqlalchemy import event

from components.context_window.token_estimator import estimator_for
from tda.app import create_app
from tda.config import Settings
from tda.db import upgrade
from tda.errors import Conflict, NotFound
from tda.history import message_of
from tda.llm import LLM, Completion
from tda.recall.messages import index_history
from tda.sources import Sources
from tda.store import Store
from tests.media import data_url

HISTORY = 3_000
"""Messages imported before the first turn (1,500 questions and answers)."""


class RecordingLLM(LLM):
    def __init__(self) -> None:
        super().__init__(mock=True)
        self.calls: list[list[dict[str, Any]]] = []

    async def complete(
        self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **kw: Any
    ) -> Completion:
        self.calls.append(messages)
        return Completion(f"Answer number {len(self.calls)}.", 100, 5, [])


class SlowRecorder:
    """A champion-case recorder that takes its time (as Chroma and an embedder can)."""

    def __init__(self) -> None:
        self.recorded: list[tuple[str, int]] = []

    def case_id(self, query: str, answer: str, **scope: Any) -> str:
        return f"case:{query}"

    async def record_case(self, query: str, answer: str, **kw: Any) -> str:
        await asyncio.sleep(0.3)
        self.recorded.append((kw["session_id"], kw["turn"]))
        return f"case:{query}"

    async def retrieve_cases(self, query: str, **kw: Any) -> list[Any]:
        return []


class Reads:
    """Counts the message rows the store hands out."""

    def __init__(self, svc: Any) -> None:
        self.rows = 0
        store = svc.store.sessions
        for name in ("message_page", "messages_after"):
            original = getattr(store, name)

            async def counted(*args: Any, _original: Any = original, **kw: Any) -> Any:
                rows = await _original(*args, **kw)
                self.rows += len(rows)
                return rows

            setattr(store, name, counted)


def _history(turns: int, start: int = 1) -> list[dict[str, Any]]:
    out = []
    for t in range(start, start + turns):
        out.append({"role": "user", "content": f"question {t}: how did the returns in region {t % 7} go?", "turn": t})
        out.append(
            {"role": "assistant", "content": f"answer {t}: returns in region {t % 7} fell by {t % 13}%.", "turn": t}
        )
    return out


@pytest.fixture
def llm() -> RecordingLLM:
    return RecordingLLM()


@pytest.fixture
def recorder() -> SlowRecorder:
    return SlowRecorder()


@pytest.fixture(scope="module")
def long_session_db(tmp_path_factory: pytest.TempPathFactory, template_db: Path) -> Path:
    """The template database with session "long" and its imported history, written once per module (the import
    counts every message's tokens per encoding): each test starts its app on a copy."""
    path = tmp_path_factory.mktemp("long_session") / "tda.db"
    shutil.copy(template_db, path)
    asyncio.run(_import_long_session(f"sqlite+aiosqlite:///{path}"))
    return path


async def _import_long_session(url: str) -> None:
    store = Store.connect(url)
    try:
        await store.profiles.create(
            "p", {"type": "llm_only", "context_limit": 4_000, "context_window_type_id": "balanced"}, "test"
        )
        await store.sessions.create({"id": "long", "profile_id": "p"}, "test")
        await store.sessions.add_messages("long", _history(HISTORY // 2), "test")
    finally:
        await store.close()


@pytest.fixture
async def app(
    settings: Settings, llm: RecordingLLM, recorder: SlowRecorder, long_session_db: Path
) -> AsyncIterator[Any]:
    shutil.copy(long_session_db, settings.data_dir / "tda.db")
    app = create_app(settings, llm=llm, sources=Sources(cases=recorder), migrate=False, warm_up_llm=False)
    async with app.test_app() as running:
        svc = running.app.extensions["tda"]
        await index_history(
            svc, "long"
        )  # as POST /v1/sessions/{id}/messages does after an import (tda/recall/messages.py)
        token, _ = await svc.store.tokens.create("t", "admin")
        yield running, svc, {"Authorization": f"Bearer {token}"}


async def _turn(client: Any, headers: dict[str, str], query: str, session: str = "long") -> dict[str, Any]:
    r = await client.post(f"/v1/sessions/{session}/turns", json={"query": query}, headers=headers)
    assert r.status_code == 201, await r.get_json()
    return await r.get_json()


def _sent(llm: RecordingLLM, call: int = -1) -> str:
    return "\n".join(str(m["content"]) for m in llm.calls[call])


async def test_a_turn_reads_only_the_newest_messages_and_the_next_only_what_was_added(app, llm, settings):
    running, svc, headers = app
    reads = Reads(svc)
    client = running.test_client()
    body = await _turn(client, headers, "Which region did best?")
    assert body["turn"] == HISTORY // 2 + 1
    history = next(m for m in body["snapshot"]["modules"] if m["module_id"] == "conversation_history")
    assert history["metadata"]["messages_total"] == HISTORY
    assert "answer 1500:" in _sent(llm) and "answer 1:" not in _sent(llm)
    first_reads = reads.rows
    assert first_reads <= 512  # at most the pages the window used, not 3,000 (indexing the import read them once)

    reads.rows = 0
    second = await _turn(client, headers, "And the worst?")
    assert reads.rows == 0  # the previous turn's question and answer were kept as it recorded them
    assert "Which region did best?" in _sent(llm) and "Answer number 1." in _sent(llm)

    other = Store.connect(settings.sqlalchemy_url)  # a second replica records the next turn
    try:
        elsewhere = {"turn": second["turn"] + 1, "query": "Elsewhere?", "answer": "Answered elsewhere."}
        messages = [{"role": "user", "content": "Elsewhere?"}, {"role": "assistant", "content": "Answered elsewhere."}]
        await other.sessions.record_turn("long", elsewhere, messages)
    finally:
        await other.close()
    reads.rows = 0
    await _turn(client, headers, "And here?")
    assert reads.rows == 2  # what the other replica added is read; this replica's own turns were kept
    assert "Answered elsewhere." in _sent(llm) and "And the worst?" in _sent(llm)


async def test_a_history_change_through_another_replica_is_seen_by_the_next_turn(app, llm, settings):
    running, _svc, headers = app
    client = running.test_client()
    await _turn(client, headers, "Which region did best?")
    await _turn(client, headers, "And the worst?")
    assert "Which region did best?" in _sent(llm)
    other = Store.connect(settings.sqlalchemy_url)  # a second replica on the same database
    try:
        await other.sessions.set_turn_validity("long", 1501, False, "test")
        await _turn(client, headers, "Once more?")
        assert "Which region did best?" not in _sent(llm) and "answer 1500:" in _sent(llm)
        await other.sessions.purge_memory("long", "test")
        await _turn(client, headers, "Anything left?")
        assert "answer 1500:" not in _sent(llm) and "Once more?" not in _sent(llm)
    finally:
        await other.close()


async def test_messages_are_stored_with_their_token_counts_per_encoding(app):
    running, svc, headers = app
    await _turn(running.test_client(), headers, "How many kettles came back?")
    rows = await svc.store.sessions.message_page("long", None, 2)
    assert [r.role for r in rows] == ["assistant", "user"]
    for row in rows:
        for name in ("o200k_base", "cl100k_base"):
            enc = tiktoken.get_encoding(name)  # OpenAI cookbook: 3 per message plus its fields' tokens
            assert row.token_counts[name] == 3 + len(enc.encode(row.role)) + len(enc.encode(row.content))
    session = await svc.store.sessions.get("long")
    assert session.message_count == HISTORY + 2


async def test_a_message_with_an_image_is_stored_without_per_encoding_counts_and_counted_per_model(app):
    """An image's tokens depend on the model (765 on gpt-4o, 25,501 on gpt-4o-mini for 1024 x 1024), so its
    message keeps no per-encoding count; a message of text parts keeps the cookbook count of its texts."""
    _running, svc, _headers = app
    image = {"type": "image_url", "image_url": {"url": data_url("png", 1024, 1024), "detail": "high"}}
    texts = [{"type": "text", "text": "Two parts"}, {"type": "text", "text": "of text."}]
    await svc.store.sessions.add_messages(
        "long",
        [
            {"role": "user", "content": "Look:", "parts": [{"type": "text", "text": "Look:"}, image], "turn": 1600},
            {"role": "user", "content": "Two parts\nof text.", "parts": texts, "turn": 1600},
        ],
        "test",
    )
    text_row, pictured_row = await svc.store.sessions.message_page("long", None, 2)
    assert pictured_row.token_counts is None
    enc = tiktoken.get_encoding("o200k_base")
    assert text_row.token_counts["o200k_base"] == 3 + 1 + len(enc.encode("Two parts")) + len(enc.encode("of text."))
    pictured = message_of(pictured_row)
    look = 3 + 1 + len(enc.encode("Look:"))
    assert estimator_for("gpt-4o").count_message(pictured) == look + 765
    assert estimator_for("gpt-4o-mini").count_message(pictured) == look + 2833 + 5667 * 4


async def test_get_session_pages_its_turns_and_costs_no_history_read(app):
    running, svc, headers = app
    client = running.test_client()
    for t in range(1, 121):
        await svc.store.sessions.record_turn("long", {"turn": 1500 + t, "query": f"q{t}", "answer": f"a{t}"}, [])
    reads = Reads(svc)
    r = await client.get("/v1/sessions/long?turns=50", headers=headers)
    body = await r.get_json()
    assert r.status_code == 200 and reads.rows == 0
    assert [t["turn"] for t in body["turns"]] == list(range(1571, 1621))
    assert body["older_turns"] == 1571 and body["message_count"] == HISTORY
    older = await (await client.get("/v1/sessions/long?turns=50&before=1571", headers=headers)).get_json()
    assert [t["turn"] for t in older["turns"]] == list(range(1521, 1571)) and older["older_turns"] == 1521
    last = await (await client.get("/v1/sessions/long?turns=50&before=1521", headers=headers)).get_json()
    assert [t["turn"] for t in last["turns"]] == list(range(1501, 1521)) and last["older_turns"] is None
    r = await client.get("/v1/sessions/long?turns=0", headers=headers)
    assert r.status_code == 422 and (await r.get_json())["errors"][0]["loc"] == "turns"


async def test_a_champion_case_is_recorded_before_the_response_names_it(settings, llm, recorder):
    app = create_app(settings, llm=llm, sources=Sources(cases=recorder), migrate=False, warm_up_llm=False)
    async with app.test_app() as running:
        svc = running.app.extensions["tda"]
        await svc.store.profiles.create("p", {"type": "llm_only"}, "test")
        await svc.store.sessions.create({"id": "s", "profile_id": "p"}, "test")
        token, _ = await svc.store.tokens.create("t", "admin")
        headers = {"Authorization": f"Bearer {token}"}
        body = await _turn(running.test_client(), headers, "First?", session="s")
        assert body["champion_case_id"] == "case:First?" and recorder.recorded == [("s", 1)]  # durable when named
        await _turn(running.test_client(), headers, "Second?", session="s")
        assert recorder.recorded == [("s", 1), ("s", 2)]


def test_the_migration_counts_the_messages_of_existing_sessions(tmp_path):
    import sqlite3

    path = tmp_path / "old.db"
    url = f"sqlite+aiosqlite:///{path}"
    upgrade(url, "0001")
    with sqlite3.connect(path) as db:
        now = "2026-01-01 00:00:00"
        db.execute(
            "INSERT INTO profiles (id, name, type, system_prompt, tools, components, knowledge_collections,"
            " created_at, updated_at) VALUES ('p', '', 'llm_only', '', '[]', '[]', '[]', ?, ?)",
            (now, now),
        )
        for sid, n in (("a", 3), ("b", 0)):
            db.execute(
                "INSERT INTO sessions (id, profile_id, user_id, title, created_at, updated_at)"
                " VALUES (?, 'p', 'u', '', ?, ?)",
                (sid, now, now),
            )
            for i in range(n):
                db.execute(
                    "INSERT INTO messages (session_id, turn, role, content, tool_calls, valid, tokens,"
                    " created_at) VALUES (?, ?, 'user', 'hi', '[]', 1, 0, ?)",
                    (sid, i, now),
                )
    upgrade(url)
    with sqlite3.connect(path) as db:
        counts = dict(db.execute("SELECT id, message_count FROM sessions").fetchall())
        assert counts == {"a": 3, "b": 0}
        assert db.execute("SELECT token_counts FROM messages LIMIT 1").fetchone() == (None,)


async def test_turns_stay_right_when_the_kept_histories_are_evicted(app, llm):
    running, svc, headers = app
    client = running.test_client()
    svc.history.max_messages = 40  # far below what three sessions hold: runs are dropped all the time
    for sid in ("e1", "e2", "e3"):
        await svc.store.sessions.create({"id": sid, "profile_id": "p"}, "test")
        await svc.store.sessions.add_messages(sid, _history(15), "test")
    for round_no in range(4):
        for sid in ("e1", "e2", "e3"):
            body = await _turn(client, headers, f"{sid} round {round_no}", session=sid)
            assert body["turn"] == 16 + round_no
            assert f"{sid} round {round_no - 1}" in _sent(llm) if round_no else "answer 15:" in _sent(llm)
    assert svc.history.stats()["messages"] <= 40 + 256  # the bound, plus one read ahead in flight


async def test_one_session_keeps_no_more_than_the_bound_and_its_windows_stay_the_same(app, llm):
    """A session alone in the server (a long agent session) keeps only its newest messages, not every message it
    ever recorded; a window reaching past them reads the rest again: the same windows as with all of them kept."""
    running, svc, headers = app
    client = running.test_client()
    windows = []
    for sid, bound in (("kept", 10_000), ("trimmed", 16)):
        svc.history.max_messages = bound
        await svc.store.sessions.create({"id": sid, "profile_id": "p"}, "test")
        await svc.store.sessions.add_messages(sid, _history(20), "test")
        for query in ("Which region fell most?", "And in region 3?", "Which answers named region 5?"):
            await _turn(client, headers, query, session=sid)
            assert "answer 1:" in _sent(llm)  # the whole history fits the window: read back from the database
            windows.append(re.sub(r"Answer number \d+", "Answer", json.dumps(llm.calls[-1])))
        assert svc.history.stats()["messages"] <= bound
    assert windows[:3] == windows[3:]


async def test_a_turn_recorded_twice_is_refused_whole(app):
    """Two writers of one turn (replicas racing past a lost lock): the second is refused, none of its messages land."""
    _running, svc, _headers = app
    before = (await svc.store.sessions.load("long")).message_count
    first = {"turn": 1700, "query": "q", "answer": "a"}
    await svc.store.sessions.record_turn("long", first, [{"role": "user", "content": "first", "turn": 1700}])
    with pytest.raises(Conflict, match="turn 1700 of session 'long' was recorded meanwhile"):
        await svc.store.sessions.record_turn("long", first, [{"role": "user", "content": "second", "turn": 1700}])
    assert (await svc.store.sessions.load("long")).message_count == before + 1
    assert [m.content for m in await svc.store.sessions.turn_messages("long", 1700)] == ["first"]
    with pytest.raises(NotFound):
        await svc.store.sessions.record_turn("nowhere", first, [])


async def test_a_recorded_turn_returns_its_rows_as_stored(app):
    """record_turn hands back (to the history cache, to champion-case recording) what a later read returns:
    ids in the order given, the columns' defaults, the token counts stored per encoding."""
    _running, svc, _headers = app
    turn = {"turn": 1800, "query": "q?", "answer": "a.", "tokens_in": 7}
    messages = [
        {"role": "user", "content": "q?", "tokens": 3},
        {"role": "assistant", "content": "a.", "tool_calls": [{"id": "c1", "function": {"name": "f"}}], "tokens": 2},
    ]
    row, rows = await svc.store.sessions.record_turn("long", turn, messages)
    stored = await svc.store.sessions.turn("long", 1800)
    assert {c: getattr(row, c) for c in row._fields} == {c: getattr(stored, c) for c in row._fields}
    assert (row.plan, row.results, row.outcome, row.valid) == ("", [], "success", True)
    page = await svc.store.sessions.message_page("long", None, 2)
    assert [tuple(r) for r in rows] == [tuple(r) for r in page[::-1]]
    assert rows[0].id < rows[1].id and rows[1].tool_calls == messages[1]["tool_calls"]
    assert rows[0].token_counts["o200k_base"] > 0 and rows[0].valid is True


async def test_a_long_turn_is_recorded_in_batches_as_given(app):
    """A turn bringing a long history (a chat client's first call with a session) is written a batch of rows per
    statement, its token counts made off the loop: the rows come back as a later read returns them, in the order
    given, whatever fields each message names (a batch's rows name the same columns)."""
    from tda.store.sessions import MESSAGE_BATCH

    _running, svc, _headers = app
    n = 2 * MESSAGE_BATCH + 7
    messages: list[dict[str, Any]] = [
        {"role": ("user", "assistant")[i % 2], "content": f"line {i} of a long chat", "tokens": 9} for i in range(n)
    ]
    messages[MESSAGE_BATCH - 1]["name"] = "maya"  # a message naming another column splits a batch
    messages[MESSAGE_BATCH + 3] = {**messages[MESSAGE_BATCH + 3], "tool_calls": [{"id": "c1", "function": {}}]}
    statements: list[str] = []
    engine = svc.store.db.engine.sync_engine
    listener = lambda *args: statements.append(args[2])  # noqa: E731  # (conn, cursor, statement, ...)
    event.listen(engine, "before_cursor_execute", listener)
    try:
        _, rows = await svc.store.sessions.record_turn("long", {"turn": 1900, "query": "q", "answer": "a"}, messages)
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    inserts = [s for s in statements if s.startswith("INSERT INTO messages")]
    assert len(inserts) <= 6, len(inserts)  # runs of B - 1, 1, 3, 1, B + 3 rows naming the same columns: not one each
    assert [r.content for r in rows] == [m["content"] for m in messages]
    assert [r.id for r in rows] == sorted(r.id for r in rows) and len({r.id for r in rows}) == n
    page = await svc.store.sessions.message_page("long", None, n)
    assert [tuple(r) for r in rows] == [tuple(r) for r in page[::-1]]
    assert rows[MESSAGE_BATCH - 1].name == "maya" and rows[MESSAGE_BATCH].name is None
    encoding = tiktoken.get_encoding("o200k_base")  # the count stored is OpenAI cookbook's: 3 + role + content
    assert rows[10].token_counts["o200k_base"] == 3 + len(encoding.encode("user")) + len(
        encoding.encode("line 10 of a long chat")
    )


async def test_a_turn_whose_kept_history_is_dropped_while_it_reads_still_runs(app, llm, monkeypatch):
    """Turns on other sessions may drop a session's kept history while its turn reads what was added: the turn
    goes on with what it read (this was an HTTP 500 once the server held more sessions than it keeps)."""
    running, svc, headers = app
    client = running.test_client()
    for sid in ("d1", "d2"):
        await svc.store.sessions.create({"id": sid, "profile_id": "p"}, "test")
        await svc.store.sessions.add_messages(sid, _history(5), "test")
    await _turn(client, headers, "first", session="d1")  # d1's history is kept now
    svc.history.max_messages = 1  # from here on, keeping one session's history drops the others'
    read_since = svc.store.sessions.messages_after

    async def meanwhile_another_session_takes_the_room(session_id, after):
        rows = await read_since(session_id, after)
        if session_id == "d1":
            await svc.history.source(await svc.store.sessions.load("d2"))
        return rows

    monkeypatch.setattr(svc.store.sessions, "messages_after", meanwhile_another_session_takes_the_room)
    body = await _turn(client, headers, "second", session="d1")
    assert body["turn"] == 7 and "first" in _sent(llm)
