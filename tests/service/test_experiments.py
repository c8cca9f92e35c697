"""Experiments (issue 36, item 1): a candidate type against a baseline over recorded turns, in the background, with
progress over SSE and a cancel; figures per turn and in total, saved, exportable, scoped to the caller's project.
One experiment turn's figures are those of the what-if preview of that turn."""

from __future__ import annotations

import asyncio
import csv
import io
from typing import Any

import litellm

from tda.service import TDAService
from tests.service.test_sse import _events, _read_until

EVIDENCE = "The depot on Harbour Road keeps the spare pumps."
BALANCED = "/v1/context-window-types/balanced"


async def _ok(response: Any, status: int = 200) -> Any:
    body = await response.get_json()
    assert response.status_code == status, body
    return body


async def _traffic(client: Any, admin: dict[str, str], turns: int = 3) -> str:
    """A profile on the shipped balanced type, with a small limit, and a session of ``turns`` recorded turns."""
    profile = {"id": "exp", "type": "llm_only", "context_window_type_id": "balanced", "context_limit": 3000}
    await _ok(
        await client.post("/v1/profiles", json={**profile, "system_prompt": "Answer briefly."}, headers=admin), 201
    )
    await _ok(await client.post("/v1/sessions", json={"id": "e1", "profile_id": "exp"}, headers=admin), 201)
    history = [{"role": "user", "content": EVIDENCE, "turn": 1}, {"role": "assistant", "content": "Noted.", "turn": 1}]
    await _ok(await client.post("/v1/sessions/e1/messages", json={"messages": history}, headers=admin), 201)
    for i in range(turns):
        r = await client.post("/v1/sessions/e1/turns", json={"query": f"Where are the pumps? ({i})"}, headers=admin)
        await _ok(r, 201)
    return "e1"


async def _candidate(client: Any, admin: dict[str, str]) -> dict[str, Any]:
    """The balanced type with its history off, as an editor would send it unsaved."""
    body = await _ok(await client.get(BALANCED, headers=admin))
    for k in ("etag", "version", "updated_at"):
        body.pop(k, None)
    body["is_default"] = False
    body["modules"]["conversation_history"]["active"] = False
    body["condensation_order"].remove("conversation_history")
    body["dynamic_adjustments"] = [r for r in body["dynamic_adjustments"] if "conversation_history" not in str(r)]
    return body


async def _finished(client: Any, headers: dict[str, str], experiment_id: str) -> dict[str, Any]:
    for _ in range(1200):  # a bound, not a timing assert: the experiment runs in the background
        body = await _ok(await client.get(f"/v1/experiments/{experiment_id}", headers=headers))
        if body["finished_at"] is not None:  # ended, and its figures saved
            return body
        await asyncio.sleep(0.05)
    raise AssertionError(f"experiment {experiment_id} still running")


