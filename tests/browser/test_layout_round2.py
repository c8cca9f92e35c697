"""Short laptop screens and tablets (issue 26, items 4-5): Save is never under the sticky composition bar, and at
768 px no page scrolls sideways and the top menu stays on one line."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, WAIT_MS, Server
from tests.browser.test_round2 import make_type, versions

pytestmark = BROWSER_LOOP


async def sized_page(browser: Any, server: Server, width: int, height: int) -> Any:
    context = await browser.new_context(base_url=server.url, viewport={"width": width, "height": height})
    response = await context.request.post("/v1/auth/session", data={"token": server.admin_token})
    assert response.ok
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    return page


# Where Save sits at the top of the element found at its centre: Save itself, or something covering it.
TOPMOST = """() => {
  const save = document.getElementById("save");
  const r = save.getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return { visible: r.top >= 0 && r.bottom <= innerHeight, onTop: hit === save || save.contains(hit),
           hit: hit ? hit.id || hit.className : null };
}"""


@pytest.mark.parametrize("size", [(1366, 657), (1440, 700)])
async def test_save_is_not_covered_on_short_screens(browser: Any, server: Server, size: tuple[int, int]) -> None:
    type_id = f"r2-short-{size[0]}"
    await asyncio.to_thread(make_type, server, type_id)
    page = await sized_page(browser, server, *size)
    await page.goto(f"/ui/types/{type_id}")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    target = page.get_by_label("Target % for Conversation history (number)")
    await target.fill("21")  # 99% in all: targets over 100% are refused
    # Scroll down the page (the composition bar passes Save, then sticks to the top), checking Save at each stop.
    for y in range(0, 2400, 50):
        await page.evaluate(f"window.scrollTo(0, {y})")
        spot = await page.evaluate(TOPMOST)
        assert spot["visible"] and spot["onTop"], (y, spot)
    await page.evaluate("window.scrollTo(0, 0)")  # where the composition bar used to lie over Save
    await page.mouse.click(*(await centre(page, "#save")))
    await expect(page.locator("#toast")).to_contain_text("as version 2")
    assert [v["version"] for v in versions(server, type_id)] == [2, 1]
    await page.context.close()


async def centre(page: Any, selector: str) -> tuple[float, float]:
    box = await page.locator(selector).bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


# The innermost elements whose right edge passes the screen's, as "tag#id.class: px" (what a failure names).
STICKING_OUT = """(width) => [...document.querySelectorAll("body *")]
  .filter((e) => e.getBoundingClientRect().right > width + 0.5 && ![...e.children].some(
    (c) => c.getBoundingClientRect().right > width + 0.5))
  .slice(0, 5)
  .map((e) => `${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}${e.className ? "." + e.className : ""}: `
    + Math.round(e.getBoundingClientRect().right - width))"""


async def settled_overflow(page: Any, width: int) -> list[str] | None:
    """What sticks out past the screen once what the page fetches has rendered (a busy machine renders late: up to
    5 s of polling, then whatever is left); None when the page is no wider than the screen."""
    for _ in range(50):
        if await page.evaluate("document.documentElement.scrollWidth") <= width:
            return None
        await page.wait_for_timeout(100)
    return await page.evaluate(STICKING_OUT, width)


def long_named_binding(server: Server) -> None:
    """A profile bound by label to a type with a long name: the widest row the profiles page draws."""
    name = "Customer support, long tool sessions with knowledge excerpts and recall"
    body = server.balanced_copy(id="tablet-long-name", name=name)
    assert server.request("POST", "/v1/context-window-types", body)[0] == 201
    label = {"version": 1, "reason": "the widest option"}
    path = "/v1/context-window-types/tablet-long-name/labels/production-candidate-december"
    assert server.request("PUT", path, label)[0] == 200
    profile = {
        "id": "tablet-support-agent-with-a-long-identifier",
        "name": "Support agent (long sessions)",
        "type": "llm_only",
        "model": "openrouter/anthropic/claude-3.5-sonnet-20241022",
        "context_window_type_id": "tablet-long-name",
        "context_window_type_label": "production-candidate-december",
    }
    status, _, body = server.request("POST", "/v1/profiles", profile)
    assert status == 201, body


async def test_nothing_scrolls_sideways_on_tablets(browser: Any, server: Server) -> None:
    status, _, body = await asyncio.to_thread(
        server.request, "POST", "/v1/sessions", {"id": "tablet", "profile_id": "demo-tools", "title": "Tablet"}
    )
    assert status == 201, body
    status, _, turn = await asyncio.to_thread(
        server.request, "POST", "/v1/sessions/tablet/turns", {"query": "Summarise the week's returns."}
    )
    assert status == 201, turn
    await asyncio.to_thread(long_named_binding, server)
    page = await sized_page(browser, server, 768, 1024)
    pages = {
        "/ui/types/balanced": "#module-rows tr",
        "/ui/modules": "#module-table tbody tr",
        "/ui/profiles": "#profile-table tbody tr",
        "/ui/sessions/tablet": "#timeline a.turn-column",
        f"/ui/sessions/tablet/turns/{turn['turn']}": "#messages > li",
        "/ui/audit": "#audit-table tbody tr",
    }
    widths, menu_rows = {}, {}
    for width in (768, 900, 1024):  # portrait and landscape tablets, small laptops
        await page.set_viewport_size({"width": width, "height": 1024})
        for path, ready in pages.items():
            await page.goto(path)
            await expect(page.locator(ready).first).to_be_visible()
            widths[width, path] = await settled_overflow(page, width)
            tops = await page.evaluate("[...document.querySelectorAll('.top nav li')].map((li) => li.offsetTop)")
            menu_rows[width, path] = len(set(tops)) if all(t >= 0 for t in tops) else 0
    wide = {key: extra for key, extra in widths.items() if extra}
    assert not wide, wide  # no page wider than the screen (each value names what sticks out)
    # The menu is one row of links, or collapsed behind the Menu button: never links wrapped over two rows.
    assert all(rows <= 1 or rows == 0 for rows in menu_rows.values()), menu_rows
    await page.context.close()
