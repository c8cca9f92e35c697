"""The type editor in a real browser: edits persist, the composition bar follows the sliders, conflicts are shown."""

from __future__ import annotations

from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server

pytestmark = BROWSER_LOOP


async def open_editor(page: Any, type_id: str) -> None:
    await page.goto(f"/ui/types/{type_id}")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")


async def test_edit_persists_after_reload(page: Any, server: Server) -> None:
    await open_editor(page, "conversation_first")
    await page.fill("#f-name", "Conversation First (edited)")
    await page.fill("#f-reserve-n", "18")
    # Conversation First ships without rules: add one (a long conversation, 10 turns) and change its threshold.
    await page.click("#add-rule")
    threshold = page.locator('[data-loc="dynamic_adjustments.0.condition.threshold"]')
    await expect(threshold).to_have_value("10")
    await threshold.fill("20")
    # Keyboard reordering: pick up the first item, move it down one place, drop it.
    first = page.locator("#order li").first
    await expect(first).to_have_attribute("data-module", "component_instructions")
    await first.focus()
    await page.keyboard.press("Space")
    await page.keyboard.press("ArrowDown")
    await page.keyboard.press("Space")
    await expect(page.locator("#order-live")).to_contain_text("dropped at position 2")
    # Drag reordering: the last item (conversation_history) onto the top of the first one.
    await page.locator('#order li[data-module="conversation_history"]').drag_to(
        page.locator("#order li").first, target_position={"x": 20, "y": 2}
    )
    await page.click("#save")
    await expect(page.locator("#toast")).to_contain_text("Saved Conversation First (edited) as version 2")

    await page.reload()
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await expect(page.locator("#f-name")).to_have_value("Conversation First (edited)")
    await expect(page.locator("#f-reserve")).to_have_value("18")
    await expect(threshold).to_have_value("20")
    order = [await li.get_attribute("data-module") for li in await page.locator("#order li").all()]
    assert order == ["conversation_history", "document_context", "component_instructions", "knowledge_context"]
    status, _, saved = server.request("GET", "/v1/context-window-types/conversation_first")
    assert status == 200 and saved["version"] == 2
    assert saved["dynamic_adjustments"][0]["condition"] == {"type": "long_conversation", "threshold": 20}
    assert saved["output_reserve_pct"] == 18
    assert page.js_errors == []


async def test_slider_moves_the_composition_bar(page: Any) -> None:
    await open_editor(page, "balanced")
    bar = page.locator("#composition")
    await expect(bar).to_have_attribute("data-total", "100")
    await expect(bar).to_have_attribute("data-state", "ok")  # the default type fits its budget exactly
    segment = bar.locator('.seg[data-key="conversation_history"]')
    before = (await segment.bounding_box())["width"]

    target = page.get_by_label("Target % for Conversation history", exact=True)
    await target.focus()
    for _ in range(8):
        await page.keyboard.press("ArrowRight")
    await expect(page.get_by_label("Target % for Conversation history (number)")).to_have_value("30")
    await expect(bar).to_have_attribute("data-total", "108")
    await expect(bar).to_have_attribute("data-state", "over")
    await expect(bar.locator('[data-testid="composition-summary"]')).to_contain_text("8 points too many")

    await page.get_by_label("Target % for Conversation history (number)").fill("10")
    await expect(bar).to_have_attribute("data-total", "88")
    await expect(bar.locator('[data-testid="composition-summary"]')).to_contain_text("12% is not assigned")
    assert (await segment.bounding_box())["width"] < before
    # The output reserve shrinks the room the targets share, never the targets' total.
    await page.fill("#f-reserve-n", "30")
    await expect(bar).to_have_attribute("data-total", "88")
    await expect(bar.locator('[data-testid="composition-summary"]')).to_contain_text("70% of the context limit")
    assert page.js_errors == []


