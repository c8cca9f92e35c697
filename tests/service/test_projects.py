"""Projects isolate teams: two projects, each with admin, viewer and client tokens and one of everything (a window type,
a knowledge collection, a profile, a session with a turn, an attachment, chat and Responses API calls). Every attempt of
one project's tokens on the other's resources fails (404, or 403 where the role may not call the route at all),
over REST, the OpenAI routes, SSE (Last-Event-ID replay and the global stream), search and the UI pages; nothing of
the other project reaches a prompt; a client token is refused every administrative call."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tda.service import TDAService
from tests.service.support import FIXTURE_TYPE

PROJECTS = ("alpha", "beta")
ROLES = ("admin", "viewer", "client")
CLIENT_ROUTES = {
    ("POST", "/v1/chat/completions"),
    ("POST", "/v1/responses"),
    ("POST", "/v1/responses/compact"),
    ("GET", "/v1/responses/<other_than(compact):response_id>"),
    ("GET", "/v1/models"),
    ("GET", "/v1/models/<path:model_id>"),
    ("POST", "/v1/messages"),
    ("POST", "/v1/messages/count_tokens"),
}
"""What a client token may call (GET /v1/models/<id> is an entry of GET /v1/models; Anthropic's /v1/messages is the
same chat in another wire format)."""
SIGN_IN_ROUTES = {
    ("POST", "/v1/auth/session"),
    ("GET", "/v1/auth/session"),
    ("DELETE", "/v1/auth/session"),
    ("DELETE", "/v1/auth/sessions"),
}
"""Signing in and out, and who am I: no administration."""


def secret(project: str) -> str:
    return f"{project}-secret-{'7f3a' if project == 'alpha' else '91bc'}"


@dataclass
class Project:
    name: str
    tokens: dict[str, dict[str, str]]
    snapshot_id: int = 0
    response_id: str = ""
    chat_session: str = ""
    attachment_id: str = ""
    ids: dict[str, str] = field(default_factory=dict)

    @property
    def session(self) -> str:
        return f"{self.name}-s"

    @property
    def profile(self) -> str:
        return f"{self.name}-prof"

    @property
    def type_id(self) -> str:
        return f"{self.name}-type"

    @property
    def collection(self) -> str:
        return f"{self.name}-kb"


async def _ok(response: Any, status: int = 201) -> Any:
    body = await response.get_json()
    assert response.status_code == status, body
    return body


async def _build(svc: TDAService, client: Any, name: str) -> Project:
    await svc.store.projects.create(name, "test")
    tokens = {}
    for role in ROLES:
        token, _ = await svc.store.tokens.create(f"{name}-{role}", role, project=name)
        tokens[role] = {"Authorization": f"Bearer {token}"}
    p = Project(name, tokens)
    admin, agent = tokens["admin"], tokens["client"]
    await _ok(await client.post("/v1/context-window-types", json={**FIXTURE_TYPE, "id": p.type_id}, headers=admin))
    document = {"name": "vault.md", "text": f"# Vault\n\nThe vault code of {name} is {secret(name)}."}
    url = f"/v1/knowledge/collections/{p.collection}/documents"
    await _ok(await client.post(url, json={"documents": [document]}, headers=admin))
    profile = {
        "id": p.profile,
        "type": "rag_focused",
        "context_window_type_id": "knowledge_heavy",  # shipped: every project reads it
        "knowledge_collections": [p.collection],
        "case_sharing": "profile",
        "system_prompt": f"Guard {secret(name)}.",
    }
    await _ok(await client.post("/v1/profiles", json=profile, headers=admin))
    await _ok(await client.post("/v1/sessions", json={"id": p.session, "profile_id": p.profile}, headers=admin))
    history = [{"role": "user", "content": f"remember {secret(name)}", "turn": 1}]
    await _ok(await client.post(f"/v1/sessions/{p.session}/messages", json={"messages": history}, headers=admin))
    attachment = {"name": "notes.txt", "text": f"notes: {secret(name)}"}
    p.attachment_id = (
        await _ok(await client.post(f"/v1/sessions/{p.session}/attachments", json=attachment, headers=admin))
    )["id"]
    turn = await _ok(await client.post(f"/v1/sessions/{p.session}/turns", json={"query": "vault code?"}, headers=admin))
    p.snapshot_id = turn["snapshot_id"]
    chat = {"model": "tda", "messages": [{"role": "user", "content": f"keep {secret(name)}"}], "user": "u1"}
    p.chat_session = f"{name}-chat"
    r = await client.post("/v1/chat/completions", json=chat, headers={**agent, "X-TDA-Session": p.chat_session})
    await _ok(r, 200)
    body = {"model": f"tda/{p.profile}", "input": f"hold {secret(name)}"}
    p.response_id = (await _ok(await client.post("/v1/responses", json=body, headers=agent), 200))["id"]
    return p


async def build_two(svc: TDAService, client: Any) -> tuple[Project, Project]:
    """Projects alpha and beta, each with its tokens and one of everything (also used on PostgreSQL)."""
    return await _build(svc, client, "alpha"), await _build(svc, client, "beta")


@pytest.fixture
async def two(svc: TDAService, client: Any) -> tuple[Project, Project]:
    return await build_two(svc, client)


def _probes(a: Project) -> list[tuple[str, str, Any]]:
    """Every route that names one of ``a``'s resources, as (method, path, JSON body)."""
    s, t = a.session, a.snapshot_id
    return [
        ("GET", f"/v1/sessions/{s}", None),
        ("PATCH", f"/v1/sessions/{s}", {"title": "mine now"}),
        ("DELETE", f"/v1/sessions/{s}", None),
        ("GET", f"/v1/sessions/{s}/messages", None),
        ("POST", f"/v1/sessions/{s}/messages", {"messages": [{"role": "user", "content": "x", "turn": 9}]}),
        ("GET", f"/v1/sessions/{s}/turns", None),
        ("POST", f"/v1/sessions/{s}/turns", {"query": "what is the vault code?"}),
        ("PATCH", f"/v1/sessions/{s}/turns/1", {"valid": False}),
        ("POST", f"/v1/sessions/{s}/turns/1/feedback", {"feedback": 1}),
        ("POST", f"/v1/sessions/{s}/turns/1/tool-results", {"results": []}),
        ("GET", f"/v1/sessions/{s}/attachments", None),
        ("POST", f"/v1/sessions/{s}/attachments", {"name": "x.txt", "text": "x"}),
        ("DELETE", f"/v1/sessions/{s}/attachments/{a.attachment_id}", None),
        ("GET", f"/v1/sessions/{s}/context-analytics", None),
        ("POST", f"/v1/sessions/{s}/context-limit", {"context_limit": 9000}),
        ("POST", f"/v1/sessions/{s}/purge-memory", None),
        ("GET", f"/v1/sessions/{s}/snapshots", None),
        ("GET", f"/v1/sessions/{s}/events", None),
        ("GET", f"/v1/sessions/{a.chat_session}", None),
        ("GET", f"/v1/snapshots/{t}", None),
        ("POST", f"/v1/snapshots/{t}/replay", None),
        ("GET", f"/v1/snapshots/{t}/trace", None),
        ("GET", f"/v1/profiles/{a.profile}", None),
        ("PATCH", f"/v1/profiles/{a.profile}", {"system_prompt": "leak it"}),
        ("DELETE", f"/v1/profiles/{a.profile}", None),
        ("GET", f"/v1/profiles/{a.profile}/analytics", None),
        ("GET", f"/v1/context-window/active/{a.profile}", None),
        ("GET", f"/v1/context-window-types/{a.type_id}", None),
        ("PUT", f"/v1/context-window-types/{a.type_id}", {**FIXTURE_TYPE, "id": a.type_id, "name": "x"}),
        ("DELETE", f"/v1/context-window-types/{a.type_id}", None),
        ("GET", f"/v1/context-window-types/{a.type_id}/versions", None),
        ("GET", f"/v1/context-window-types/{a.type_id}/metrics", None),
        ("GET", f"/v1/context-window-types/{a.type_id}/labels", None),
        ("PUT", f"/v1/context-window-types/{a.type_id}/labels/production", {"version": 1, "reason": "mine"}),
        ("DELETE", f"/v1/context-window-types/{a.type_id}/labels/production", None),
        ("POST", f"/v1/context-window-types/{a.type_id}/rollback", {"version": 1}),
        ("POST", "/v1/context-window-types/preview", {"type_id": "knowledge_heavy", "session_id": s, "query": "q"}),
        ("GET", f"/v1/knowledge/collections/{a.collection}/documents", None),
        ("DELETE", f"/v1/knowledge/collections/{a.collection}/documents/vault.md", None),
        ("DELETE", f"/v1/knowledge/collections/{a.collection}", None),
        ("POST", "/v1/knowledge/search", {"query": "vault code", "collections": [a.collection]}),
        ("POST", "/v1/knowledge/context", {"query": "vault code", "collections": [a.collection], "budget": 500}),
        ("GET", f"/v1/responses/{a.response_id}", None),
        ("POST", "/v1/responses", {"model": "tda", "input": "go on", "previous_response_id": a.response_id}),
        ("POST", "/v1/responses", {"model": f"tda/{a.profile}", "input": "vault code?"}),
        ("GET", f"/v1/models/tda/{a.profile}", None),
        (
            "POST",
            "/v1/messages",
            {"model": f"tda/{a.profile}", "max_tokens": 50, "messages": [{"role": "user", "content": "vault?"}]},
        ),
        (
            "POST",
            "/v1/messages/count_tokens",
            {"model": f"tda/{a.profile}", "messages": [{"role": "user", "content": "q"}]},
        ),
        ("GET", f"/ui/sessions/{s}", None),
        ("GET", f"/ui/sessions/{s}/turns/1", None),
        ("GET", f"/ui/types/{a.type_id}", None),
    ]


