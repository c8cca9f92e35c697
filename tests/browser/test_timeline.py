"""The panel's timeline and comparisons in a real browser: tokens per module across turns, markers, a click opens the
trace, two turns or one turn under two types side by side."""

from __future__ import annotations

import asyncio
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server

pytestmark = BROWSER_LOOP

SESSION = "timeline"
FILLER = "Returns rose in the north region after the carrier changed; refunds lag by a week. "


def seed(server: Server) -> list[dict[str, Any]]:
    status, _, body = server.request(
        "POST", "/v1/sessions", {"id": SESSION, "profile_id": "demo-tools", "title": "Timeline", "context_limit": 6144}
    )
    assert status == 201, body
    history = []
    for turn in range(1, 9):
        history += [
            {"role": "user", "turn": turn, "content": f"Question {turn}: " + FILLER * 3},
            {"role": "assistant", "turn": turn, "content": f"Answer {turn}: " + FILLER * 6},
        ]
    assert server.request("POST", f"/v1/sessions/{SESSION}/messages", {"messages": history})[0] == 201
    turns = []
    for query in ("Where did returns rise?", "Why?", "What should we tell the carrier?"):
        status, _, turn = server.request("POST", f"/v1/sessions/{SESSION}/turns", {"query": query})
        assert status == 201, turn
        turns.append(turn)
    return turns


async def test_timeline_markers_click_and_compare(page: Any, server: Server) -> None:
    turns = await asyncio.to_thread(seed, server)
    await page.goto(f"/ui/sessions/{SESSION}")
    columns = page.locator("#timeline a.turn-column")
    await expect(columns).to_have_count(len(turns))
    await expect(page.locator('#timeline path.area[data-module="conversation_history"]')).to_have_count(1)
    condensed = [t for t in turns if t["snapshot"]["condensations"]]
    assert condensed, "the small window should make the history condense"
    await expect(page.locator("#timeline .mark-condensed")).to_have_count(len(condensed))
    first = turns[0]
    label = await columns.first.get_attribute("aria-label")
    assert label.startswith(f"Turn {first['turn']}: {first['snapshot']['total_used']:,} of ")

    # Two turns side by side: the differences are the snapshots' own.
    a, b = turns[0], turns[-1]
    await page.select_option("#cmp-a", str(a["snapshot_id"]))
    await page.select_option("#cmp-b", str(b["snapshot_id"]))
    await page.click("#compare-turns button")
    table = page.locator('[data-testid="comparison"]')
    total = table.locator("tr", has_text="Total used")
    change = b["snapshot"]["total_used"] - a["snapshot"]["total_used"]
    shown = f"+{change:,}" if change > 0 else (f"−{-change:,}" if change < 0 else "0")
    await expect(total.locator("td").last).to_have_text(shown)

    # One turn under two types: each column is that type's assembly of the same recorded inputs.
    await page.select_option("#cmp-turn", str(b["snapshot_id"]))
    await page.select_option("#cmp-type-a", "balanced")
    await page.select_option("#cmp-type-b", "token_efficient")
    await page.click("#compare-types button")
    expected = [
        server.request("GET", f"/v1/snapshots/{b['snapshot_id']}/trace?type_id={t}")[2]["snapshot"]["total_used"]
        for t in ("balanced", "token_efficient")
    ]
    total = page.locator('[data-testid="comparison"] tr', has_text="Total used")
    await expect(total.locator("td").first).to_have_text(f"{expected[0]:,}")
    await expect(total.locator("td").nth(1)).to_have_text(f"{expected[1]:,}")

    # A click on a turn opens its trace.
    await columns.last.click()
    await expect(page).to_have_url(f"{server.url}/ui/sessions/{SESSION}/turns/{b['turn']}")
    assert page.js_errors == []
