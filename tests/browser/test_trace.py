"""The turn trace in a real browser: the text that was sent, module by module, reachable from the panel; replay
and feedback; unknown turns are 404 pages."""

from __future__ import annotations

import asyncio
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server, signed_in_page

pytestmark = BROWSER_LOOP

QUERY = "Which warehouse shipped the late orders?"


def traced_profile(server: Server) -> None:
    """demo-tools on a copy of its type without RAG cases: champion cases recorded by a turn are served to its
    replay too (the case store keeps no time), so a turn with RAG cases cannot replay identically."""
    if server.request("GET", "/v1/profiles/trace-tools")[0] == 200:
        return
    body = server.balanced_copy(id="trace-type", name="Trace")
    body["modules"]["rag_context"]["active"] = False
    body["condensation_order"] = [m for m in body["condensation_order"] if m != "rag_context"]
    assert server.request("POST", "/v1/context-window-types", body)[0] == 201
    _, _, tools = server.request("GET", "/v1/profiles/demo-tools")
    profile = {k: tools[k] for k in ("type", "system_prompt", "tools", "knowledge_collections")}
    profile.update(id="trace-tools", name="Sales analyst (traced)", context_window_type_id="trace-type")
    assert server.request("POST", "/v1/profiles", profile)[0] == 201


def seed(server: Server, session_id: str) -> dict[str, Any]:
    traced_profile(server)
    status, _, body = server.request(
        "POST", "/v1/sessions", {"id": session_id, "profile_id": "trace-tools", "title": "Late orders"}
    )
    assert status == 201, body
    history = [
        {"role": "user", "turn": 1, "content": "List the orders that shipped after their promised date."},
        {"role": "assistant", "turn": 1, "content": "Orders 1043 and 1077 shipped two days late."},
    ]
    assert server.request("POST", f"/v1/sessions/{session_id}/messages", {"messages": history})[0] == 201
    status, _, turn = server.request("POST", f"/v1/sessions/{session_id}/turns", {"query": QUERY})
    assert status == 201, turn
    return turn


async def test_trace_shows_the_text_that_was_sent(page: Any, server: Server) -> None:
    turn = await asyncio.to_thread(seed, server, "trace-a")
    n = turn["turn"]
    await page.goto("/ui/sessions/trace-a")
    await page.get_by_role("link", name=f"Trace of turn {n}").click()
    await expect(page).to_have_url(f"{server.url}/ui/sessions/trace-a/turns/{n}")
    await expect(page.locator("#trace-status")).to_contain_text("identical to the recorded window")

    messages = page.locator("#messages > li")
    # The query is sent last, on its own; the imported history is sent verbatim by the history module.
    await expect(messages.last).to_have_attribute("data-module", "query")
    await expect(messages.last.locator(".message-text")).to_have_text(QUERY)
    history = page.locator('#messages > li[data-module="conversation_history"] .message-text')
    await expect(history.first).to_have_text("List the orders that shipped after their promised date.")
    profile = server.request("GET", "/v1/profiles/trace-tools")[2]
    system = page.locator('#messages > li[data-module="system_prompt"] .message-text')
    await expect(system.first).to_contain_text(profile["system_prompt"][:60])
    # Per-message tokens, tools and the tools block, plus reply priming, add up to the snapshot's total.
    counts = [
        int((await t.text_content()).split()[0].replace(",", "")) for t in await page.locator(".tokens-badge").all()
    ]
    assert sum(counts) + 3 == turn["snapshot"]["total_used"]
    # The tools as sent: each schema the tool module sent, by name (or, at its names-only level, a text message).
    names = [t["function"]["name"] for t in profile["tools"]]
    tools = page.locator('#tools > li[data-module="tool_definitions"]')
    if await tools.count():
        await expect(tools).to_have_count(len(names))
        for name in names:
            await expect(page.locator("#tools")).to_contain_text(name)
    else:
        await expect(page.locator('#messages > li[data-module="tool_definitions"]')).to_contain_text(names[0])
    await page.locator('details[data-module="knowledge_context"] summary').click()
    await expect(page.locator('details[data-module="knowledge_context"]')).to_contain_text("Score: ")
    await expect(page.locator('[data-testid="token-method"]')).to_have_text(
        turn["snapshot"]["token_method"] or "not recorded"
    )
    await expect(page.locator('[data-testid="prefix"]')).to_contain_text("tokens")

    await page.click("#replay")
    await expect(page.locator('[data-testid="replay-verdict"]')).to_have_text(
        "Identical: the same inputs give the same window."
    )
    await page.get_by_role("button", name="👍 Helpful (+1)").click()
    await expect(page.locator("#toast")).to_contain_text(f"Turn {n} marked helpful.")
    assert page.js_errors == []


async def test_unknown_ids_are_404_pages(page: Any) -> None:
    for path in ("/ui/types/does-not-exist", "/ui/sessions/no-such-session", "/ui/sessions/demo/turns/999"):
        response = await page.goto(path)
        assert response.status == 404, path
        await expect(page.locator("h1")).to_have_text("Not found")
    assert page.js_errors == []


async def test_viewer_sees_the_trace_but_cannot_rate(browser: Any, server: Server) -> None:
    n = (await asyncio.to_thread(seed, server, "trace-b"))["turn"]
    page = await signed_in_page(browser, server, server.viewer_token)
    await page.goto(f"/ui/sessions/trace-b/turns/{n}")
    await expect(page.locator("#messages > li").first).to_be_visible()
    for button in await page.locator("[data-feedback]").all():
        await expect(button).to_be_disabled()
    await expect(page.locator("#replay")).to_be_enabled()  # replay only reads
    await page.context.close()
