"""The provider context features a call asked for, on its trace page in a real browser: what tda did with each
(here Responses' compaction threshold and truncation), as the snapshot records it."""

from __future__ import annotations

import asyncio
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server, signed_in_page

pytestmark = BROWSER_LOOP

SESSION = "features-shown"


def responses_call(server: Server) -> int:
    body = {
        "model": "tda",
        "input": "Which orders were late?",
        "truncation": "auto",
        "context_management": [{"type": "compaction", "compact_threshold": 50_000}],
    }
    status, headers, answer = server.request("POST", "/v1/responses", body, {"X-TDA-Session": SESSION})
    assert status == 200, answer
    return int(headers["X-TDA-Turn"])


async def test_the_trace_page_lists_what_tda_did_with_the_provider_features(browser: Any, server: Server) -> None:
    turn = await asyncio.to_thread(responses_call, server)
    page = await signed_in_page(browser, server, server.admin_token)
    await page.goto(f"/ui/sessions/{SESSION}/turns/{turn}")
    section = page.locator("#trace-events")
    await expect(section).to_contain_text("Provider context features")
    await expect(section).to_contain_text("context_management (done by tda)")
    await expect(section).to_contain_text("within compact_threshold (50,000 tokens)")
    await expect(section).to_contain_text("truncation (done by tda): tda's budgeting")
    await page.close()
