"""Champion cases stay in the scope they were recorded in (issue 22, item 4), on live turns over HTTP.

A turn whose tool result holds a customer's data answers with it, and the answer becomes a champion case. What the
model is sent in another session (another user's, or the same user's) must not hold that data: the mock model keeps
every request it gets, and the tests read them. The profile's ``case_sharing`` decides what is shared: ``session``
(its own cases), ``user`` (the default: also the same user's tool-free cases), ``profile`` (all, on purpose)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tda.app import create_app
from tda.config import Settings
from tests.service.support import ScriptedModel

TOOL = {
    "type": "function",
    "function": {
        "name": "lookup_account",
        "description": "Look up a bank account by its number.",
        "parameters": {"type": "object", "properties": {"account": {"type": "string"}}, "required": ["account"]},
    },
}
SECRET_QUESTION = "Who owns account 42 and what is its balance?"
SECRET_RESULT = '{"owner": "John Smith", "balance": "1234.56 EUR"}'
SECRET_ANSWER = "Account 42: owner John Smith, balance 1234.56 EUR."
SECRETS = ("John Smith", "1234.56")
PLAIN_QUESTION = "How long is the refund window for kettles?"
PLAIN_ANSWER = "Kettles can be returned within forty-five days."


class Agent:
    def __init__(self, client: Any, headers: dict[str, str], model: ScriptedModel, svc: Any) -> None:
        self.client, self.headers, self.model, self.svc = client, headers, model, svc

    async def call(self, method: str, url: str, status: int, body: Any = None) -> Any:
        r = await getattr(self.client, method)(url, json=body, headers=self.headers)
        data = await r.get_json()
        assert r.status_code == status, data
        return data

    async def session(self, session_id: str, user_id: str | None = None, profile_id: str = "p1") -> str:
        body = {"id": session_id, "profile_id": profile_id} | ({"user_id": user_id} if user_id else {})
        await self.call("post", "/v1/sessions", 201, body)
        return session_id

    async def secret_turn(self, session_id: str) -> dict[str, Any]:
        """A turn whose tool loop read an account: its answer quotes the tool's result."""
        self.model.replies = [[("call_1", "lookup_account", {"account": "42"})], SECRET_ANSWER]
        first = await self.call("post", f"/v1/sessions/{session_id}/turns", 201, {"query": SECRET_QUESTION})
        assert first["finish_reason"] == "tool_calls"
        results = {"results": [{"tool_call_id": "call_1", "content": SECRET_RESULT}]}
        done = await self.call("post", f"/v1/sessions/{session_id}/turns/{first['turn']}/tool-results", 201, results)
        assert done["answer"] == SECRET_ANSWER and done["champion_case_id"]
        await self.svc.writer.settle(session_id)  # its champion case is recorded
        return done

    async def plain_turn(self, session_id: str) -> dict[str, Any]:
        self.model.replies = [PLAIN_ANSWER]
        done = await self.call("post", f"/v1/sessions/{session_id}/turns", 201, {"query": PLAIN_QUESTION})
        await self.svc.writer.settle(session_id)
        return done

    async def ask(self, session_id: str, query: str) -> tuple[dict[str, Any], str]:
        """A turn, and everything its model call was sent (every message's content, joined)."""
        self.model.replies = ["I do not know yet."]
        sent_before = len(self.model.sent)
        body = await self.call("post", f"/v1/sessions/{session_id}/turns", 201, {"query": query})
        [request] = self.model.sent[sent_before:]
        return body, "\n".join(str(m.get("content") or "") for m in request["messages"])


