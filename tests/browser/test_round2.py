"""Admin UI round 2 (issue 26): versions and audit survive removing a rule, one save per click, unchanged saves
make no version, versions read as sentences with author names and rollback labels."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server, signed_in_page

pytestmark = BROWSER_LOOP

RULES = [
    {"condition": {"type": "first_turn"}, "action": {"type": "force_full", "module": "conversation_history"}},
    {
        "condition": {"type": "long_conversation", "threshold": 12},
        "action": {"type": "reduce", "module": "document_context", "by_pct": 40},
    },
    {
        "condition": {"type": "small_window", "threshold": 16000},
        "action": {"type": "reduce", "module": "knowledge_context", "by_pct": 30},
    },
]


def make_type(server: Server, type_id: str, rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A fresh type copied from the shipped "balanced" one (each test its own, so tests do not interfere)."""
    body = server.balanced_copy(id=type_id, name=f"Round two {type_id}")
    if rules is not None:
        body["dynamic_adjustments"] = copy.deepcopy(rules)
    status, _, created = server.request("POST", "/v1/context-window-types", body)
    assert status == 201, created
    return created


def put(server: Server, saved: dict[str, Any], **changes: Any) -> dict[str, Any]:
    body = {k: v for k, v in saved.items() if k not in ("version", "updated_at", "etag")}
    body.update(changes)
    status, _, out = server.request("PUT", f"/v1/context-window-types/{saved['id']}", body, {"If-Match": saved["etag"]})
    assert status == 200, out
    return out


async def open_editor(page: Any, type_id: str) -> None:
    await page.goto(f"/ui/types/{type_id}")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")


def versions(server: Server, type_id: str) -> list[dict[str, Any]]:
    status, _, out = server.request("GET", f"/v1/context-window-types/{type_id}/versions")
    assert status == 200, out
    return out["versions"]


# --- 1. removing a rule other than the last ---------------------------------------------------------


async def test_removing_a_middle_rule_keeps_versions_audit_and_conflicts_working(page: Any, server: Server) -> None:
    v1 = make_type(server, "r2-remove", RULES)
    await open_editor(page, "r2-remove")  # this tab holds v1
    other = put(server, v1, dynamic_adjustments=[RULES[0], RULES[2]])  # another client removes rule 2
    assert other["version"] == 2

    # The second tab's save: a conflict box naming the removal, not a silent failure.
    await page.fill("#f-name", "Round two edited here")
    await page.click("#save")
    await expect(page.locator("#conflict")).to_be_visible()
    changes = page.locator("#conflict-changes li")
    await expect(changes).to_have_count(1)
    await expect(changes.first).to_contain_text("Rule 2 removed: reduce Documents by 40% from turn 12")
    await expect(page.locator("#conflict-msg")).to_contain_text("They made 1 change")
    await page.click("#conflict-reload")

    # The older version: its differences and a Roll back button.
    await page.locator("#versions li[data-version='1'] button").click()
    await expect(page.locator("#version-diff")).to_contain_text("Rule 2 removed: reduce Documents by 40%")
    await expect(page.get_by_role("button", name="Roll back to v1")).to_be_enabled()

    # The audit log loads and says it in a sentence.
    await page.goto("/ui/audit?entity=context_window_type")
    await page.fill("#a-id", "r2-remove")
    await page.click("#audit-filter button[type=submit]")
    await expect(page.locator("#audit-table")).to_contain_text("Rule 2 removed: reduce Documents by 40%")
    await expect(page.locator("#audit-table")).not_to_contain_text("Loading")
    assert page.js_errors == []


async def test_a_version_picked_while_the_list_reloads_is_compared_with_the_new_current_one(
    page: Any, server: Server
) -> None:
    v1 = make_type(server, "r2-race", RULES)
    await open_editor(page, "r2-race")  # its list says v1 is current
    put(server, v1, dynamic_adjustments=[RULES[0], RULES[2]])  # another client saves v2
    await page.fill("#f-name", "Raced here")
    await page.click("#save")
    await expect(page.locator("#conflict")).to_be_visible()

    released = asyncio.Event()

    async def held(route: Any) -> None:
        await released.wait()
        await route.continue_()

    await page.route("**/v1/context-window-types/r2-race/versions", held)
    await page.click("#conflict-reload")  # the editor holds v2; its version list is still being read
    await page.locator("#versions li[data-version='1'] button").click()  # the list as it was: v1 "current"
    released.set()
    diff = page.locator("#version-diff")
    await expect(diff).to_contain_text("From v1 to the current v2")
    await expect(diff).to_contain_text("Rule 2 removed: reduce Documents by 40%")
    await expect(diff.get_by_role("button", name="Roll back to v1")).to_be_enabled()
    assert page.js_errors == []


# --- 2. one save per click --------------------------------------------------------------------------


