"""Recall of earlier turns' tool results through the service, over HTTP: a session of 60 turns, each a tool loop with
its own rows, then a question about turn 3's result. A turn reads only its newest 40 turn records; turn 3 must still
reach the window (plan_hydration's "Earlier result recalled"), and never once it is invalid, hidden by a later phase,
purged, or another session's."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from components.context_window.base import TurnRecord
from components.context_window.recall.turns import turn_gist
from tda.app import create_app
from tda.config import Settings
from tests.service.support import ScriptedModel

TOOL = {
    "type": "function",
    "function": {
        "name": "stock_report",
        "description": "Stock of one product in one warehouse, per size.",
        "parameters": {"type": "object", "properties": {"product": {"type": "string"}}, "required": ["product"]},
    },
}
PRODUCTS = "kettle toaster blender lamp kayak tent drill ladder heater fan mixer router scanner printer bicycle".split()
CITIES = "Lisbon Oslo Graz Porto Leeds Turin Ghent Lyon Bergen Malmo Cork Bruges Split Krakow Dresden".split()
FACT_TURN = 3
FACT_QUERY = "How many turquoise umbrellas are left in the Tromsø warehouse?"
FACT_ROWS = [{"product": "turquoise umbrella", "warehouse": "Tromsø", "size": s, "units": u} for s, u in (("S", 4187),)]
QUESTION = "Remind me: how many turquoise umbrellas did the Tromsø warehouse have?"
MARK = f"## Earlier result recalled (turn {FACT_TURN}:"


def turn_plan(turns: int, seed: int = 11, fact: bool = True) -> list[tuple[str, list[dict[str, Any]]]]:
    """Each turn's query and its tool's rows: turn ``FACT_TURN`` asks about the umbrellas (with ``fact``), the others
    about other products in other cities."""
    rng = random.Random(seed)
    plan = []
    for n in range(1, turns + 1):
        if n == FACT_TURN and fact:
            plan.append((FACT_QUERY, FACT_ROWS))
            continue
        product, city = rng.choice(PRODUCTS), rng.choice(CITIES)
        rows = [{"product": product, "warehouse": city, "size": s, "units": rng.randint(1, 900)} for s in "SML"]
        plan.append((f"What {product} stock does the {city} warehouse hold?", rows))
    return plan


class Client:
    def __init__(self, client: Any, headers: dict[str, str], model: ScriptedModel, svc: Any) -> None:
        self.client, self.headers, self.model, self.svc = client, headers, model, svc

    async def call(self, method: str, url: str, body: Any = None) -> Any:
        r = await getattr(self.client, method)(url, json=body, headers=self.headers)
        assert r.status_code in (200, 201, 204), await r.get_json()
        return await r.get_json() if r.status_code != 204 else None

    async def session(self, session_id: str, phase: str | None = None) -> None:
        await self.call("post", "/v1/sessions", {"id": session_id, "profile_id": "stock", "phase": phase})

    async def tool_turn(self, session_id: str, query: str, rows: list[dict[str, Any]]) -> None:
        """One turn whose reply calls the tool, then its result, then the answer."""
        self.model.replies += [[("call_1", "stock_report", {"product": query[:20]})], "Noted."]
        turn = (await self.call("post", f"/v1/sessions/{session_id}/turns", {"query": query}))["turn"]
        results = {"results": [{"tool_call_id": "call_1", "content": json.dumps(rows)}]}
        await self.call("post", f"/v1/sessions/{session_id}/turns/{turn}/tool-results", results)

    async def play(self, session_id: str, turns: int, seed: int = 11, fact: bool = True) -> None:
        for query, rows in turn_plan(turns, seed, fact):
            await self.tool_turn(session_id, query, rows)
        await self.svc.writer.settle(session_id)

    async def ask(self, session_id: str, query: str = QUESTION) -> tuple[str, dict[str, Any]]:
        """The window's text the model was sent for ``query``, and plan_hydration's recall report."""
        self.model.replies.append("Answered.")
        body = await self.call("post", f"/v1/sessions/{session_id}/turns", {"query": query})
        await self.svc.writer.settle(session_id)
        sent = "\n".join(str(m.get("content") or "") for m in self.model.sent[-1]["messages"])
        plan = next(m for m in body["snapshot"]["modules"] if m["module_id"] == "plan_hydration")
        return sent, plan["metadata"].get("recall", {})


def app_for(settings: Settings, model: ScriptedModel) -> Any:
    return create_app(settings, llm=model.llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)


async def connect(running: Any, model: ScriptedModel, profile: bool = True) -> Client:
    svc = running.app.extensions["tda"]
    token, _ = await svc.store.tokens.create("test-admin", "admin")
    client = Client(running.test_client(), {"Authorization": f"Bearer {token}"}, model, svc)
    if profile:
        await client.call("post", "/v1/profiles", {"id": "stock", "type": "tool_enabled", "tools": [TOOL]})
    return client


@pytest.fixture
async def stock(settings: Settings) -> Any:
    model = ScriptedModel()
    async with app_for(settings, model).test_app() as running:
        yield await connect(running, model)


async def test_a_result_60_turns_back_reaches_the_window(stock: Client):
    await stock.session("s")
    await stock.play("s", 60)
    sent, recall = await stock.ask("s")
    assert MARK in sent and "4187" in sent, recall
    assert FACT_TURN in recall["recalled_turns"]


async def test_an_invalidated_turn_never_comes_back(stock: Client):
    await stock.session("s")
    await stock.play("s", 60)
    sent, _ = await stock.ask("s")
    assert MARK in sent  # indexed and recalled once: the index now holds it
    await stock.call("patch", f"/v1/sessions/s/turns/{FACT_TURN}", {"valid": False})
    sent, recall = await stock.ask("s")
    assert MARK not in sent and "4187" not in sent
    assert FACT_TURN not in recall.get("recalled_turns", [])


async def test_a_purged_memory_recalls_nothing(stock: Client):
    await stock.session("s")
    await stock.play("s", 45)
    assert MARK in (await stock.ask("s"))[0]
    await stock.call("post", "/v1/sessions/s/purge-memory")
    sent, _ = await stock.ask("s")
    assert "4187" not in sent


async def test_a_later_phase_does_not_see_the_turns_of_a_phase_it_may_not_see(stock: Client):
    await stock.session("s", phase="ideate")
    await stock.play("s", 45)
    assert MARK in (await stock.ask("s"))[0]
    await stock.call("patch", "/v1/sessions/s", {"phase": "focus"})  # focus still sees ideate's turns
    assert MARK in (await stock.ask("s"))[0]
    await stock.call("patch", "/v1/sessions/s", {"phase": "operate"})  # operate does not
    sent, _ = await stock.ask("s")
    assert "4187" not in sent


async def test_one_sessions_turns_never_reach_another_session(stock: Client):
    await stock.session("a")
    await stock.play("a", 45)
    await stock.session("b")
    await stock.play("b", 45, seed=5, fact=False)  # the same shape of turns, without the umbrellas
    sent, _ = await stock.ask("b")
    assert "4187" not in sent and MARK not in sent and FACT_QUERY not in sent
    assert MARK in (await stock.ask("a"))[0]  # a's own question still finds it


async def test_a_session_deleted_and_created_again_under_its_id_starts_afresh(stock: Client):
    await stock.session("s")
    await stock.play("s", 45)
    assert MARK in (await stock.ask("s"))[0]
    await stock.call("delete", "/v1/sessions/s")
    await stock.session("s")
    await stock.play("s", 45, seed=5, fact=False)
    sent, _ = await stock.ask("s")
    assert "4187" not in sent


async def test_another_replica_rebuilds_the_index_from_the_database(settings: Settings):
    """Replica A records the turns; replica B (the same database, its own memory) answers the question, and after
    the session is deleted and created again on A, B's index of the old session never serves the new one."""
    model_a, model_b = ScriptedModel(), ScriptedModel()
    async with app_for(settings, model_a).test_app() as running_a, app_for(settings, model_b).test_app() as running_b:
        a, b = await connect(running_a, model_a), await connect(running_b, model_b, profile=False)
        await a.session("s")
        await a.play("s", 45)
        assert MARK in (await b.ask("s"))[0]
        await a.call("delete", "/v1/sessions/s")
        await a.session("s")
        await a.play("s", 45, seed=5, fact=False)
        sent, _ = await b.ask("s")
        assert "4187" not in sent