@pytest.fixture
async def agent(settings: Settings) -> AsyncIterator[Agent]:
    model = ScriptedModel()
    app = create_app(settings, llm=model.llm, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with app.test_app() as running:
        svc = running.app.extensions["tda"]
        token, _ = await svc.store.tokens.create("test-admin", "admin")
        await svc.knowledge.warm_up()
        a = Agent(running.test_client(), {"Authorization": f"Bearer {token}"}, model, svc)
        for profile_id in ("p1", "p2"):  # champion cases (rag_context) serve tool-enabled profiles
            await a.call("post", "/v1/profiles", 201, {"id": profile_id, "type": "tool_enabled", "tools": [TOOL]})
        yield a


def cases_used(body: dict[str, Any]) -> int:
    rag = next(m for m in body["snapshot"]["modules"] if m["module_id"] == "rag_context")
    assert rag["status"] == "ok", rag  # retrieval ran: an empty result is the scope's doing, not a failure
    return int(rag["metadata"]["cases_used"])


@pytest.mark.parametrize("user", ["bob", "alice", None], ids=["another user", "the same user", "anonymous"])
async def test_a_tool_result_quoted_in_one_session_never_reaches_another(agent: Agent, user: str | None):
    await agent.session("a", "alice")
    await agent.secret_turn("a")
    await agent.session("b", user)
    body, sent = await agent.ask("b", SECRET_QUESTION)
    assert not any(secret in sent for secret in SECRETS), sent
    assert cases_used(body) == 0
    replayed = await agent.call("post", f"/v1/snapshots/{body['snapshot_id']}/replay", 200)
    assert replayed["identical"], replayed["differences"]  # a replay is bound to the same scope


async def test_a_session_is_shown_its_own_cases_even_those_built_on_tools(agent: Agent):
    await agent.session("a", "alice")
    first = await agent.secret_turn("a")
    body, sent = await agent.ask("a", SECRET_QUESTION)
    assert cases_used(body) == 1 and "## Champion cases" in sent and SECRET_ANSWER in sent
    rated = await agent.call("post", "/v1/sessions/a/turns/1/feedback", 200, {"feedback": 1})
    assert rated["champion_case_id"] == first["champion_case_id"]  # a rating finds the case its turn recorded


async def test_a_user_is_shown_their_tool_free_cases_in_their_other_sessions(agent: Agent):
    await agent.session("a", "alice")
    mine = await agent.plain_turn("a")
    await agent.session("c", "alice")
    body, sent = await agent.ask("c", PLAIN_QUESTION)
    assert cases_used(body) == 1 and PLAIN_ANSWER in sent
    await agent.session("d", "bob")
    body, sent = await agent.ask("d", PLAIN_QUESTION)
    assert cases_used(body) == 0 and PLAIN_ANSWER not in sent
    # bob's identical turn is bob's case: a rating of his never touches alice's
    bobs = await agent.plain_turn("d")
    assert bobs["champion_case_id"] != mine["champion_case_id"]
    await agent.call("post", "/v1/sessions/d/turns/2/feedback", 200, {"feedback": -1})
    _, sent = await agent.ask("c", PLAIN_QUESTION)
    assert PLAIN_ANSWER in sent


async def test_sessions_without_a_user_share_nothing(agent: Agent):
    await agent.session("a")
    await agent.plain_turn("a")
    await agent.session("b")
    body, sent = await agent.ask("b", PLAIN_QUESTION)
    assert cases_used(body) == 0 and PLAIN_ANSWER not in sent


async def test_session_sharing_keeps_even_tool_free_cases_in_their_session(agent: Agent):
    await agent.call("patch", "/v1/profiles/p1", 200, {"case_sharing": "session"})
    await agent.session("a", "alice")
    await agent.plain_turn("a")
    await agent.session("c", "alice")
    body, sent = await agent.ask("c", PLAIN_QUESTION)
    assert cases_used(body) == 0 and PLAIN_ANSWER not in sent
    body, _ = await agent.ask("a", PLAIN_QUESTION)
    assert cases_used(body) == 1


async def test_profile_sharing_shares_every_case_of_the_profile_and_no_other(agent: Agent):
    await agent.call("patch", "/v1/profiles/p1", 200, {"case_sharing": "profile"})
    await agent.call("patch", "/v1/profiles/p2", 200, {"case_sharing": "profile"})
    await agent.session("a", "alice")
    await agent.secret_turn("a")
    await agent.session("b", "bob")
    body, sent = await agent.ask("b", SECRET_QUESTION)  # shared on purpose: the profile says so
    assert cases_used(body) == 1 and SECRET_ANSWER in sent
    await agent.session("e", "alice", profile_id="p2")
    body, sent = await agent.ask("e", SECRET_QUESTION)
    assert cases_used(body) == 0 and not any(secret in sent for secret in SECRETS)


async def test_a_session_created_again_under_a_deleted_ones_id_starts_with_no_cases(agent: Agent):
    await agent.session("a", "alice")
    await agent.secret_turn("a")
    await agent.call("delete", "/v1/sessions/a", 204)
    await agent.session("a", "bob")
    body, sent = await agent.ask("a", SECRET_QUESTION)
    assert cases_used(body) == 0 and not any(secret in sent for secret in SECRETS)


async def test_a_follow_up_quoting_an_earlier_tool_result_stays_in_its_session(agent: Agent):
    """The follow-up calls no tool itself, but answers from the tool result in its history."""
    await agent.session("a", "alice")
    await agent.secret_turn("a")
    agent.model.replies = ["The owner was John Smith."]
    follow_up = await agent.call("post", "/v1/sessions/a/turns", 201, {"query": "Who was the owner again?"})
    await agent.svc.writer.settle("a")
    rated = await agent.call("post", "/v1/sessions/a/turns/2/feedback", 200, {"feedback": 1})
    assert rated["champion_case_id"] == follow_up["champion_case_id"]
    await agent.session("c", "alice")
    body, sent = await agent.ask("c", "Who was the owner again?")
    assert cases_used(body) == 0 and "John Smith" not in sent


async def test_a_replay_after_the_sharing_narrowed_says_the_profile_changed(agent: Agent):
    await agent.call("patch", "/v1/profiles/p1", 200, {"case_sharing": "profile"})
    await agent.session("a", "alice")
    await agent.secret_turn("a")
    await agent.session("b", "bob")
    body, _ = await agent.ask("b", SECRET_QUESTION)
    assert cases_used(body) == 1
    await agent.call("patch", "/v1/profiles/p1", 200, {"case_sharing": "user"})
    replayed = await agent.call("post", f"/v1/snapshots/{body['snapshot_id']}/replay", 200)
    assert not replayed["identical"] and "profile" in replayed["inputs_changed"]
    rag = next(m for m in replayed["replayed"]["modules"] if m["module_id"] == "rag_context")
    assert rag["metadata"]["cases_used"] == 0  # the replay is bound to the scope as it is now
