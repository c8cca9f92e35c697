"""Sessions, attachments, phase and the audit log through the UI, checked against the API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server, signed_in_page

pytestmark = BROWSER_LOOP


async def test_create_a_session_attach_a_document_and_set_the_phase(page: Any, server: Server, tmp_path: Path) -> None:
    await page.goto("/ui/sessions")
    await page.select_option("#s-profile", "demo-rag")
    await page.fill("#s-title", "Supplier audit")
    await page.fill("#s-id", "bad id!")
    await page.click("#new-session button[type=submit]")
    await expect(page.locator("#s-error")).to_contain_text("Not created")
    await page.fill("#s-id", "supplier-audit")
    await page.click("#new-session button[type=submit]")
    await expect(page).to_have_url(f"{server.url}/ui/sessions/supplier-audit")
    session = server.request("GET", "/v1/sessions/supplier-audit")[2]
    assert (session["profile_id"], session["title"]) == ("demo-rag", "Supplier audit")
    await expect(page.locator("#timeline")).to_contain_text("No snapshots yet")
    await expect(page.locator("#fact-turn")).to_have_text("none yet")

    await page.select_option("#phase", "focus")
    await page.click("#phase-form button")
    await expect(page.locator("#toast")).to_contain_text("Phase set to focus")
    assert server.request("GET", "/v1/sessions/supplier-audit")[2]["phase"] == "focus"

    await page.click("#attach-form button[type=submit]")  # nothing to attach: said at the field
    await expect(page.locator("#attach-error")).to_contain_text("Give the document a name")
    notes = tmp_path / "supplier-notes.txt"
    notes.write_text("Supplier B delivered 14 of 20 pallets late in March.")
    await page.set_input_files("#attach-file", str(notes))
    await expect(page.locator("#attach-name")).to_have_value("supplier-notes.txt")
    await page.click("#attach-form button[type=submit]")
    item = page.locator("#attachments li", has_text="supplier-notes.txt")
    await expect(item).to_contain_text(f"{len(notes.read_text())} characters")
    attached = server.request("GET", "/v1/sessions/supplier-audit/attachments")[2]["attachments"]
    assert [a["name"] for a in attached] == ["supplier-notes.txt"]

    page.once("dialog", lambda dialog: dialog.accept())
    await item.get_by_role("button", name="Remove supplier-notes.txt").click()
    await expect(page.locator("#attachments")).to_contain_text("No documents attached.")
    assert server.request("GET", "/v1/sessions/supplier-audit/attachments")[2]["attachments"] == []

    await page.goto("/ui/audit")
    await page.select_option("#a-entity", "session")
    await page.fill("#a-id", "supplier-audit")
    await page.click("#audit-filter button")
    rows = page.locator("#audit-table tbody tr")
    await expect(rows.first).to_contain_text("removed a document from session supplier-audit")
    await expect(page.locator("#audit-table")).to_contain_text("created session supplier-audit")
    await expect(page.locator("#audit-table")).to_contain_text('phase: null → "focus"')
    assert page.js_errors == []


async def test_viewer_sees_disabled_controls(browser: Any, server: Server) -> None:
    page = await signed_in_page(browser, server, server.viewer_token)
    await page.goto("/ui/sessions")
    await expect(page.locator("#new-session button[type=submit]")).to_be_disabled()
    await page.goto("/ui/sessions/demo")
    await expect(page.locator("#phase")).to_be_disabled()
    await expect(page.locator("#attach-form button[type=submit]")).to_be_disabled()
    await expect(page.locator("#turn-query")).to_be_disabled()
    await page.goto("/ui/types/balanced")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await expect(page.get_by_role("button", name="Add rule")).to_be_disabled()
    await expect(page.locator("#order li button").first).to_be_disabled()
    await page.goto("/ui/audit")
    await expect(page.locator('[data-testid="audit-needs-admin"]')).to_be_visible()
    assert page.js_errors == []
    await page.context.close()