class CountingEmbedder:
    """Wraps the service's embedder and keeps every text it was asked to embed."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.texts = inner, list[str]()

    async def embed(self, texts: Any) -> list[list[float]]:
        self.texts += list(texts)
        return await self.inner.embed(texts)


async def test_a_turn_embeds_no_earlier_turns_gist(stock: Client):
    """Each recorded turn's gist is embedded after its response (background writer): the next turn's assembly embeds
    its query, never an earlier turn's gist again."""
    counting = stock.svc.sources.embedder = CountingEmbedder(stock.svc.sources.embedder)
    await stock.session("s")
    await stock.play("s", 12)
    gists = {turn_gist(record) for record in await _records(stock, "s")}
    assert len(gists) == 12
    counting.texts.clear()
    _, recall = await stock.ask("s")
    assert recall["method"] == "lexical+dense"
    assert not gists & set(counting.texts), "the turn embedded earlier turns' gists"
    assert QUESTION in counting.texts


async def test_a_gateway_session_embeds_no_turn_gist(stock: Client):
    """A gateway session's windows are the client's conversation: no module searches its recorded turns, so their
    gists are not embedded (a fifth of a gateway turn's embedding went to them); a native turn's are (above)."""
    counting = stock.svc.sources.embedder = CountingEmbedder(stock.svc.sources.embedder)
    headers = {**stock.headers, "X-TDA-Session": "g", "X-TDA-Profile": "stock"}
    chat: list[dict[str, Any]] = []
    for query, _ in turn_plan(4):
        stock.model.replies.append(f"Noted: {query}")
        chat.append({"role": "user", "content": query})
        r = await stock.client.post("/v1/chat/completions", json={"model": "tda", "messages": chat}, headers=headers)
        assert r.status_code == 200, await r.get_json()
        chat.append((await r.get_json())["choices"][0]["message"])
    await stock.svc.writer.settle("g")
    gists = {turn_gist(record) for record in await _records(stock, "g")}
    assert len(gists) == 4
    assert not gists & set(counting.texts), "a gateway turn's gist was embedded"