def _chat_probes(a: Project) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """Chat calls that name ``a``'s session or profile (headers, body)."""
    ask = [{"role": "user", "content": "what is the vault code?"}]
    return [
        ({"X-TDA-Session": a.session}, {"model": "tda", "messages": ask}),
        ({"X-TDA-Session": a.chat_session}, {"model": "tda", "messages": ask}),
        ({"X-TDA-Profile": a.profile}, {"model": "tda", "messages": ask}),
        ({}, {"model": f"tda/{a.profile}", "messages": ask}),
    ]


def _if_match(path: str) -> dict[str, str]:
    """Type writes need the ETag (428 without, for any id): the one the victim's type has."""
    found = re.match(r"/v1/context-window-types/([a-z]+-type)", path)
    return {"If-Match": f'"{found[1]}.v1"'} if found else {}


async def _call(client: Any, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
    if path.endswith("/events"):  # a stream that works would not end: only its opening is asked for
        async with client.request(path, headers=headers) as conn:
            await conn.send_complete()
            raw = await asyncio.wait_for(conn.receive(), 5)
            status = conn.status_code
            await conn.disconnect()
        return status, raw.decode(errors="replace")
    r = await client.open(path, method=method, json=body, headers=headers)
    return r.status_code, await r.get_data(as_text=True)


async def test_no_probe_of_one_project_reaches_the_others_resources(client, two):
    await check_no_probe_succeeds(client, *two)


async def check_no_probe_succeeds(client: Any, alpha: Project, beta: Project) -> None:
    """Every probe of each project's tokens on the other's resources fails, and leaves them as they were."""
    successes = []
    for attacker, victim in ((beta, alpha), (alpha, beta)):
        for role, headers in attacker.tokens.items():
            for method, path, body in _probes(victim):
                status, text = await _call(client, method, path, body, {**headers, **_if_match(path)})
                if status < 400 or secret(victim.name) in text:
                    successes.append((role, method, path, status))
                elif role == "admin":
                    assert status in (404, 422), (method, path, status, text)  # not there (422: no such profile)
                else:
                    assert status in (403, 404, 422), (role, method, path, status, text)
            for extra, body in _chat_probes(victim):
                r = await client.post("/v1/chat/completions", json=body, headers={**headers, **extra})
                text = await r.get_data(as_text=True)
                if r.status_code < 400 or secret(victim.name) in text:
                    successes.append((role, "chat", json.dumps(extra), r.status_code))
    assert successes == [], successes
    # and nothing of alpha's changed
    admin = alpha.tokens["admin"]
    session = await _ok(await client.get(f"/v1/sessions/{alpha.session}", headers=admin), 200)
    assert session["title"] == "" and session["context_limit"] is None
    profile = await _ok(await client.get(f"/v1/profiles/{alpha.profile}", headers=admin), 200)
    assert profile["system_prompt"] == f"Guard {secret('alpha')}."
    turns = await _ok(await client.get(f"/v1/sessions/{alpha.session}/turns", headers=admin), 200)
    assert all(t["valid"] for t in turns["turns"])
    docs = await _ok(await client.get(f"/v1/knowledge/collections/{alpha.collection}/documents", headers=admin), 200)
    assert docs["documents"] == ["vault.md"]


async def test_lists_and_searches_show_only_the_projects_own(client, two):
    _, beta = two
    for role in ("admin", "viewer"):
        headers = beta.tokens[role]
        for path in (
            "/v1/sessions",
            f"/v1/sessions?q={secret('alpha')}",
            "/v1/sessions?q=vault",
            "/v1/profiles",
            "/v1/context-window-types",
            "/v1/knowledge/collections",
        ):
            status, text = await _call(client, "GET", path, None, headers)
            assert status == 200 and "alpha" not in text, (role, path, text[:500])
        sessions = (await (await client.get("/v1/sessions", headers=headers)).get_json())["sessions"]
        assert {s["id"] for s in sessions} == {beta.session, beta.chat_session, sessions[-1]["id"]} or all(
            s["id"].startswith(("beta", "resp-")) for s in sessions
        )
        assert any(s["id"] == beta.session for s in sessions)
    audit = await _ok(await client.get("/v1/audit?limit=500", headers=beta.tokens["admin"]), 200)
    assert audit["entries"] and "alpha" not in json.dumps(audit)
    models = await _ok(await client.get("/v1/models", headers=beta.tokens["client"]), 200)
    ids = {m["id"] for m in models["data"]}
    assert f"tda/{beta.profile}" in ids and not any("alpha" in i for i in ids)
    types = await _ok(await client.get("/v1/context-window-types", headers=beta.tokens["viewer"]), 200)
    type_ids = {t["id"] for t in types["types"]} if isinstance(types, dict) else {t["id"] for t in types}
    assert beta.type_id in type_ids and "knowledge_heavy" in type_ids  # its own and the shipped ones


async def test_nothing_of_another_project_reaches_a_prompt(client, two):
    alpha, beta = two
    admin = beta.tokens["admin"]
    # A beta profile naming alpha's collection reads beta's collection of that name (there is none): no passage.
    profile = {
        "id": "beta-thief",
        "type": "rag_focused",
        "context_window_type_id": "knowledge_heavy",
        "knowledge_collections": [alpha.collection, beta.collection],
        "case_sharing": "profile",
    }
    await _ok(await client.post("/v1/profiles", json=profile, headers=admin))
    await _ok(await client.post("/v1/sessions", json={"id": "beta-thief-s", "profile_id": "beta-thief"}, headers=admin))
    turn = await _ok(
        await client.post("/v1/sessions/beta-thief-s/turns", json={"query": "what is the vault code?"}, headers=admin)
    )
    trace = await _ok(await client.get(f"/v1/snapshots/{turn['snapshot_id']}/trace", headers=admin), 200)
    sent = json.dumps(trace)
    assert secret("beta") in sent  # its own collection is read
    assert secret("alpha") not in sent and secret("alpha") not in json.dumps(turn)


async def test_a_collection_name_is_each_projects_own(client, two):
    """Ingesting into the other project's collection name makes one of the project's own: the other's is untouched."""
    alpha, beta = two
    url = f"/v1/knowledge/collections/{alpha.collection}/documents"
    doc = {"name": "decoy.md", "text": "decoy"}
    await _ok(await client.post(url, json={"documents": [doc]}, headers=beta.tokens["admin"]))
    assert (await _ok(await client.get(url, headers=beta.tokens["admin"]), 200))["documents"] == ["decoy.md"]
    assert (await _ok(await client.get(url, headers=alpha.tokens["admin"]), 200))["documents"] == ["vault.md"]
    found = await _ok(
        await client.post(
            "/v1/knowledge/search",
            json={"query": "vault code", "collections": [alpha.collection]},
            headers=beta.tokens["viewer"],
        ),
        200,
    )
    assert secret("alpha") not in json.dumps(found)
    assert (
        await client.delete(f"/v1/knowledge/collections/{alpha.collection}", headers=beta.tokens["admin"])
    ).status_code == 204
    assert (await _ok(await client.get(url, headers=alpha.tokens["admin"]), 200))["documents"] == ["vault.md"]


async def test_sse_replay_and_the_global_stream_carry_only_the_projects_snapshots(client, two):
    alpha, beta = two
    own = await _ok(await client.get(f"/v1/sessions/{beta.session}/snapshots", headers=beta.tokens["admin"]), 200)
    theirs = await _ok(await client.get(f"/v1/sessions/{alpha.session}/snapshots", headers=alpha.tokens["admin"]), 200)
    own_ids = {str(s["id"]) for s in own["snapshots"]}
    their_ids = {str(s["id"]) for s in theirs["snapshots"]}
    assert own_ids and their_ids
    headers = {**beta.tokens["viewer"], "Last-Event-ID": "1"}
    async with client.request("/v1/events", headers=headers) as conn:
        await conn.send_complete()
        raw = b""

        async def read(until: Any) -> bytes:
            nonlocal raw
            while not until(raw):
                raw += await conn.receive()
            return raw

        await asyncio.wait_for(read(lambda b: b": heartbeat" in b), 5)
        # live: an alpha turn, then a beta turn; the beta stream shows the second only
        a = await _ok(
            await client.post(f"/v1/sessions/{alpha.session}/turns", json={"query": "q"}, headers=alpha.tokens["admin"])
        )
        b = await _ok(
            await client.post(f"/v1/sessions/{beta.session}/turns", json={"query": "q"}, headers=beta.tokens["admin"])
        )
        await asyncio.wait_for(read(lambda x: f"id: {b['snapshot_id']}\n".encode() in x), 5)
        await conn.disconnect()
    sent_ids = set(re.findall(r"^id: (\d+)$", raw.decode(), flags=re.M))
    assert own_ids <= sent_ids and str(b["snapshot_id"]) in sent_ids
    assert not sent_ids & (their_ids | {str(a["snapshot_id"])})
    assert secret("alpha") not in raw.decode()


async def test_a_client_token_is_refused_every_administrative_call(client, test_app, two):
    _, beta = two
    agent = beta.tokens["client"]
    refused, allowed = [], []
    for rule in test_app.app.url_map.iter_rules():
        if not rule.rule.startswith("/v1/"):
            continue
        path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", lambda m: "1" if "int" in m.group(0) else "x1", rule.rule)
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            if (method, rule.rule) in SIGN_IN_ROUTES:
                continue
            r = await client.open(path, method=method, json={}, headers=agent)
            ((allowed if (method, rule.rule) in CLIENT_ROUTES else refused).append((method, rule.rule, r.status_code)))
    assert refused and all(status == 403 for *_, status in refused), [x for x in refused if x[2] != 403]
    assert all(status != 403 for *_, status in allowed), allowed
    for page in ("/ui/sessions", f"/ui/sessions/{beta.session}", "/ui/types"):
        assert (await client.get(page, headers=agent)).status_code == 403


async def test_a_client_token_chats_in_anthropics_wire_format_too(client, two):
    """An agent on the Anthropic SDK holds a client token as one on OpenAI's does: /v1/messages is the same chat."""
    _, beta = two
    agent = beta.tokens["client"]
    body = {"model": "tda", "max_tokens": 16, "messages": [{"role": "user", "content": "Hello there"}]}
    reply = await _ok(await client.post("/v1/messages", json=body, headers=agent), 200)
    assert reply["type"] == "message" and reply["content"]
    asked = {k: v for k, v in body.items() if k != "max_tokens"}  # not a field of count_tokens
    counted = await _ok(await client.post("/v1/messages/count_tokens", json=asked, headers=agent), 200)
    assert counted["input_tokens"] > 0


async def test_project_admins_do_not_change_what_every_project_shares(client, two):
    _, beta = two
    admin = beta.tokens["admin"]
    shipped = await _ok(await client.get("/v1/context-window-types/knowledge_heavy", headers=admin), 200)
    r = await client.put(
        "/v1/context-window-types/knowledge_heavy",
        json={k: v for k, v in shipped.items() if k not in ("version", "updated_at")} | {"name": "mine"},
        headers={**admin, "If-Match": f'"knowledge_heavy.v{shipped["version"]}"'},
    )
    assert r.status_code == 403, await r.get_json()
    assert (await client.post("/v1/context-window/modules/reload", headers=admin)).status_code == 403
    r = await client.put("/v1/component-instructions/chart", json={"full": "x"}, headers=admin)
    assert r.status_code == 403
    r = await client.post(
        "/v1/context-window-types", json={**FIXTURE_TYPE, "id": "b2", "is_default": True}, headers=admin
    )
    assert r.status_code == 403


async def test_the_openai_user_narrows_case_sharing_to_the_token(client, svc: TDAService, two):
    """Two clients of one project naming the same ``user`` get sessions of different users: one cannot claim the
    other's end users (and with them their champion cases)."""
    _, beta = two
    token, _ = await svc.store.tokens.create("beta-client-2", "client", project="beta")
    other = {"Authorization": f"Bearer {token}"}
    ask = {"model": "tda", "messages": [{"role": "user", "content": "hi"}], "user": "u1"}
    for headers, session in ((beta.tokens["client"], "beta-u-1"), (other, "beta-u-2")):
        await _ok(
            await client.post("/v1/chat/completions", json=ask, headers={**headers, "X-TDA-Session": session}), 200
        )
    first = await _ok(await client.get("/v1/sessions/beta-u-1", headers=beta.tokens["admin"]), 200)
    second = await _ok(await client.get("/v1/sessions/beta-u-2", headers=beta.tokens["admin"]), 200)
    assert first["user_id"] != second["user_id"]
    assert first["user_id"].endswith("/u1") and second["user_id"].endswith("/u1")


async def test_operator_manages_projects_and_tokens_over_rest(client, svc: TDAService, two):
    token, _ = await svc.store.tokens.create("ops", "operator")
    operator = {"Authorization": f"Bearer {token}"}
    _, beta = two
    assert (await client.get("/v1/projects", headers=beta.tokens["admin"])).status_code == 403
    assert (await client.post("/v1/tokens", json={"role": "admin"}, headers=beta.tokens["admin"])).status_code == 403
    created = await _ok(await client.post("/v1/projects", json={"name": "gamma"}, headers=operator))
    assert created["name"] == "gamma"
    assert (await client.post("/v1/projects", json={"name": "gamma"}, headers=operator)).status_code == 409
    assert (await client.post("/v1/projects", json={"name": "Not OK"}, headers=operator)).status_code == 422
    names = [p["name"] for p in (await _ok(await client.get("/v1/projects", headers=operator), 200))["projects"]]
    assert names == ["alpha", "beta", "default", "gamma"]
    made = await _ok(await client.post("/v1/tokens", json={"role": "client", "project": "gamma"}, headers=operator))
    assert made["project"] == "gamma" and made["token"].startswith("tda_")
    r = await client.post("/v1/tokens", json={"role": "viewer", "project": "nope"}, headers=operator)
    assert r.status_code == 404
    gamma = {"Authorization": f"Bearer {made['token']}"}
    assert (await client.get("/v1/models", headers=gamma)).status_code == 200
    listed = await _ok(await client.get("/v1/tokens?project=gamma", headers=operator), 200)
    assert [t["id"] for t in listed["tokens"]] == [made["id"]] and "token" not in listed["tokens"][0]
    assert (await client.delete(f"/v1/tokens/{made['id']}", headers=operator)).status_code == 204
    assert (await client.get("/v1/models", headers=gamma)).status_code == 401


def test_the_migration_moves_existing_data_into_the_default_project(tmp_path: Path):
    """0009 on a database with data: every profile, session, snapshot and token is the ``default`` project's, the
    shipped types and the system's audit entries are nobody's, and a token's entries are the default project's."""
    from tda.db import upgrade

    path = tmp_path / "tda.db"
    upgrade(f"sqlite+aiosqlite:///{path}", "0008")
    db = sqlite3.connect(path)
    db.execute("PRAGMA foreign_keys=ON")
    now = "2026-12-01 20:00:00"
    db.execute(
        "INSERT INTO context_window_types (id, name, is_default, version, data, created_at, updated_at) "
        "VALUES ('t', 'T', 1, 1, '{}', ?, ?)",
        (now, now),
    )
    db.execute(
        "INSERT INTO profiles (id, name, type, system_prompt, tools, components, knowledge_collections, created_at, "
        "updated_at, upstream) VALUES ('p', '', 'llm_only', '', '[]', '[]', '[]', ?, ?, '{}')",
        (now, now),
    )
    db.execute(
        "INSERT INTO sessions (id, profile_id, user_id, title, created_at, updated_at) "
        "VALUES ('s', 'p', 'u', '', ?, ?)",
        (now, now),
    )
    db.execute(
        "INSERT INTO snapshots (session_id, turn, type_id, type_version, model, data, inputs, created_at) "
        "VALUES ('s', 1, 't', 1, 'm', '{}', '{}', ?)",
        (now,),
    )
    db.execute("INSERT INTO api_tokens (name, role, token_hash, created_at) VALUES ('a', 'admin', 'h', ?)", (now,))
    for actor in ("system", "token:a#1"):
        db.execute(
            "INSERT INTO audit_log (at, actor, action, entity, entity_id) VALUES (?, ?, 'create', 'x', 'y')",
            (now, actor),
        )
    db.commit()
    db.close()

    upgrade(f"sqlite+aiosqlite:///{path}")

    db = sqlite3.connect(path)
    assert db.execute("SELECT name FROM projects").fetchall() == [("default",)]
    for table in ("profiles", "sessions", "snapshots", "api_tokens"):
        assert db.execute(f"SELECT project_id FROM {table}").fetchall() == [("default",)], table
    assert db.execute("SELECT project_id FROM context_window_types").fetchall() == [(None,)]
    assert db.execute("SELECT actor, project_id FROM audit_log ORDER BY id").fetchall() == [
        ("system", None),
        ("token:a#1", "default"),
    ]
    db.close()


def test_champion_cases_of_a_profile_id_reused_by_another_project_stay_apart():
    """Cases are scoped by the profile as qualified by its project: an id deleted in one project and created in
    another names other cases (the default project's stay bare, as recorded before projects)."""
    from datetime import UTC, datetime

    from tda.models import ProfileRow, SessionRow
    from tda.sources import case_scope

    when = datetime(2026, 12, 1, tzinfo=UTC)
    session = SessionRow(id="s", profile_id="support", user_id="u", created_at=when)
    scopes = {
        project: case_scope(session, ProfileRow(id="support", project_id=project, case_sharing="profile"))
        for project in ("default", "alpha", "beta")
    }
    assert scopes["default"].profile_id == "support"
    assert len({s.profile_id for s in scopes.values()}) == 3
    recorded = scopes["alpha"].metadata(from_tools=False)
    assert scopes["alpha"].allows(recorded) and not scopes["beta"].allows(recorded)
    assert not scopes["default"].allows(recorded)


async def test_a_shared_types_metrics_count_only_the_projects_own_windows(client, svc: TDAService, two):
    alpha, beta = two
    token, _ = await svc.store.tokens.create("ops", "operator")
    url = "/v1/context-window-types/knowledge_heavy/metrics"

    async def windows(headers: dict[str, str]) -> int:
        return sum(v["windows"] for v in (await _ok(await client.get(url, headers=headers), 200))["versions"])

    mine, theirs = await windows(beta.tokens["viewer"]), await windows(alpha.tokens["viewer"])
    assert mine > 0 and theirs > 0
    assert await windows({"Authorization": f"Bearer {token}"}) == mine + theirs  # the operator sees both


async def test_the_command_line_makes_projects_and_their_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """`tda projects create/list` and `tda tokens create --project NAME --role ...` as the issue names them; the
    tokens they print act in their project (checked against a store on the same database)."""
    from tda.cli import main
    from tda.config import Settings
    from tda.store import Store

    monkeypatch.setenv("TDA_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("TDA_MODULES_DIR", str(tmp_path / "modules"))
    monkeypatch.setenv("TDA_EMBEDDER", "hashing")

    def run(*words: str) -> tuple[int, str, str]:
        code = main(list(words))
        out, err = capsys.readouterr()
        return code, out, err

    assert (await asyncio.to_thread(run, "projects", "create", "support"))[0] == 0
    code, _, err = await asyncio.to_thread(run, "projects", "create", "support")
    assert code == 2 and "already exists" in err
    assert (await asyncio.to_thread(run, "projects", "list"))[1].split() == ["default", "support"]
    printed = {}
    for role in ("client", "viewer", "admin"):
        code, out, _ = await asyncio.to_thread(run, "tokens", "create", "--project", "support", "--role", role)
        assert code == 0 and "in project 'support'" in out
        printed[role] = out.strip().splitlines()[-1]
    code, out, _ = await asyncio.to_thread(run, "tokens", "create", "--role", "viewer", "--name", "plain")
    printed["default"] = out.strip().splitlines()[-1]
    code, out, _ = await asyncio.to_thread(run, "tokens", "create", "--role", "operator")
    assert code == 0 and "in project" not in out
    printed["operator"] = out.strip().splitlines()[-1]
    code, _, err = await asyncio.to_thread(run, "tokens", "create", "--project", "nope", "--role", "client")
    assert code == 2 and "no project 'nope'" in err

    store = Store.connect(Settings.from_env().sqlalchemy_url)
    try:
        who = {key: await store.tokens.authenticate(token) for key, token in printed.items()}
    finally:
        await store.close()
    assert {k: (p.role, p.project) for k, p in who.items() if p is not None} == {
        "client": ("client", "support"),
        "viewer": ("viewer", "support"),
        "admin": ("admin", "support"),
        "default": ("viewer", "default"),
        "operator": ("operator", None),
    }


async def test_a_session_stream_never_carries_another_projects_session_of_the_same_id(client, two):
    """alpha's viewer streams alpha's session; alpha deletes it and beta creates one under the same id: beta's turns
    do not reach alpha's open stream."""
    alpha, beta = two
    async with client.request(f"/v1/sessions/{alpha.session}/events", headers=alpha.tokens["viewer"]) as conn:
        await conn.send_complete()
        raw = await asyncio.wait_for(conn.receive(), 5)
        assert (await client.delete(f"/v1/sessions/{alpha.session}", headers=alpha.tokens["admin"])).status_code == 204
        admin = beta.tokens["admin"]
        await _ok(
            await client.post("/v1/sessions", json={"id": alpha.session, "profile_id": beta.profile}, headers=admin)
        )
        turn = await _ok(await client.post(f"/v1/sessions/{alpha.session}/turns", json={"query": "q"}, headers=admin))
        heartbeats = raw.count(b": heartbeat")
        while raw.count(b": heartbeat") < heartbeats + 2:  # frames published before these would have come first
            raw += await asyncio.wait_for(conn.receive(), 5)
        await conn.disconnect()
    assert f"id: {turn['snapshot_id']}".encode() not in raw and b"context_window_snapshot" not in raw
