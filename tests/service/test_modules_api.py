"""/v1/context-window/modules: list, activate/deactivate (kept across restarts), purge, install, uninstall, reload."""

from __future__ import annotations

from tda.app import create_app
from tests.service.support import ECHO, write_module

URL = "/v1/context-window/modules"


async def test_list_and_activation_survives_a_restart(client, admin, viewer, settings):
    body = await (await client.get(URL, headers=viewer)).get_json()
    sources = {m["module_id"]: m["source"] for m in body["modules"]}
    assert sources["fixture_echo"] == "user" and sources["system_prompt"] == "builtin"
    assert (await client.post(f"{URL}/fixture_boom/deactivate", headers=viewer)).status_code == 403
    r = await client.post(f"{URL}/fixture_boom/deactivate", headers=admin)
    assert r.status_code == 200 and (await r.get_json())["active"] is False
    assert (await client.post(f"{URL}/nope/deactivate", headers=admin)).status_code == 404

    restarted = create_app(settings, migrate=False, warm_up_llm=False, warm_up_knowledge=False)
    async with restarted.test_app() as running:
        info = running.app.extensions["tda"].registry.info("fixture_boom")
        assert info.active is False  # re-applied from the module-state table at start-up

    r = await client.post(f"{URL}/fixture_boom/activate", headers=admin)
    assert (await r.get_json())["active"] is True


async def test_a_deactivated_module_is_skipped_in_turns(client, admin, session_id):
    await client.post(f"{URL}/fixture_boom/deactivate", headers=admin)
    r = await client.post(f"/v1/sessions/{session_id}/turns", json={"query": "hi"}, headers=admin)
    boom = next(m for m in (await r.get_json())["snapshot"]["modules"] if m["module_id"] == "fixture_boom")
    assert boom["status"] == "skipped"


async def test_purge_needs_a_purgeable_module_and_a_session(client, admin, session_id):
    r = await client.post(f"{URL}/fixture_echo/purge", json={"session_id": session_id}, headers=admin)
    assert r.status_code == 409 and "purgeable" in (await r.get_json())["message"]
    r = await client.post(f"{URL}/fixture_echo/purge", json={"session_id": "nope"}, headers=admin)
    assert r.status_code == 404
    assert (await client.post(f"{URL}/fixture_echo/purge", json={}, headers=admin)).status_code == 422


async def test_install_uninstall_reload(client, admin, tmp_path):
    source = write_module(tmp_path / "incoming", "extra_notes", "Echo", ECHO)
    r = await client.post(f"{URL}/install", json={"path": str(source)}, headers=admin)
    assert r.status_code == 201 and (await r.get_json())["module_id"] == "extra_notes"
    listed = await (await client.get(URL, headers=admin)).get_json()
    assert "extra_notes" in {m["module_id"] for m in listed["modules"]}

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text('{"module_id": "Bad Id"}')
    r = await client.post(f"{URL}/install", json={"path": str(broken)}, headers=admin)
    assert r.status_code == 422
    r = await client.post(f"{URL}/install", json={"path": str(tmp_path / "missing")}, headers=admin)
    assert r.status_code == 422 and (await r.get_json())["errors"][0]["loc"] == "path"

    assert (await client.delete(f"{URL}/system_prompt", headers=admin)).status_code == 409  # built in
    assert (await client.delete(f"{URL}/extra_notes", headers=admin)).status_code == 204
    assert (await client.delete(f"{URL}/extra_notes", headers=admin)).status_code == 404
    r = await client.post(f"{URL}/reload", headers=admin)
    assert r.status_code == 200 and "extra_notes" not in {m["module_id"] for m in (await r.get_json())["modules"]}