async def _run(client: Any, admin: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    created = await _ok(await client.post("/v1/experiments", json=body, headers=admin), 201)
    return await _finished(client, admin, created["id"])


async def test_one_turn_s_figures_are_its_what_if_preview(client, admin):
    """The preview of the next turn under the candidate, taken before the turn runs, is the experiment's figures of
    that turn; the baseline (what the profile runs now) is the window the turn recorded."""
    session = await _traffic(client, admin, turns=1)
    candidate = await _candidate(client, admin)
    query = "And the spare pumps again?"
    preview = {"type": candidate, "session_id": session, "query": query}
    what_if = await _ok(await client.post("/v1/context-window-types/preview", json=preview, headers=admin))
    turn = await _ok(await client.post(f"/v1/sessions/{session}/turns", json={"query": query}, headers=admin), 201)

    done = await _run(
        client, admin, {"candidate": {"type": candidate}, "slice": {"session_ids": [session], "limit": 1}}
    )
    assert done["status"] == "done" and done["total"] == done["done"] == 1
    [row] = done["turns"]
    assert (row["session_id"], row["turn"], row["snapshot_id"]) == (session, turn["turn"], turn["snapshot_id"])
    snap, cand = what_if["snapshot"], row["candidate"]
    assert (cand["tokens"], cand["available"], cand["utilisation"]) == (
        snap["total_used"],
        snap["available_budget"],
        snap["utilisation"],
    )
    assert {m: (f["status"], f["used"]) for m, f in cand["modules"].items()} == {
        m["module_id"]: (m["status"], m["used"]) for m in snap["modules"]
    }
    # Cost: litellm's own price of that many input tokens (the oracle), and no more once the prefix is cached.
    expected, _ = litellm.cost_per_token(model=cand["model"], prompt_tokens=snap["total_used"], completion_tokens=0)
    assert abs(cand["cost_usd"] - expected) < 1e-12 and 0 <= cand["cached_cost_usd"] <= cand["cost_usd"]
    assert 0 < cand["stable_prefix"] <= sum(a["tokens"] for a in what_if["attribution"])
    recorded = turn["snapshot"]
    base = row["baseline"]
    assert (base["tokens"], base["utilisation"]) == (recorded["total_used"], recorded["utilisation"])
    assert row["delta"]["tokens"] == cand["tokens"] - base["tokens"] < 0  # no history: fewer tokens


async def test_totals_labels_sse_and_exports(client, admin, viewer):
    session = await _traffic(client, admin, turns=3)
    labels = {"expected_evidence": ["spare pumps", "Harbour Road"], "rating": 1}
    labelled = await _ok(await client.put(f"/v1/sessions/{session}/turns/3/labels", json=labels, headers=admin))
    assert labelled["labels"] == labels
    candidate = await _candidate(client, admin)
    created = await _ok(
        await client.post(
            "/v1/experiments",
            json={"name": "history off", "candidate": {"type": candidate}, "slice": {"profile_id": "exp"}},
            headers=admin,
        ),
        201,
    )
    async with client.request(f"/v1/experiments/{created['id']}/events", headers=viewer) as conn:
        await conn.send_complete()
        raw = await _read_until(conn, lambda b: b"event: end" in b, timeout=120)
        await conn.disconnect()
    events = _events(raw)
    assert events[-1]["event"] == "end" and events[-1]["data"]["status"] == "done"
    assert all(e["event"] == "progress" for e in events[:-1])

    done = await _finished(client, viewer, created["id"])
    assert done["total"] == 3 and [t["turn"] for t in done["turns"]] == [
        4,
        3,
        2,
    ]  # the newest first (turn 1 is imported history)
    totals = done["totals"]
    assert totals["turns"] == totals["compared"] == 3 and totals["no_longer_fit"] == 0
    assert totals["baseline"]["tokens"] == sum(t["baseline"]["tokens"] for t in done["turns"])
    assert totals["candidate"]["tokens"] < totals["baseline"]["tokens"]
    # The labelled turn: the evidence is in its history, which the baseline sends and the candidate does not.
    assert totals["evidence_turns"] == 1 and totals["baseline"]["evidence_kept"] == 1
    assert totals["candidate"]["evidence_kept"] == 0
    assert totals["rated_turns"] == 1 and totals["rating_kept"] == 0
    history = totals["modules"]["conversation_history"]
    assert history["candidate_used"] == 0 < history["baseline_used"] and history["candidate_dropped"] == 3

    listed = await _ok(await client.get("/v1/experiments", headers=viewer))
    assert [e["id"] for e in listed["experiments"]] == [created["id"]] and "turns" not in listed["experiments"][0]
    r = await client.get(f"/v1/experiments/{created['id']}/export?format=csv", headers=viewer)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO((await r.get_data()).decode())))
    assert [int(x["turn"]) for x in rows] == [4, 3, 2]
    assert [int(x["delta_tokens"]) for x in rows] == [t["delta"]["tokens"] for t in done["turns"]]
    assert rows[1]["rating_kept"] == "False" and "conversation_history" in rows[0]["modules_dropped_by_candidate"]
    exported = await _ok(await client.get(f"/v1/experiments/{created['id']}/export?format=json", headers=viewer))
    assert exported == done


async def test_a_label_move_links_the_experiment_that_justified_it(client, admin):
    await _traffic(client, admin, turns=1)
    done = await _run(client, admin, {"candidate": {"type_id": "balanced"}, "baseline": {"type_id": "balanced"}})
    assert done["totals"]["baseline"]["tokens"] == done["totals"]["candidate"]["tokens"]  # the same type: no delta
    move = {"version": 1, "reason": "no change in the experiment", "experiment_id": done["id"]}
    label = await _ok(await client.put(f"{BALANCED}/labels/staging", json=move, headers=admin))
    assert label["experiment_id"] == done["id"]
    entries = (await _ok(await client.get("/v1/audit?entity=context_window_type&entity_id=balanced", headers=admin)))[
        "entries"
    ]
    assert entries[0]["action"] == "label" and entries[0]["after"]["experiment_id"] == done["id"]
    r = await client.put(f"{BALANCED}/labels/staging", json={**move, "experiment_id": "nope"}, headers=admin)
    assert r.status_code == 422 and (await r.get_json())["errors"][0]["loc"] == "experiment_id"


