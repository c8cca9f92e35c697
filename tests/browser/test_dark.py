"""Dark mode (issue 26): with the system set to dark (prefers-color-scheme), every page is dark and axe-core finds
no critical or serious violation on it (colour contrast included), as an admin and as a viewer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server, signed_in_page
from tests.browser.test_axe import pages, seed, seed_experiment, violations

pytestmark = BROWSER_LOOP

CONTRAST = (Path(__file__).parent / "contrast.js").read_text()


def luminance(rgb: str) -> float:
    """Relative luminance (WCAG) of a computed ``rgb(r, g, b)``, written here, not taken from the page."""
    r, g, b = (int(v) / 255 for v in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


@pytest.mark.parametrize("role", ["admin", "viewer"])
async def test_dark_mode_pages_have_no_serious_axe_violations(browser: Any, server: Server, role: str) -> None:
    turn = await asyncio.to_thread(seed, server)
    experiment = await asyncio.to_thread(seed_experiment, server)
    page = await signed_in_page(browser, server, server.admin_token if role == "admin" else server.viewer_token)
    await page.emulate_media(color_scheme="dark")
    found = {}
    every = {
        **pages(turn, experiment),
        f"/ui/compare?sa=axe&ta={turn - 1}&sb=axe&tb={turn}": '[data-testid="window-diff"]',
    }
    for path, ready in every.items():
        await page.goto(path)
        await expect(page.locator(ready).first).to_be_attached()
        await page.wait_for_timeout(200)
        background = await page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
        text = await page.evaluate("getComputedStyle(document.body).color")
        dark = luminance(background) < 0.05 and luminance(text) > 0.6
        found[path] = [*await violations(page), *await page.evaluate(CONTRAST), *([] if dark else ["not dark"])]
    assert found == {path: [] for path in found}, found
    assert page.js_errors == []
    await page.context.close()


async def test_dark_mode_what_if_and_versions(page: Any, server: Server) -> None:
    """The editor's generated parts (the what-if's side-by-side messages, version sentences) in dark colours."""
    await asyncio.to_thread(seed, server)
    await page.emulate_media(color_scheme="dark")
    await page.goto("/ui/types/balanced")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await page.select_option("#preview-session", "axe")
    await page.click("#preview-form button")
    await expect(page.locator(".what-if-messages li.wd-row").first).to_be_attached()
    await page.locator("#versions li button").first.click()
    assert await violations(page) == []
    assert await page.evaluate(CONTRAST) == []
    assert page.js_errors == []


async def test_dark_mode_sign_in_and_error_pages(browser: Any, server: Server, page: Any) -> None:
    context = await browser.new_context(base_url=server.url, color_scheme="dark")
    stranger = await context.new_page()
    await stranger.goto("/ui/sign-in")
    await expect(stranger.locator("form")).to_be_visible()
    assert await violations(stranger) == [] and await stranger.evaluate(CONTRAST) == []
    assert luminance(await stranger.evaluate("getComputedStyle(document.documentElement).backgroundColor")) < 0.05
    await context.close()

    await page.emulate_media(color_scheme="dark")
    response = await page.goto("/ui/types/no-such-type")
    assert response.status == 404
    assert await violations(page) == [] and await page.evaluate(CONTRAST) == []
