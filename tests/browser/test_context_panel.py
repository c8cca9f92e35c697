"""The context panel and the other pages in a real browser: live snapshots over SSE, limits, viewers."""

from __future__ import annotations

import asyncio
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server, signed_in_page

pytestmark = BROWSER_LOOP


async def test_new_turn_updates_the_panel_live(page: Any, server: Server) -> None:
    await page.goto("/ui/sessions/demo")
    await expect(page.locator("#live")).to_have_text("Live")
    _, _, session = server.request("GET", "/v1/sessions/demo")
    next_turn = max(t["turn"] for t in session["turns"]) + 1

    status, _, turn = await asyncio.to_thread(
        server.request, "POST", "/v1/sessions/demo/turns", {"query": "Which products were returned most?"}
    )
    assert status == 201, turn
    used = turn["snapshot"]["total_used"]
    # The snapshot reaches the open page over the stream alone (the panel polls nothing for it, and is not reloaded).
    await expect(page.locator("#fact-turn")).to_contain_text(f"{next_turn} (")
    await expect(page.locator("#fact-used")).to_contain_text(f"{used:,} of")
    await expect(page.locator('[data-testid="usage-summary"]')).to_contain_text(f"Turn {next_turn}:")
    await expect(page.locator(f'#turns tr[data-turn="{next_turn}"]')).to_contain_text(
        "Which products were returned most?"
    )
    assert page.js_errors == []


async def test_session_context_limit_slider(page: Any, server: Server) -> None:
    await page.goto("/ui/sessions/demo")
    await expect(page.locator("#limit-state")).to_contain_text("Model default: 128,000 tokens")
    assert await page.locator("#limit-range").get_attribute("min") == "4096"
    await page.fill("#limit-number", "8192")
    await page.click("#limit-form button[type=submit]")
    await expect(page.locator("#limit-state")).to_contain_text("limited to 8,192 tokens")
    assert server.request("GET", "/v1/sessions/demo")[2]["context_limit"] == 8192

    await page.fill("#limit-number", "999999")  # above the model's limit: said at the field as it is typed
    await expect(page.locator("#limit-error")).to_contain_text("At most 128,000 tokens")
    await page.fill("#limit-number", "1000")  # below the slider's floor
    await expect(page.locator("#limit-error")).to_contain_text("At least 4,096 tokens")
    await page.click("#limit-form button[type=submit]")
    await expect(page.locator("#limit-number")).to_be_focused()
    assert server.request("GET", "/v1/sessions/demo")[2]["context_limit"] == 8192  # nothing was sent

    await page.click("#limit-clear")
    await expect(page.locator("#limit-state")).to_contain_text("Model default")
    assert server.request("GET", "/v1/sessions/demo")[2]["context_limit"] is None


async def test_viewer_sees_but_cannot_change(browser: Any, server: Server) -> None:
    page = await signed_in_page(browser, server, server.viewer_token)
    await page.goto("/ui/types/balanced")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await expect(page.locator(".notice")).to_contain_text("viewer")
    await expect(page.locator("#f-name")).to_be_disabled()
    await expect(page.locator("#save")).to_be_disabled()
    await page.goto("/ui/types")
    await expect(page.locator('[data-type-id="balanced"] button.danger')).to_be_disabled()
    await page.goto("/ui/sessions/demo")
    await expect(page.locator("#limit-number")).to_be_disabled()
    await expect(page.locator("#purge-memory")).to_be_disabled()
    await page.context.close()


async def test_sign_in_with_a_token(browser: Any, server: Server) -> None:
    context = await browser.new_context(base_url=server.url)
    page = await context.new_page()
    await page.goto("/ui/profiles")
    await expect(page).to_have_url(f"{server.url}/ui/sign-in?next=/ui/profiles")
    await page.fill("#token", "tda_not-a-real-token")
    await page.click("button[type=submit]")
    await expect(page.locator("#token-error")).to_contain_text("unknown or revoked")
    await page.fill("#token", server.admin_token)
    await page.click("button[type=submit]")
    await expect(page).to_have_url(f"{server.url}/ui/profiles")
    await expect(page.locator('#profile-table tr[data-profile="demo-tools"]')).to_contain_text("Sales analyst")
    await context.close()


async def test_stream_reconnects_by_itself(page: Any, server: Server) -> None:
    await page.goto("/ui/sessions/demo")
    live = page.locator("#live")
    await expect(live).to_have_text("Live")
    await asyncio.to_thread(server.restart)  # the stream drops while the server is down
    await expect(live).to_have_text("Live")
    status, _, turn = await asyncio.to_thread(
        server.request, "POST", "/v1/sessions/demo/turns", {"query": "Still there?"}
    )
    assert status == 201, turn
    await expect(page.locator("#fact-turn")).to_contain_text(f"{turn['turn']} (")


async def test_turn_validity_and_memory_purge(page: Any, server: Server) -> None:
    await page.goto("/ui/sessions/demo")
    first = page.locator('#turns tr[data-turn="1"]')
    # A click, not uncheck(): the panel's poll may re-render the row between the click and uncheck()'s own state
    # check (seen on a loaded machine); the toast and the server's record say whether the turn was left out.
    await first.get_by_role("checkbox").click()
    await expect(page.locator("#toast")).to_contain_text("Turn 1 is left out of the context")
    turns = {t["turn"]: t["valid"] for t in server.request("GET", "/v1/sessions/demo/turns")[2]["turns"]}
    assert turns[1] is False and turns[2] is True

    page.once("dialog", lambda dialog: dialog.accept())
    await page.click("#purge-memory")
    await expect(page.locator("#toast")).to_contain_text("Memory purged")
    await expect(page.locator("#turns tbody tr.invalid")).to_have_count(len(turns))
    assert not any(t["valid"] for t in server.request("GET", "/v1/sessions/demo/turns")[2]["turns"])
    assert page.js_errors == []


async def test_an_error_toast_goes_at_the_next_success(page: Any, server: Server) -> None:
    await page.goto("/ui/sessions/demo")
    await expect(page.locator("#live")).to_have_text("Live")
    await page.fill("#turn-query", "word " * 50_000)  # over the length a query may have: the turn is refused
    await page.click("#turn-form button")
    toast = page.locator("#toast")
    await expect(toast).to_have_attribute("data-kind", "error")
    await expect(toast).to_be_visible()
    await page.fill("#turn-query", "And now a short one?")  # a success that has no message of its own
    await page.click("#turn-form button")
    await expect(toast).to_be_hidden()
    await expect(toast).not_to_have_attribute("data-kind", "error")