async def _records(client: Client, session_id: str) -> list[TurnRecord]:
    return [TurnRecord(t.turn, t.query, t.plan) for t in await client.svc.store.sessions.turns(session_id)]


async def test_the_lists_kept_turn_by_turn_are_what_a_replica_reads_afresh(stock: Client):
    """Each turn is described while its tool loop is open, then again with its results; the index goes on from its
    last list (cut before a turn described again, not remade): what it hands the modules is what an index meeting
    the session for the first time reads from the database."""
    from modules.plan_hydration.offload import describe
    from modules.workflow_history.handler import turn_described
    from tda.recall.turns import TurnIndex

    await stock.session("s")
    for query, rows in turn_plan(30):
        await stock.tool_turn("s", query, rows)
        await stock.svc.writer.settle("s")
    await stock.ask("s")
    session = await stock.svc.store.sessions.get("s")
    kept = stock.svc.sources.turn_index.bound(session, session.phase)
    fresh = TurnIndex(stock.svc.store.db, lambda: None).bound(session, session.phase)
    for kind, describer in (("plan_hydration", describe), ("workflow_history", turn_described)):
        listed = await kept.described(kind, describer, before=32)  # turns 1-30 and the question, turn 31
        assert listed == await fresh.described(kind, describer, before=32)
        # every tool turn with its results; the question (turn 31) has none for plan_hydration: not listed there
        assert len(listed) == (30 if kind == "plan_hydration" else 31) and all(d is not None for _, d in listed)


async def test_a_turn_described_again_inside_a_kept_list_takes_its_place_there(stock: Client):
    """A list handed out holds turns 1-5 but 3 (no results: nothing to search); turn 3 is recorded again (its tool
    loop went on elsewhere, with results): the next list holds turn 3's new description between the same turns 1-2
    and 4-5 (it is cut before turn 3, not remade)."""
    from types import SimpleNamespace

    from modules.plan_hydration.offload import describe
    from tda.recall.turns import TurnIndex

    index, key = TurnIndex(stock.svc.store.db, lambda: None), ("nowhere", "nowhere@0")

    def row(turn: int, results: tuple[Any, ...] = ()) -> Any:
        fields = {"query": f"question {turn}", "plan": "", "answer": "", "tokens_in": 0, "tokens_out": 0}
        return SimpleNamespace(turn=turn, outcome="success", results=results, valid=True, phase=None, **fields)

    assert await index.described(key, None, 0, "plan_hydration", describe, before=1) == []
    for turn in range(1, 6):
        results = () if turn == 3 else ({"tool": "lookup", "text": f"turn {turn}'s result"},)
        await index.recorded(key, row(turn, results))
    first = await index.described(key, None, 0, "plan_hydration", describe, before=6)
    assert [n for n, _ in first] == [1, 2, 4, 5]
    await index.recorded(key, row(3, ({"tool": "lookup", "text": "turquoise umbrellas: 4187"},)))
    again = await index.described(key, None, 0, "plan_hydration", describe, before=6)
    assert [n for n, _ in again] == [1, 2, 3, 4, 5] and again[:2] == first[:2] and again[3:] == first[2:]
    assert again[2][0] == 3 and "4187" in again[2][1].text.text