async def _error(client: Any, admin: dict[str, str], body: dict[str, Any]) -> tuple[str, str]:
    r = await client.post("/v1/experiments", json=body, headers=admin)
    data = await r.get_json()
    assert r.status_code == 422, data
    loc = data["errors"][0]["loc"]
    return ".".join(str(x) for x in loc) if isinstance(loc, list) else loc, data["message"]


async def test_bad_input_is_refused_by_field_and_nothing_is_saved(client, admin, viewer):
    await _traffic(client, admin, turns=1)
    loc, msg = await _error(client, admin, {"candidate": {"type_id": "balanced", "version": 99}})
    assert loc == "candidate.version" and "no version 99" in msg
    loc, _ = await _error(client, admin, {"candidate": {"type_id": "nope"}})
    assert loc == "candidate.type_id"
    loc, _ = await _error(
        client, admin, {"candidate": {"type_id": "balanced"}, "baseline": {"type_id": "balanced", "version": 7}}
    )
    assert loc == "baseline.version"
    loc, msg = await _error(client, admin, {"candidate": {"type_id": "balanced"}, "slice": {"session_ids": ["none"]}})
    assert loc == "slice" and "no recorded turn" in msg
    bad = await _candidate(client, admin)
    bad["modules"]["conversation_history"]["target_pct"] = 500
    loc, _ = await _error(client, admin, {"candidate": {"type": bad}})
    assert loc.startswith("candidate.type.modules")
    loc, _ = await _error(client, admin, {"candidate": {"type": bad, "type_id": "balanced"}})
    assert loc.startswith("candidate")
    loc, _ = await _error(
        client, admin, {"candidate": {"type_id": "balanced"}, "slice": {"since": "2026-12-02", "until": "2026-12-01"}}
    )
    assert loc.startswith("slice")
    r = await client.post("/v1/experiments", json={"candidate": {"type_id": "balanced"}}, headers=viewer)
    assert r.status_code == 403  # a viewer reads experiments; an admin runs them
    assert (await _ok(await client.get("/v1/experiments", headers=viewer)))["experiments"] == []


async def test_another_project_s_experiment_is_not_found(client, admin, svc: TDAService):
    await _traffic(client, admin, turns=1)
    done = await _run(client, admin, {"candidate": {"type_id": "balanced"}})
    await svc.store.projects.create("beta", "test")
    token, _ = await svc.store.tokens.create("beta-admin", "admin", project="beta")
    beta = {"Authorization": f"Bearer {token}"}
    base = f"/v1/experiments/{done['id']}"
    for method, url in (
        ("GET", base),
        ("GET", f"{base}/events"),
        ("GET", f"{base}/export?format=csv"),
        ("POST", f"{base}/cancel"),
    ):
        r = await client.open(url, method=method, headers=beta)
        assert r.status_code == 404, (method, url)
    assert (await _ok(await client.get("/v1/experiments", headers=beta)))["experiments"] == []
    r = await client.post("/v1/experiments", json={"candidate": {"type_id": "balanced"}}, headers=beta)
    assert r.status_code == 422  # beta has no recorded turn: the default project's are not its slice
    r = await client.put(f"{BALANCED}/labels/x", json={"version": 1, "experiment_id": done["id"]}, headers=beta)
    assert r.status_code == 403, await r.get_json()  # the shipped type is every project's: not beta's to label


async def test_cancel_stops_a_running_experiment_and_keeps_what_it_replayed(client, admin, svc, monkeypatch):
    from tda.experiments import Runner

    await _traffic(client, admin, turns=3)
    replayed = asyncio.Event()
    release = asyncio.Event()
    replay = Runner.replay

    async def held(self: Runner, row: Any, labels: Any) -> dict[str, Any]:
        if self.records:  # the second turn waits until the test has cancelled
            replayed.set()
            await release.wait()
        return await replay(self, row, labels)

    monkeypatch.setattr(Runner, "replay", held)
    created = await _ok(
        await client.post("/v1/experiments", json={"candidate": {"type_id": "balanced"}}, headers=admin), 201
    )
    await asyncio.wait_for(replayed.wait(), 60)
    cancelled = await _ok(await client.post(f"/v1/experiments/{created['id']}/cancel", headers=admin))
    assert cancelled["status"] == "cancelled"
    done = await _finished(client, admin, created["id"])
    assert done["status"] == "cancelled" and done["done"] == len(done["turns"]) == 1 and done["totals"]["turns"] == 1
    r = await client.post(f"/v1/experiments/{created['id']}/cancel", headers=admin)
    assert r.status_code == 409
    assert not svc.experiments.jobs


