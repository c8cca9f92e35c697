"""At phone width (390 px) no page scrolls sideways, the menu reaches every page and Sign out, and the
condensation order can be reordered by touch."""

from __future__ import annotations

import asyncio
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, WAIT_MS, Server

pytestmark = BROWSER_LOOP

PHONE = {"width": 390, "height": 844}


def seed(server: Server) -> int:
    status, _, body = server.request(
        "POST", "/v1/sessions", {"id": "phone", "profile_id": "demo-tools", "title": "Phone"}
    )
    assert status == 201, body
    status, _, turn = server.request("POST", "/v1/sessions/phone/turns", {"query": "Summarise the week's returns."})
    assert status == 201, turn
    return turn["turn"]


async def phone_page(browser: Any, server: Server) -> Any:
    context = await browser.new_context(base_url=server.url, viewport=PHONE, has_touch=True, is_mobile=True)
    response = await context.request.post("/v1/auth/session", data={"token": server.admin_token})
    assert response.ok
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors  # type: ignore[attr-defined]
    return page


async def test_no_page_scrolls_sideways(browser: Any, server: Server) -> None:
    turn = await asyncio.to_thread(seed, server)
    page = await phone_page(browser, server)
    pages = {
        "/ui/types": ".card",
        "/ui/types/balanced": "#module-rows tr",
        "/ui/types/new": "#module-rows tr",
        "/ui/modules": "#module-table tbody tr",
        "/ui/profiles": "#profile-table tbody tr",
        "/ui/sessions": "#session-table tbody tr",
        "/ui/sessions/phone": "#timeline a.turn-column",
        f"/ui/sessions/phone/turns/{turn}": "#messages > li",
        "/ui/audit": "#audit-table tbody tr",
        "/ui/sessions/no-such-session": "h1",
    }
    widths = {}
    for path, ready in pages.items():
        await page.goto(path)
        await expect(page.locator(ready).first).to_be_visible()
        await page.wait_for_timeout(150)  # late layout (bars, legends)
        widths[path] = await page.evaluate("document.documentElement.scrollWidth")
    await page.context.clear_cookies()
    await page.goto("/ui/sign-in")
    widths["/ui/sign-in"] = await page.evaluate("document.documentElement.scrollWidth")
    assert {p: w for p, w in widths.items() if w > PHONE["width"]} == {}
    assert page.js_errors == []
    await page.context.close()


async def test_menu_reaches_pages_and_sign_out(browser: Any, server: Server) -> None:
    page = await phone_page(browser, server)
    await page.goto("/ui/types")
    sign_out = page.get_by_role("button", name="Sign out")
    await expect(sign_out).to_be_hidden()
    await page.get_by_role("button", name="Menu").tap()
    await expect(page.get_by_role("button", name="Menu")).to_have_attribute("aria-expanded", "true")
    await page.get_by_role("link", name="Audit log").tap()
    await expect(page).to_have_url(f"{server.url}/ui/audit")
    await page.get_by_role("button", name="Menu").tap()
    await sign_out.tap()
    await expect(page).to_have_url(f"{server.url}/ui/sign-in")
    await page.context.close()


async def test_touch_reordering(browser: Any, server: Server) -> None:
    page = await phone_page(browser, server)
    await page.goto("/ui/types/knowledge_heavy")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    before = [await li.get_attribute("data-module") for li in await page.locator("#order li").all()]
    first = page.locator("#order li").first
    name = (await first.locator("span").nth(2).text_content()).strip()
    await page.get_by_role("button", name=f"Move {name} down").tap()
    after = [await li.get_attribute("data-module") for li in await page.locator("#order li").all()]
    assert after == [before[1], before[0], *before[2:]]
    await expect(page.locator("#order-live")).to_contain_text(f"{name} moved to position 2")
    await expect(page.locator("#dirty")).to_have_text("Unsaved changes")
    page.once("dialog", lambda dialog: dialog.accept())
    await page.context.close()
