"""The session panel, round 2 (issue 26, items 6-7): the timeline is scaled to what was used (tokens or share of the
budget), a limit change is a step, phone axis text is readable; the panel says why each module used what it did."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server

pytestmark = BROWSER_LOOP

SESSION = "usage-scale"


def seed(server: Server) -> list[dict[str, Any]]:
    """Three turns in a large window (under a third of it used), the limit lowered before the third."""
    status, _, body = server.request(
        "POST", "/v1/sessions", {"id": SESSION, "profile_id": "demo-tools", "title": "Usage scale"}
    )
    assert status == 201, body
    turns = []
    for i, query in enumerate(("Where did returns rise?", "Why?", "What should we tell the carrier?")):
        if i == 2:
            status, _, out = server.request("POST", f"/v1/sessions/{SESSION}/context-limit", {"context_limit": 64000})
            assert status == 200, out
        status, _, turn = server.request("POST", f"/v1/sessions/{SESSION}/turns", {"query": query})
        assert status == 201, turn
        turns.append(turn)
    return turns


PLOT = """() => {
  const svg = document.querySelector("#timeline svg");
  const H = svg.viewBox.baseVal.height, bottom = H - 26, plot = bottom - 34;
  const tops = [...svg.querySelectorAll("path.area")].map((p) => p.getBBox().y);
  const budget = svg.querySelector(".budget-line");
  const pts = budget ? [...budget.points].map((p) => [p.x, p.y]) : [];
  return { filled: (bottom - Math.min(...tops)) / plot, pts, scale: svg.dataset.scale,
           axis: [...svg.querySelectorAll("text.axis")].map((t) => t.textContent),
           axisPx: Math.min(...[...svg.querySelectorAll("text.axis")].map((t) => t.getBoundingClientRect().height)) };
}"""


async def test_timeline_is_scaled_to_usage_with_limit_steps(page: Any, server: Server) -> None:
    turns = await asyncio.to_thread(seed, server)
    # Knowledge fills much of its share when the question matches (its depth grows with the budget): under a third
    # of the budget is used, so a chart scaled to the budget would be mostly empty.
    assert max(t["snapshot"]["total_used"] / t["snapshot"]["available_budget"] for t in turns) < 0.3
    await page.goto(f"/ui/sessions/{SESSION}")
    await expect(page.locator("#timeline a.turn-column")).to_have_count(3)
    plot = await page.evaluate(PLOT)
    assert plot["scale"] == "usage"
    assert plot["filled"] > 0.5, plot  # the tallest stack fills most of the chart, not 3% of it
    # The budget line moves only horizontally or vertically: a step where the limit changed, no slope.
    pts = plot["pts"]
    assert len(pts) >= 4
    assert all(abs(a[0] - b[0]) < 0.01 or abs(a[1] - b[1]) < 0.01 for a, b in itertools.pairwise(pts)), pts

    await page.get_by_role("button", name="Share of budget").click()
    plot = await page.evaluate(PLOT)
    assert plot["scale"] == "share" and plot["axis"][2].endswith("%") and plot["filled"] > 0.5, plot
    await expect(page.get_by_role("button", name="Share of budget")).to_have_attribute("aria-pressed", "true")
    assert page.js_errors == []


async def test_timeline_axis_is_readable_on_a_phone(browser: Any, server: Server) -> None:
    if server.request("GET", f"/v1/sessions/{SESSION}")[0] != 200:
        await asyncio.to_thread(seed, server)
    context = await browser.new_context(base_url=server.url, viewport={"width": 390, "height": 844}, is_mobile=True)
    assert (await context.request.post("/v1/auth/session", data={"token": server.admin_token})).ok
    page = await context.new_page()
    await page.goto(f"/ui/sessions/{SESSION}")
    await expect(page.locator("#timeline a.turn-column").first).to_be_attached()
    plot = await page.evaluate(PLOT)
    assert plot["axisPx"] >= 10, plot
    assert await page.evaluate("document.documentElement.scrollWidth") == 390
    await context.close()


async def test_panel_says_why_each_module_used_what_it_did(page: Any, server: Server) -> None:
    status, _, body = await asyncio.to_thread(
        server.request, "POST", "/v1/sessions", {"id": "why", "profile_id": "demo-tools", "title": "Why"}
    )
    assert status == 201, body
    status, _, turn = await asyncio.to_thread(
        server.request, "POST", "/v1/sessions/why/turns", {"query": "Where did returns rise?"}
    )
    assert status == 201, turn
    snap = turn["snapshot"]
    reasons = {m["module_id"]: m["metadata"]["reason"] for m in snap["modules"] if m["metadata"].get("reason")}
    assert reasons, "some module should say why it is empty"
    assert snap["adjustments_fired"], "the first turn should fire a rule"

    await page.goto("/ui/sessions/why")
    for module_id, reason in reasons.items():
        card = page.locator(f'#module-cards [data-module="{module_id}"]')
        await expect(card.locator('[data-testid="why"]')).to_contain_text(reason[1:].rstrip("."))
    # A fired rule is named at its module, in words (not "Rule fired" alone).
    fired = [m for m in snap["modules"] if any(f" {m['module_id']}" in r for r in snap["adjustments_fired"])]
    assert fired
    why = page.locator(f'#module-cards [data-module="{fired[0]["module_id"]}"] [data-testid="why"]')
    await expect(why).to_contain_text("Rule: ")
    assert "->" not in await why.inner_text()
    # Decision-log words: where the limit came from in plain words, not the table's key.
    await expect(page.locator("#decisions")).not_to_contain_text("(litellm)")
    assert page.js_errors == []