async def test_conflict_when_another_writer_saved_first(page: Any, server: Server) -> None:
    await open_editor(page, "token_efficient")
    await page.fill("#f-name", "Token Efficient (mine)")

    _, _, current = server.request("GET", "/v1/context-window-types/token_efficient")
    body = {k: v for k, v in current.items() if k not in {"version", "updated_at", "etag"}}
    status, _, _ = server.request(
        "PUT",
        "/v1/context-window-types/token_efficient",
        {**body, "output_reserve_pct": 20},
        {"If-Match": current["etag"]},
    )
    assert status == 200

    await page.click("#save")
    conflict = page.locator("#conflict")
    await expect(conflict).to_be_visible()
    await expect(conflict).to_contain_text(f"Someone saved version {current['version'] + 1}")
    await expect(page.locator("#conflict-changes")).to_contain_text(
        "Output reserve changed from 15% to 20% of the context limit."
    )
    await expect(page.locator("#conflict-reapply")).to_be_focused()

    await page.click("#conflict-reapply")
    await expect(conflict).to_be_hidden()
    await expect(page.locator("#f-name")).to_have_value("Token Efficient (mine)")
    await expect(page.locator("#f-reserve-n")).to_have_value("20")
    await page.click("#save")
    await expect(page.locator("#toast")).to_contain_text(f"as version {current['version'] + 2}")
    _, _, saved = server.request("GET", "/v1/context-window-types/token_efficient")
    assert (saved["name"], saved["output_reserve_pct"]) == ("Token Efficient (mine)", 20)


async def test_validation_errors_appear_on_the_fields(page: Any, server: Server) -> None:
    modules = server.request("GET", "/v1/context-window/modules")[2]["modules"]
    rag = next(m["display_name"] for m in modules if m["module_id"] == "rag_context")
    await open_editor(page, "knowledge_heavy")
    minimum = page.get_by_label(f"Minimum % for {rag} (number)")
    await minimum.fill("35")  # above its 20% target: said at the field as it is typed, before any save
    row_error = page.locator('.field-error[data-loc="modules.rag_context"]')
    await expect(row_error).to_contain_text(f"{rag}: the minimum (35%) is above the target (20%).")
    await expect(minimum).to_have_attribute("aria-invalid", "true")
    await page.click("#save")
    summary = page.locator("#error-summary")
    await expect(summary).to_be_visible()
    await expect(summary).to_be_focused()
    await summary.get_by_role("link").first.click()  # the summary's link goes to the field at fault
    await expect(minimum).to_be_focused()
    await expect(page.locator("#version-label")).to_contain_text("version 1")  # nothing was saved
    assert server.request("GET", "/v1/context-window-types/knowledge_heavy")[2]["version"] == 1
    await minimum.fill("10")  # fixed: the message goes as soon as the value is right
    await expect(row_error).to_be_hidden()
    await expect(minimum).not_to_have_attribute("aria-invalid", "true")


async def test_duplicate_history_rollback_and_delete(page: Any, server: Server) -> None:
    await page.goto("/ui/types")
    await page.locator('[data-type-id="balanced"]').get_by_role("link", name="Duplicate").click()
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await expect(page.locator("#f-id")).to_have_value("balanced-copy")
    await expect(page.locator("#f-default")).not_to_be_checked()
    await page.fill("#f-id", "balanced-lab")
    await page.fill("#f-name", "Balanced lab")
    await page.click("#save")
    await expect(page).to_have_url(f"{server.url}/ui/types/balanced-lab")
    await page.fill("#f-name", "Balanced lab, renamed")
    await page.click("#save")
    await expect(page.locator("#version-label")).to_contain_text("version 2")

    await page.get_by_role("button", name="v1", exact=True).click()
    await expect(page.locator("#version-diff")).to_contain_text(
        "Name changed from “Balanced lab” to “Balanced lab, renamed”."
    )
    await expect(page.locator("#version-diff")).not_to_contain_text("default")  # rollback keeps the default
    page.once("dialog", lambda dialog: dialog.dismiss())  # rollback asks first; saying no changes nothing
    await page.get_by_role("button", name="Roll back to v1").click()
    await expect(page.locator("#version-label")).to_contain_text("version 2")
    page.once("dialog", lambda dialog: dialog.accept())
    await page.get_by_role("button", name="Roll back to v1").click()
    await expect(page.locator("#version-label")).to_contain_text("version 3")
    await expect(page.locator("#f-name")).to_have_value("Balanced lab")
    await expect(page.locator("#version-diff")).not_to_contain_text("renamed")  # no stale diff after the rollback

    await page.goto("/ui/types")
    card = page.locator('[data-type-id="balanced-lab"]')
    await expect(card).to_contain_text("Profiles")
    page.once("dialog", lambda dialog: dialog.accept())
    await card.get_by_role("button", name="Delete").click()
    await expect(card).to_have_count(0)
    assert server.request("GET", "/v1/context-window-types/balanced-lab")[0] == 404
    # Bound and default types explain why they cannot be deleted.
    await expect(page.locator('[data-type-id="balanced"]')).to_contain_text("The default type cannot be deleted")
    await expect(page.locator('[data-type-id="knowledge_heavy"]')).to_contain_text("Bound to demo-rag")
    assert page.js_errors == []
