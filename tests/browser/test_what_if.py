"""The what-if preview answers questions: a chosen limit and profile, the bar, and the differences from the saved
type and from the session's last recorded turn."""

from __future__ import annotations

import asyncio
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server

pytestmark = BROWSER_LOOP


def seed(server: Server) -> dict[str, Any]:
    status, _, body = server.request(
        "POST", "/v1/sessions", {"id": "what-if", "profile_id": "demo-rag", "title": "What if"}
    )
    assert status == 201, body
    history = [
        {"role": "user", "turn": t, "content": f"Question {t} about supplier delays and pallets. " * 6}
        for t in range(1, 6)
    ]
    assert server.request("POST", "/v1/sessions/what-if/messages", {"messages": history})[0] == 201
    status, _, turn = server.request("POST", "/v1/sessions/what-if/turns", {"query": "Which supplier is late?"})
    assert status == 201, turn
    return turn


async def test_what_if_with_a_limit_against_saved_and_recorded(page: Any, server: Server) -> None:
    turn = await asyncio.to_thread(seed, server)
    await page.goto("/ui/types/knowledge_heavy")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await page.fill("#f-reserve-n", "30")  # a larger reply reserve leaves less for everything else
    await page.select_option("#preview-session", "what-if")
    await page.fill("#preview-limit", "999999999")
    await page.click("#preview-form button")
    await expect(page.locator("#preview-limit-error")).to_contain_text("at most 128000")

    await page.fill("#preview-limit", "16000")
    await page.click("#preview-form button")
    await expect(page.locator('[data-testid="preview-summary"]')).to_contain_text("16,000-token limit")

    # The same question through the API: the edited type under a 16,000-token limit, and the saved type.
    _, _, saved = server.request("GET", "/v1/context-window-types/knowledge_heavy")
    edited = {k: v for k, v in saved.items() if k not in {"version", "updated_at", "etag"}}
    edited["output_reserve_pct"] = 30
    body = {"session_id": "what-if", "query": "Summarise what we found so far.", "context_limit": 16000}
    budget = {}
    for name, extra in (("edited", {"type": edited}), ("saved", {"type_id": "knowledge_heavy"})):
        status, _, out = server.request("POST", "/v1/context-window-types/preview", {**body, **extra})
        assert status == 200, out
        budget[name] = out["snapshot"]["available_budget"]
    assert budget == {"edited": 16000 - 4800, "saved": 16000 - 1920}
    tables = page.locator('[data-testid="comparison"]')
    row = tables.first.locator("tr", has_text="Available budget")
    await expect(row.locator("td").nth(0)).to_have_text(f"{budget['saved']:,}")
    await expect(row.locator("td").nth(1)).to_have_text(f"{budget['edited']:,}")
    await expect(row.locator("td").nth(2)).to_have_text(f"−{budget['saved'] - budget['edited']:,}")
    await expect(tables.nth(1)).to_contain_text(f"Turn {turn['turn']}")
    recorded = next(m["used"] for m in turn["snapshot"]["modules"] if m["module_id"] == "conversation_history")
    await expect(tables.nth(1).locator("tr", has_text="Conversation history").locator("td").first).to_have_text(
        f"{recorded:,}"
    )
    assert page.js_errors == []