async def test_turns_that_would_no_longer_fit_are_counted_and_a_random_sample_is_its_size(client, admin):
    """A long system prompt fits the profile's 3,000 tokens less the balanced type's 12% reserve, not less 50%."""
    prompt = " ".join(f"Rule {i}: answer with the depot's name and its opening hours." for i in range(150))
    profile = {"id": "tight", "type": "llm_only", "context_window_type_id": "balanced", "context_limit": 3000}
    await _ok(await client.post("/v1/profiles", json={**profile, "system_prompt": prompt}, headers=admin), 201)
    await _ok(await client.post("/v1/sessions", json={"id": "t1", "profile_id": "tight"}, headers=admin), 201)
    for i in range(3):
        await _ok(await client.post("/v1/sessions/t1/turns", json={"query": f"Hours? ({i})"}, headers=admin), 201)
    candidate = await _candidate(client, admin)
    candidate["output_reserve_pct"] = 50
    done = await _run(client, admin, {"candidate": {"type": candidate}, "slice": {"profile_id": "tight"}})
    totals = done["totals"]
    assert totals["no_longer_fit"] == 3 and totals["candidate"]["fits"] == 0 and totals["baseline"]["fits"] == 3
    assert all(t["delta"] is None and "non-condensable floor" in t["candidate"]["reason"] for t in done["turns"])

    sample = {"profile_id": "tight", "sample": "random", "limit": 2}
    done = await _run(client, admin, {"candidate": {"type_id": "balanced"}, "slice": sample})
    assert done["total"] == 2 and len({t["turn"] for t in done["turns"]}) == 2
    loc, _ = await _error(client, admin, {"candidate": {"type_id": "balanced"}, "slice": {"since": "2099-01-01"}})
    assert loc == "slice"  # nothing recorded since then


async def test_a_chat_client_s_turns_are_replayed_from_the_conversation_it_sent(client, admin):
    """Turns recorded through /v1/chat/completions replay the conversation as the client sent it (the gateway's
    inputs): under the type they ran, each turn's window is the one recorded."""
    chat = [{"role": "system", "content": "You are the depot bot."}, {"role": "user", "content": "Where are pumps?"}]
    headers = {**admin, "X-TDA-Session": "chat-1"}
    for follow_up in ("And the spare ones?", "Thanks, and hoses?"):
        r = await _ok(
            await client.post("/v1/chat/completions", json={"model": "tda", "messages": chat}, headers=headers)
        )
        chat += [
            {"role": "assistant", "content": r["choices"][0]["message"]["content"]},
            {"role": "user", "content": follow_up},
        ]
    snapshots = (await _ok(await client.get("/v1/sessions/chat-1/snapshots", headers=admin)))["snapshots"]
    recorded = {s["turn"]: s["snapshot"]["total_used"] for s in snapshots}
    stored = {s["turn"]: (s["type_id"], s["type_version"]) for s in snapshots}
    [(type_id, version)] = set(stored.values())
    body = {
        "candidate": {"type_id": type_id, "version": version},
        "baseline": {"type_id": type_id, "version": version},
        "slice": {"session_ids": ["chat-1"]},
    }
    done = await _run(client, admin, body)
    assert {t["turn"]: t["baseline"]["tokens"] for t in done["turns"]} == recorded
    assert all(t["delta"]["tokens"] == 0 for t in done["turns"])


async def test_a_server_stopping_saves_a_running_experiment_as_cancelled(client, admin, svc, monkeypatch):
    from tda.experiments import Runner

    await _traffic(client, admin, turns=3)
    replayed = asyncio.Event()
    replay = Runner.replay

    async def held(self: Runner, row: Any, labels: Any) -> dict[str, Any]:
        if self.records:  # the second turn never ends: the server stops meanwhile
            replayed.set()
            await asyncio.Event().wait()
        return await replay(self, row, labels)

    monkeypatch.setattr(Runner, "replay", held)
    r = await client.post("/v1/experiments", json={"candidate": {"type_id": "balanced"}}, headers=admin)
    created = await _ok(r, 201)
    await asyncio.wait_for(replayed.wait(), 60)
    await svc.experiments.stop()  # what shutdown does before the stores close
    row = await svc.store.experiments.get(created["id"])
    assert (row.status, row.done, len(row.turns or []), row.finished_at is not None) == ("cancelled", 1, 1, True)
