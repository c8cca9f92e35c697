"""The modules and profiles pages in a real browser: lifecycle actions and bindings reach the service."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server
from tests.service.support import ECHO, write_module

pytestmark = BROWSER_LOOP


async def test_install_deactivate_and_uninstall_a_module(page: Any, server: Server, tmp_path: Path) -> None:
    folder = write_module(
        tmp_path, "browser_echo", "Echo", ECHO, version="2.1.0", capabilities={"condensable": False, "purgeable": True}
    )
    await page.goto("/ui/modules")
    await page.fill("#install-path", str(tmp_path / "missing"))
    await page.click("#install-form button")
    await expect(page.locator("#install-path-error")).to_contain_text("not a module folder")
    await expect(page.locator("#install-path")).to_have_attribute("aria-invalid", "true")

    await page.fill("#install-path", str(folder))
    await page.click("#install-form button")
    row = page.locator('#module-table tr[data-module="browser_echo"]')
    await expect(row).to_contain_text("user")
    await expect(row).to_contain_text("2.1.0")
    await expect(row).to_contain_text("purgeable")
    await row.get_by_role("button", name="Purge for session").click()
    await expect(page.locator("#toast")).to_contain_text("Purged")

    await row.get_by_role("button", name="Deactivate").click()
    await expect(row).to_contain_text("inactive")
    assert _module(server, "browser_echo")["active"] is False
    await row.get_by_role("button", name="Activate").click()
    await expect(row).not_to_contain_text("inactive")

    page.once("dialog", lambda dialog: dialog.accept())
    await row.get_by_role("button", name="Uninstall").click()
    await expect(row).to_have_count(0)
    assert _module(server, "browser_echo") is None
    # Required modules cannot be deactivated, and the page says so before anyone tries.
    await expect(
        page.locator('#module-table tr[data-module="system_prompt"] button', has_text="Deactivate")
    ).to_be_disabled()
    assert page.js_errors == []


def _module(server: Server, module_id: str) -> dict[str, Any] | None:
    modules = server.request("GET", "/v1/context-window/modules")[2]["modules"]
    return next((m for m in modules if m["module_id"] == module_id), None)


async def test_bind_a_type_and_set_the_limit_override(page: Any, server: Server) -> None:
    page.on("dialog", lambda dialog: dialog.accept())  # the binding applies to every session: yes
    await page.goto("/ui/profiles")
    row = page.locator('#profile-table tr[data-profile="demo-genie"]')
    await row.get_by_label("Context window type for Coordinator (genie)").select_option("")
    await row.get_by_label("Context-limit override for Coordinator (genie)", exact=False).fill("9999999")
    await row.get_by_role("button", name="Save").click()
    await expect(row.locator(".field-error")).to_contain_text("at most 128000")

    await row.get_by_label("Context-limit override for Coordinator (genie)", exact=False).fill("32000")
    await row.get_by_role("button", name="Save").click()
    await expect(page.locator("#toast")).to_contain_text("Saved Coordinator (genie)")
    profile = server.request("GET", "/v1/profiles/demo-genie")[2]
    assert (profile["context_window_type_id"], profile["context_limit"]) == (None, 32000)

    await page.reload()
    await expect(row.get_by_label("Context-limit override for Coordinator (genie)", exact=False)).to_have_value("32000")
    await expect(row.get_by_label("Context window type for Coordinator (genie)")).to_have_value("")
    assert page.js_errors == []


async def test_unknown_session_is_a_page_not_an_error_dump(page: Any) -> None:
    response = await page.goto("/ui/sessions/no-such-session")
    assert response.status == 404
    await expect(page.locator("h1")).to_have_text("Not found")
    await expect(page.locator(".error-summary")).to_contain_text("no-such-session")
