"""Long lists in a real browser: sessions and the audit log page past 200 with a hint (they stopped at 200 without
one), and sessions are found by user, title or session id."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server, signed_in_page
from tests.browser.test_axe import violations

pytestmark = BROWSER_LOOP

MADE = [f"listed-{i:03d}" for i in range(205)]


def make_sessions(server: Server) -> None:
    if server.request("GET", f"/v1/sessions/{MADE[-1]}")[0] == 200:
        return
    for i, session_id in enumerate(MADE):
        body = {"id": session_id, "profile_id": "demo-tools", "title": f"Listed {i:03d}", "user_id": f"lister-{i % 5}"}
        status, _, created = server.request("POST", "/v1/sessions", body)
        assert status == 201, created


async def session_ids(page: Any) -> list[str]:
    return await page.locator("#session-table tbody tr[data-session]").evaluate_all(
        "(rows) => rows.map((row) => row.dataset.session)"
    )


async def test_sessions_page_past_200_and_are_found_by_id_title_or_user(page: Any, server: Server) -> None:
    await asyncio.to_thread(make_sessions, server)
    await page.goto("/ui/sessions")
    rows = page.locator("#session-table tbody tr[data-session]")
    await expect(rows).to_have_count(200)
    hint = page.locator("#session-pages [data-testid=page-hint]")
    await expect(hint).to_contain_text("Showing sessions 1–200")
    await expect(hint).to_contain_text("there are more")
    first = await session_ids(page)

    await page.get_by_role("button", name="Older sessions →").click()
    await expect(page).to_have_url(re.compile(r"offset=200"))
    await expect(hint).to_contain_text("Showing sessions 201–")
    second = await session_ids(page)
    assert not set(first) & set(second)
    assert set(MADE) <= set(first) | set(second)  # every session made is on one page or the other
    await page.get_by_role("button", name="← Newer sessions").click()
    await expect(rows).to_have_count(200)
    assert await session_ids(page) == first

    # Found by id, title or user, in any case; the address keeps the search.
    find = page.get_by_label("Session id, title or user")
    for text, expected in (
        ("LISTED-204", ["listed-204"]),
        ("listed 13", [f"listed-{i}" for i in range(130, 140)]),  # titles "Listed 130" to "Listed 139"
        ("lister-3", [s for i, s in enumerate(MADE) if i % 5 == 3]),
    ):
        await find.fill(text)
        await page.get_by_role("button", name="Filter", exact=True).click()
        await expect(page.locator("#session-pages")).to_be_hidden()  # one page: no paging to offer
        await expect(rows).to_have_count(len(expected))
        assert sorted(await session_ids(page)) == sorted(expected), text
    await page.reload()
    await expect(find).to_have_value("lister-3")
    await expect(rows).to_have_count(41)
    assert page.js_errors == []


async def test_the_audit_log_pages_past_200_and_finds_changes_by_who_made_them(page: Any, server: Server) -> None:
    await asyncio.to_thread(make_sessions, server)  # 205 changes at least
    await page.goto("/ui/audit")
    rows = page.locator("#audit-table tbody tr[data-entity]")
    await expect(rows).to_have_count(200)
    hint = page.locator("#audit-pages [data-testid=page-hint]")
    await expect(hint).to_contain_text("Showing changes 1–200")
    await page.get_by_role("button", name="Older changes →").click()
    await expect(hint).to_contain_text("Showing changes 201–")
    await expect(rows.first).to_be_visible()

    who = page.get_by_label("Who")
    await who.fill("no-such-person")
    await page.get_by_role("button", name="Show").click()
    await expect(page.locator("#audit-table tbody")).to_contain_text("Nothing recorded for this filter.")
    await expect(page.locator("#audit-pages")).to_be_hidden()
    name = server.request("GET", "/v1/audit?limit=1")[2]["entries"][0]["author"]
    await who.fill(name.upper())
    await page.get_by_role("button", name="Show").click()
    await expect(rows).to_have_count(200)
    for cell in await page.locator('#audit-table tbody td[data-label="Who"]').all_text_contents():
        assert cell == name
    assert page.js_errors == []


def chat_turn(server: Server) -> int:
    body = {"model": "tda", "messages": [{"role": "user", "content": "Which depot ships to Lyon?"}]}
    status, headers, reply = server.request("POST", "/v1/chat/completions", body, {"X-TDA-Session": "listed-chat"})
    assert status == 200, reply
    return int(headers["X-TDA-Turn"])


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_the_pagers_and_warnings_pass_axe_at_phone_width(browser: Any, server: Server, scheme: str) -> None:
    """What this issue added (pagers, the Who search, the unsaved mark, the copy warning, sign-in's message) at a
    phone's width: no serious or critical axe violation, nothing scrolls sideways."""
    await asyncio.to_thread(make_sessions, server)
    turn = await asyncio.to_thread(chat_turn, server)
    page = await signed_in_page(browser, server, server.admin_token)
    await page.set_viewport_size({"width": 390, "height": 844})
    await page.emulate_media(color_scheme=scheme)
    found = {}
    for path, ready in {
        "/ui/sessions": "#session-pages:not([hidden])",
        "/ui/sessions?offset=200": "#session-pages:not([hidden])",
        "/ui/audit": "#audit-pages:not([hidden])",
        "/ui/profiles": "#profile-table tbody tr",
        f"/ui/sessions/listed-chat/turns/{turn}": "#copy-warning code",
    }.items():
        await page.goto(path)
        await expect(page.locator(ready).first).to_be_attached()
        if path == "/ui/profiles":
            await page.locator("#profile-table select").first.select_option(index=1)
        await page.wait_for_timeout(200)
        wide = await page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
        found[path] = [*await violations(page), *(["scrolls sideways"] if wide else [])]
    stranger = await browser.new_context(base_url=server.url, viewport={"width": 390, "height": 844})
    signing_in = await stranger.new_page()
    await signing_in.emulate_media(color_scheme=scheme)
    await signing_in.goto("/ui/sign-in")
    await signing_in.route("**/v1/auth/session", lambda route: route.abort("connectionrefused"))
    await signing_in.fill("#token", "tda_not_sent")
    await signing_in.get_by_role("button", name="Sign in").click()
    await expect(signing_in.locator("#token-error")).to_contain_text("Could not reach the tda server")
    found["/ui/sign-in"] = await violations(signing_in)
    assert found == {path: [] for path in found}, found
    await stranger.close()
    await page.context.close()