async def test_double_click_on_save_saves_once(page: Any, server: Server) -> None:
    make_type(server, "r2-double")
    await open_editor(page, "r2-double")
    await page.fill("#f-name", "Double clicked")
    await page.dblclick("#save")
    await expect(page.locator("#toast")).to_contain_text("Saved Double clicked as version 2")
    await page.wait_for_timeout(500)
    await expect(page.locator("#conflict")).to_be_hidden()
    await expect(page.locator("#error-summary")).to_be_hidden()
    assert [v["version"] for v in versions(server, "r2-double")] == [2, 1]

    await page.fill("#f-name", "Clicked five times")
    for _ in range(5):
        await page.click("#save", delay=0, no_wait_after=True)
    await expect(page.locator("#version-label")).to_contain_text("version 3")
    await expect(page.locator("#dirty")).to_have_text("All changes saved")
    await page.wait_for_timeout(500)
    assert [v["version"] for v in versions(server, "r2-double")] == [3, 2, 1]
    assert page.js_errors == []


async def test_double_click_on_save_creates_a_new_type_once(page: Any, server: Server) -> None:
    await page.goto("/ui/types/new")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await page.fill("#f-id", "r2-new-double")
    await page.fill("#f-name", "Created by a double click")
    await page.dblclick("#save")
    await expect(page.locator("#toast")).to_contain_text("Created Created by a double click")
    await page.wait_for_timeout(500)
    await expect(page.locator("#error-summary")).to_be_hidden()
    await expect(page.locator("#f-id-error")).to_have_text("")
    assert [v["version"] for v in versions(server, "r2-new-double")] == [1]
    assert page.js_errors == []


# --- 3. versions ------------------------------------------------------------------------------------


async def test_an_unchanged_put_makes_no_version(server: Server) -> None:
    v1 = make_type(server, "r2-same")
    body = {k: v for k, v in v1.items() if k not in ("version", "updated_at", "etag")}
    status, headers, out = server.request("PUT", "/v1/context-window-types/r2-same", body, {"If-Match": v1["etag"]})
    assert status == 200, out
    assert out["version"] == 1 and headers["ETag"] == v1["etag"]
    assert [v["version"] for v in versions(server, "r2-same")] == [1]


async def test_versions_read_as_sentences_with_names_and_rollbacks(page: Any, server: Server) -> None:
    v1 = make_type(server, "r2-history", RULES)
    changed = copy.deepcopy(RULES)
    changed[1]["condition"]["threshold"] = 20
    v2 = put(server, v1, dynamic_adjustments=changed)
    status, _, out = server.request(
        "POST", "/v1/context-window-types/r2-history/rollback", {"version": 1}, {"If-Match": v2["etag"]}
    )
    assert status == 200 and out["version"] == 3, out

    await open_editor(page, "r2-history")
    # Saving with nothing changed makes no version.
    await page.click("#save")
    await expect(page.locator("#toast")).to_contain_text("Nothing to save")
    assert len(versions(server, "r2-history")) == 3

    items = page.locator("#versions li")
    await expect(items).to_have_count(3)
    v3, v2_item, _ = await items.all()
    await expect(v3).to_contain_text("rollback of v1")
    await expect(v3).to_contain_text("demo-admin")
    await expect(v3).not_to_contain_text("token:")
    sentence = "Rule 2 changed from “reduce Documents by 40% from turn 12” to “reduce Documents by 40% from turn 20”."
    await expect(v2_item).to_contain_text(sentence)

    # Any two versions compare: v1 with v2 is the one rule edit, as one sentence.
    await page.select_option("#compare-from", "1")
    await page.select_option("#compare-to", "2")
    await page.click("#compare-form button[type=submit]")
    lines = page.locator("#version-diff li")
    await expect(lines).to_have_count(1)
    await expect(lines.first).to_have_text(sentence)
    assert page.js_errors == []


# --- 8. viewers have no live write controls -----------------------------------------------------------


async def test_viewers_have_no_live_write_controls(browser: Any, server: Server) -> None:
    page = await signed_in_page(browser, server, server.viewer_token)
    await page.goto("/ui/profiles")
    rows = page.locator("#profile-table tbody tr")
    await expect(rows.first).to_be_visible()
    controls = rows.locator("input, select, button")
    assert await controls.count() >= 3
    for control in await controls.all():
        await expect(control).to_be_disabled()

    await page.goto("/ui/modules")
    await expect(page.locator("#module-table tbody tr").first).to_be_visible()
    await expect(page.locator("#install-form")).to_be_hidden()
    await expect(page.locator("#install-path")).to_be_disabled()
    await page.evaluate("document.getElementById('install-form').requestSubmit()")  # even a forced submit sends nothing
    await page.wait_for_timeout(300)
    await expect(page.locator("#install-path-error")).to_have_text("")
    assert page.js_errors == []
    await page.context.close()
