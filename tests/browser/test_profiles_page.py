"""The profiles page keeps an admin from surprises, in a real browser: leaving with an unsaved binding asks first
(it was lost without a word), and a binding, which applies to every session of the profile at once, is confirmed
with how many sessions that is."""

from __future__ import annotations

import asyncio
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server

pytestmark = BROWSER_LOOP

PROFILE = "bind-me"


def profile_with_sessions(server: Server) -> None:
    body = {"id": PROFILE, "name": "Binding test", "type": "llm_only", "system_prompt": "Be brief."}
    status, _, created = server.request("POST", "/v1/profiles", body)
    assert status == 201, created
    for n in (1, 2, 3):
        status, _, created = server.request("POST", "/v1/sessions", {"id": f"bound-{n}", "profile_id": PROFILE})
        assert status == 201, created


def bound_type(server: Server) -> str | None:
    return server.request("GET", f"/v1/profiles/{PROFILE}")[2]["context_window_type_id"]


async def test_an_unsaved_binding_is_guarded_and_a_binding_is_confirmed(page: Any, server: Server) -> None:
    await asyncio.to_thread(profile_with_sessions, server)
    await page.goto("/ui/profiles")
    row = page.locator(f'#profile-table tr[data-profile="{PROFILE}"]')
    select = row.get_by_label("Context window type for Binding test")
    await select.select_option("balanced")
    await expect(row.get_by_test_id(f"unsaved-{PROFILE}")).to_have_text("Unsaved")

    asked: list[str] = []

    async def answer(dialog: Any, accept: bool) -> None:
        asked.append(dialog.message)
        await (dialog.accept() if accept else dialog.dismiss())

    # Leaving: asked first; staying keeps the choice.
    page.once("dialog", lambda dialog: answer(dialog, accept=False))
    await page.get_by_role("link", name="Sessions", exact=True).click()
    await expect(page).to_have_url(f"{server.url}/ui/profiles")
    assert "not saved" in asked[-1]
    await expect(select).to_have_value("balanced")

    # Saving: the binding is confirmed, naming what it applies to; no keeps the profile as it was.
    page.once("dialog", lambda dialog: answer(dialog, accept=False))
    await row.get_by_role("button", name="Save").click()
    await expect(page.locator("#toast")).to_contain_text("Not saved: Binding test keeps its type")
    assert "Bind Binding test to Balanced?" in asked[-1] and "all 3 of its sessions" in asked[-1], asked[-1]
    assert await asyncio.to_thread(bound_type, server) is None

    page.once("dialog", lambda dialog: answer(dialog, accept=True))
    await row.get_by_role("button", name="Save").click()
    await expect(page.locator("#toast")).to_contain_text("Saved Binding test")
    assert await asyncio.to_thread(bound_type, server) == "balanced"
    await expect(row.get_by_test_id(f"unsaved-{PROFILE}")).to_have_text("")

    # A limit alone binds nothing: saved without a question. Saved, the page is left without one too.
    questions = len(asked)
    page.on("dialog", lambda dialog: answer(dialog, accept=False))
    await row.get_by_label("Context-limit override for Binding test", exact=False).fill("64000")
    await expect(row.get_by_test_id(f"unsaved-{PROFILE}")).to_have_text("Unsaved")
    await row.get_by_role("button", name="Save").click()
    await expect(row.get_by_test_id(f"unsaved-{PROFILE}")).to_have_text("")  # saved (the toast may be the last one's)
    assert (await asyncio.to_thread(server.request, "GET", f"/v1/profiles/{PROFILE}"))[2]["context_limit"] == 64000
    await page.get_by_role("link", name="Sessions", exact=True).click()
    await expect(page).to_have_url(f"{server.url}/ui/sessions")
    assert len(asked) == questions, asked[questions:]
    assert page.js_errors == []
