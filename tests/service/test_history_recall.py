"""Recall of older history through the service: a long history imported over HTTP (with turn numbers), then a
question asked as a turn; what the model was sent is checked against what was planted."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from tda.app import create_app
from tda.cli import main
from tda.config import Settings
from tests.service.support import ScriptedModel

FACT = "My sister Margot adopted a three-legged greyhound called Biscuit last spring."
QUESTION = "What is the name of the dog my sister adopted?"
WORDS = "budget oven flight garden router invoice kettle ferry lemon pension tiles marathon spreadsheet".split()


def long_history(messages: int = 420, fact_at: int = 40, seed: int = 7) -> list[dict[str, Any]]:
    """User questions and long replies, with turn numbers (as the platform imports them), a fact far back."""
    rng = random.Random(seed)
    out = []
    for i in range(messages):
        role = "user" if i % 2 == 0 else "assistant"
        n = rng.randint(15, 40) if role == "user" else rng.randint(120, 260)
        out.append(
            {
                "role": role,
                "content": f"{i}: " + " ".join(rng.choice(WORDS) for _ in range(n)) + ".",
                "turn": i // 2 + 1,
            }
        )
    out[fact_at]["content"] = FACT
    return out


@pytest.fixture
async def chat(settings: Settings) -> Any:
    model = ScriptedModel()
    app = create_app(settings, llm=model.llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as running:
        svc = running.app.extensions["tda"]
        token, _ = await svc.store.tokens.create("test-admin", "admin")
        client = running.test_client()
        headers = {"Authorization": f"Bearer {token}"}
        profile = {"id": "chat", "type": "llm_only", "context_window_type_id": "conversation_first"}
        assert (await client.post("/v1/profiles", json=profile, headers=headers)).status_code == 201
        yield client, headers, model


async def ask_after_import(
    chat: Any, history: list[dict[str, Any]], limit: int = 4_000, question: str = QUESTION
) -> tuple[list[Any], Any]:
    client, headers, model = chat
    session = {"id": f"s{limit}", "profile_id": "chat", "context_limit": limit}
    assert (await client.post("/v1/sessions", json=session, headers=headers)).status_code == 201
    r = await client.post(f"/v1/sessions/s{limit}/messages", json={"messages": history}, headers=headers)
    assert r.status_code == 201, await r.get_json()
    r = await client.post(f"/v1/sessions/s{limit}/turns", json={"query": question}, headers=headers)
    assert r.status_code == 201, await r.get_json()
    snapshot = (await r.get_json())["snapshot"]
    return model.sent[-1]["messages"], next(m for m in snapshot["modules"] if m["module_id"] == "conversation_history")


async def test_a_fact_far_back_in_an_imported_history_reaches_the_model(chat):
    sent, _ = await ask_after_import(chat, long_history())
    assert FACT in [m["content"] for m in sent]
    assert sent[-1] == {"role": "user", "content": QUESTION}


async def test_a_question_nothing_earlier_answers_recalls_nothing_and_the_snapshot_says_so(chat):
    """Abstention over HTTP: a question about a person the history never names brings back nothing by relevance (the
    "dog" and "adopted" of the planted fact would have found it), the snapshot says nothing relevant was found, and
    the newest turns are sent as for any question."""
    history = long_history()
    question = "What kind of dog did my neighbour Dmitri adopt?"
    sent, module = await ask_after_import(chat, history, question=question)
    meta = module["metadata"]
    assert meta["recall_reason"] == "nothing relevant found: no earlier message mentions Dmitri"
    assert meta["relevant_tokens"] == 0
    contents = [m["content"] for m in sent]
    assert FACT not in contents
    assert sent[-1] == {"role": "user", "content": question}
    newest = meta["messages_kept"]
    tail = [m["content"] for m in history[-newest:]]
    start = contents.index(tail[0])
    assert contents[start : start + newest] == tail  # the newest turns, whole (the newest older ones may follow)


async def test_imported_history_with_turn_numbers_fills_its_allocation(chat):
    """The reported bug: 823 of 1,751 allocated tokens used at a 4,000 limit (long_conversation's condense rule fired
    on the imported turn numbers, cache blocks dropped long replies, a summary's room was kept)."""
    _, history = await ask_after_import(chat, long_history())
    largest = 400  # a reply here is at most ~300 tokens: the history is short of its allocation by less than one
    assert history["allocated"] - largest < history["used"] <= history["allocated"]
    assert history["metadata"]["recalled_messages"] > 0


@pytest.mark.parametrize("limit", [1_500, 2_000, 4_000, 8_000])
async def test_the_window_never_opens_with_a_reply_whose_question_was_dropped(chat, limit):
    history = long_history(120)
    sent, _ = await ask_after_import(chat, history, limit)
    conversation = [m for m in sent if m["role"] != "system"]
    assert conversation[0]["role"] == "user"
    first = [m["content"] for m in history].index(conversation[0]["content"])
    assert history[first]["role"] == "user"


def test_tda_assemble_recalls_from_a_session_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """The library path: the module indexes the session file's history at first use."""
    data = {
        "model": "gpt-4o",
        "query": QUESTION,
        "profile": {"id": "p", "type": "llm_only"},
        "session": {"id": "file"},
        "messages": long_history(300),
    }
    path = tmp_path / "session.json"
    path.write_text(json.dumps(data))
    assert main(["assemble", "--session", str(path), "--type", "conversation_first", "--limit", "4000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert FACT in [m["content"] for m in out["messages"]]


async def test_a_replay_of_a_recalled_turn_is_identical(chat):
    """The trace replays the turn on the history before it, while the session's recall index already holds that
    turn: its question matching itself must not hold recall back in the replay."""
    client, headers, _ = chat
    await ask_after_import(chat, long_history(300))
    turns = await (await client.get("/v1/sessions/s4000/turns", headers=headers)).get_json()
    snapshot_id = turns["turns"][-1]["snapshot_id"]
    trace = await (await client.get(f"/v1/snapshots/{snapshot_id}/trace", headers=headers)).get_json()
    assert trace["identical"] is True
    assert FACT in [m["content"] for m in trace["messages"]]


async def test_a_long_history_is_indexed_and_ranked_in_worker_threads(settings: Settings):
    """The service hands recall and the modules its worker threads (``tda/offload.py``): a long history's indexing
    and ranking leave the event loop free for other requests, and the fact still reaches the model."""
    from tda.offload import in_thread
    from tests.test_recall_offload import ThreadRunner

    model = ScriptedModel()
    app = create_app(settings, llm=model.llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as running:
        svc = running.app.extensions["tda"]
        recall = svc.sources.history_recall
        assert svc.sources.offload is in_thread and recall.runner is in_thread
        runner = ThreadRunner()  # in_thread, noting where each step ran
        svc.sources.offload = recall.runner = runner
        token, _ = await svc.store.tokens.create("test-admin", "admin")
        client = running.test_client()
        headers = {"Authorization": f"Bearer {token}"}
        profile = {"id": "chat", "type": "llm_only", "context_window_type_id": "conversation_first"}
        assert (await client.post("/v1/profiles", json=profile, headers=headers)).status_code == 201
        sent, _ = await ask_after_import((client, headers, model), long_history(1_200))
    assert FACT in [m["content"] for m in sent]
    assert runner.threads


async def test_the_index_after_each_turn_holds_it_without_reading_the_session_again(chat):
    """After each turn the session's recall index is brought up to its stored history (the next turn finds it
    ready, every message with its vector) from the session as the turn left it: the session is read once a turn."""
    client, headers, _ = chat
    svc = client.app.extensions["tda"]
    assert (
        await client.post("/v1/sessions", json={"id": "s", "profile_id": "chat"}, headers=headers)
    ).status_code == 201
    r = await client.post("/v1/sessions/s/messages", json={"messages": long_history(40, fact_at=4)}, headers=headers)
    assert r.status_code == 201
    await svc.writer.drain()
    loads: list[str] = []
    load = svc.store.sessions.load

    async def counted(session_id: str, *args: Any, **kwargs: Any) -> Any:
        loads.append(session_id)
        return await load(session_id, *args, **kwargs)

    svc.store.sessions.load = counted
    for n, question in enumerate((QUESTION, "And the oven?", "Which ferry was it?"), start=1):
        r = await client.post("/v1/sessions/s/turns", json={"query": question}, headers=headers)
        assert r.status_code == 201, await r.get_json()
        await svc.writer.drain()
        stored = (await svc.store.sessions.get("s")).message_count
        index = svc.sources.history_recall._indexes.get("s")
        assert stored == 40 + 2 * n and len(index) == stored and index.vectored == stored
        assert [m.content for m in index.messages[-2:]] == [question, "Done."]
    assert loads == ["s", "s", "s"]  # each turn's own load; its indexing reads nothing of the session again
