"""Labels for rollout, in a real browser (issue 36, item 2): an admin puts ``production`` on a version in the type
editor, binds a profile by it on the profiles page, moves it to the next version (told which profiles that
changes), and reads the move in the audit log; the profile's turns run the labelled version throughout."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server, signed_in_page
from tests.browser.test_axe import violations

pytestmark = BROWSER_LOOP

TYPE = "labelled"
PROFILE = "label-bound"


def two_versions(server: Server) -> None:
    if server.request("GET", f"/v1/context-window-types/{TYPE}")[0] == 200:
        return
    body = server.balanced_copy(id=TYPE, name="Labelled")
    status, _, created = server.request("POST", "/v1/context-window-types", body)
    assert status == 201, created
    body["description"] = "Version 2"
    status, _, saved = server.request("PUT", f"/v1/context-window-types/{TYPE}", body, {"If-Match": created["etag"]})
    assert status == 200 and saved["version"] == 2, saved
    profile = {"id": PROFILE, "name": "Label bound", "type": "llm_only", "system_prompt": "Be brief."}
    assert server.request("POST", "/v1/profiles", profile)[0] == 201
    assert server.request("POST", "/v1/sessions", {"id": PROFILE, "profile_id": PROFILE})[0] == 201


def turn_version(server: Server) -> int:
    status, _, turn = server.request("POST", f"/v1/sessions/{PROFILE}/turns", {"query": "Which depot?"})
    assert status == 201, turn
    status, _, body = server.request("GET", f"/v1/snapshots/{turn['snapshot_id']}")
    assert status == 200, body
    return body["type_version"]


async def move_label(page: Any, version: int, reason: str, answers: list[str]) -> None:
    page.once("dialog", lambda dialog: (answers.append(dialog.message), asyncio.ensure_future(dialog.accept())))
    await page.get_by_label("Label", exact=True).fill("production")
    await page.get_by_label("on version").select_option(str(version))
    await page.get_by_label("Why (kept with the move)").fill(reason)
    await page.get_by_role("button", name="Move label").click()
    await expect(page.locator('#labels li[data-label="production"]')).to_contain_text(f"on v{version}")


async def test_a_label_is_moved_in_the_editor_and_drives_a_profile(page: Any, server: Server) -> None:
    await asyncio.to_thread(two_versions, server)
    await page.goto(f"/ui/types/{TYPE}")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    answers: list[str] = []
    await move_label(page, 1, "baseline before the experiment", answers)
    assert "Put production to v1? No profile is bound by it yet." in answers[-1], answers
    await expect(page.locator('#versions li[data-version="1"] .label-badge')).to_have_text("production")
    await expect(page.locator('#versions li[data-version="2"] .label-badge')).to_have_count(0)

    # Bound by the label on the profiles page: its turns run v1 although v2 is current.
    await page.goto("/ui/profiles")
    row = page.locator(f'#profile-table tr[data-profile="{PROFILE}"]')
    await row.get_by_label("Context window type for Label bound").select_option(TYPE)
    await row.get_by_label("Version of the type for Label bound", exact=False).select_option("production")
    page.once("dialog", lambda dialog: (answers.append(dialog.message), asyncio.ensure_future(dialog.accept())))
    await row.get_by_role("button", name="Save").click()
    await expect(page.locator("#toast")).to_contain_text("Saved Label bound")
    assert "Bind Label bound to Labelled, production (v1)?" in answers[-1], answers[-1]
    profile = server.request("GET", f"/v1/profiles/{PROFILE}")[2]
    assert (profile["context_window_type_id"], profile["context_window_type_label"]) == (TYPE, "production")
    assert await asyncio.to_thread(turn_version, server) == 1
    await page.goto(f"/ui/sessions/{PROFILE}")  # the panel names the version its turns run
    await expect(page.locator("#fact-type")).to_have_text("Labelled v1, by its label production")

    # The rollout: moving the label names the profiles it changes; their next turn runs v2.
    await page.goto(f"/ui/types/{TYPE}")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await move_label(page, 2, "the experiment kept every answer", answers)
    told = "Move production from v1 to v2? Profiles bound by it run v2 from their next turn: Label bound."
    assert told in answers[-1], answers[-1]
    await expect(page.locator('#versions li[data-version="2"] .label-badge')).to_have_text("production")
    assert await asyncio.to_thread(turn_version, server) == 2

    # The audit log has both moves, with their reasons.
    await page.goto("/ui/audit")
    await page.get_by_label("What").select_option("context_window_type")
    await page.get_by_label("Id").fill(TYPE)
    await page.get_by_role("button", name="Show").click()
    moves = page.get_by_test_id("label-move")
    await expect(moves).to_have_count(2)
    await expect(moves.first).to_have_text("production: v1 → v2 · “the experiment kept every answer”")
    await expect(moves.last).to_have_text("production: put on v1 · “baseline before the experiment”")
    assert page.js_errors == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_labels_pass_axe_at_phone_width(browser: Any, server: Server, scheme: str) -> None:
    await asyncio.to_thread(two_versions, server)
    if not server.request("GET", f"/v1/context-window-types/{TYPE}/labels")[2]["labels"]:
        server.request("PUT", f"/v1/context-window-types/{TYPE}/labels/staging", {"version": 1, "reason": "axe"})
    page = await signed_in_page(browser, server, server.admin_token)
    await page.set_viewport_size({"width": 390, "height": 844})
    await page.emulate_media(color_scheme=scheme)
    found = {}
    for path, ready in {
        f"/ui/types/{TYPE}": "#labels li[data-label]",
        "/ui/profiles": "#profile-table tbody tr",
        "/ui/audit": '[data-testid="label-move"]',
    }.items():
        await page.goto(path)
        await expect(page.locator(ready).first).to_be_attached()
        await page.wait_for_timeout(200)
        wide = await page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
        found[path] = [*await violations(page), *(["scrolls sideways"] if wide else [])]
    assert found == {path: [] for path in found}, found
    await page.context.close()
