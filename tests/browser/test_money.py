"""Money in a real browser: the panel's live cost, session and profile totals, the timeline's dollars per turn, and
the trace's tokens and dollars per module; a model without a price reads "price unknown", never $0."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server

pytestmark = BROWSER_LOOP


def run_turns(server: Server, session_id: str, profile_id: str, queries: tuple[str, ...]) -> list[dict[str, Any]]:
    status, _, body = server.request("POST", "/v1/sessions", {"id": session_id, "profile_id": profile_id})
    assert status == 201, body
    done = []
    for query in queries:
        status, _, turn = server.request("POST", f"/v1/sessions/{session_id}/turns", {"query": query})
        assert status == 201, turn
        done.append(turn)
    return done


def run_more(server: Server, session_id: str, query: str) -> list[dict[str, Any]]:
    status, _, turn = server.request("POST", f"/v1/sessions/{session_id}/turns", {"query": query})
    assert status == 201, turn
    return [turn]


def unpriced_profile(server: Server) -> None:
    body = {"id": "acme", "type": "llm_only", "model": "openai/acme-small-unpriced", "system_prompt": "You help."}
    assert server.request("POST", "/v1/profiles", body)[0] == 201


async def test_dollars_in_the_panel_timeline_and_trace(page: Any, server: Server) -> None:
    turns = await asyncio.to_thread(run_turns, server, "money", "demo-chat", ("Where is my order?", "And refunds?"))
    priced = [t["model_call"]["cost"] for t in turns]
    assert all(priced), "the demo's model has a price in litellm's cost map"
    await page.goto("/ui/sessions/money")
    await expect(page.locator("#fact-cost")).to_contain_text(
        re.compile(r"^\$[0-9.]+: .* in.* out; \$[0-9.]+ this session")
    )
    spent = page.locator('[data-testid="session-cost"] div', has_text="Spent")
    await expect(spent).to_contain_text("$")
    await expect(spent).not_to_contain_text("unknown")
    modules = {m for t in priced for m in t["input_by_module_usd"]}
    await expect(page.locator('[data-testid="cost-by-module"] tbody tr')).to_have_count(len(modules) + 1)
    await expect(page.locator("#profile-cost")).to_contain_text("Profile demo-chat: $")
    label = await page.locator("#timeline a.turn-column").first.get_attribute("aria-label")
    assert re.search(r" tokens, \$[0-9.]+", label), label
    await expect(page.locator('[data-testid="timeline-cost"]')).to_contain_text("Model calls of these turns: $")

    # live: a turn run elsewhere while the panel is open updates the figure (snapshot over SSE, then the priced turn)
    before = await page.locator("#fact-cost").inner_text()
    (third,) = await asyncio.to_thread(run_more, server, "money", "What about exchanges?")
    await expect(page.locator("#fact-cost")).not_to_have_text(before)
    total = sum(c["total_usd"] for c in priced) + third["model_call"]["cost"]["total_usd"]
    session_total = await page.locator("#fact-cost").inner_text()
    shown = float(re.search(r"\$([0-9.]+) this session", session_total).group(1))
    assert shown == pytest.approx(total, rel=0.01), (session_total, total)

    await page.goto("/ui/sessions/money/turns/1")
    section = page.locator('[data-testid="turn-cost"]')
    for module, split in priced[0]["by_module"].items():
        row = section.locator(f'tr[data-module="{module}"]')
        await expect(row).to_contain_text(f"{split['tokens']:,}")
        await expect(row).to_contain_text("$")
    assert page.js_errors == []


async def test_unknown_prices_read_price_unknown_never_zero(page: Any, server: Server) -> None:
    await asyncio.to_thread(unpriced_profile, server)
    (turn,) = await asyncio.to_thread(run_turns, server, "unpriced-acme", "acme", ("Hello?",))
    assert turn["model_call"]["cost"] is None
    await page.goto("/ui/sessions/unpriced-acme")
    await expect(page.locator("#fact-cost")).to_contain_text("price unknown for openai/acme-small-unpriced")
    await expect(page.locator('[data-testid="session-cost"]')).to_contain_text("price unknown")
    await expect(page.locator("#profile-cost")).to_contain_text("Profile acme: price unknown")
    await expect(page.locator('[data-testid="timeline-cost"]')).to_contain_text("price unknown")
    await page.goto("/ui/sessions/unpriced-acme/turns/1")
    section = page.locator('[data-testid="turn-cost"]')
    await expect(section).to_contain_text("price unknown")
    assert "$0" not in await section.inner_text()
    assert page.js_errors == []
