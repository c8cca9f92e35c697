"""Metrics per type version charted on the type page, in a real browser (issue 36, item 3): each version's
figures, checked against the snapshots the API lists (summed here), a chart per measure, and axe at a phone's
width, light and dark."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server, signed_in_page
from tests.browser.test_axe import violations

pytestmark = BROWSER_LOOP

TYPE = "metered"
SESSION = "metered-session"


def traffic(server: Server) -> list[dict[str, Any]]:
    """Two turns under v1 and one under v2; the snapshots the session recorded."""
    if server.request("GET", f"/v1/context-window-types/{TYPE}")[0] != 200:
        body = server.balanced_copy(id=TYPE, name="Metered")
        status, _, created = server.request("POST", "/v1/context-window-types", body)
        assert status == 201, created
        profile = {"id": TYPE, "name": "Metered", "type": "llm_only", "context_window_type_id": TYPE}
        assert server.request("POST", "/v1/profiles", profile)[0] == 201
        assert server.request("POST", "/v1/sessions", {"id": SESSION, "profile_id": TYPE})[0] == 201
        for query in ("Which depot ships to Lyon?", "And to Marseille?"):
            assert server.request("POST", f"/v1/sessions/{SESSION}/turns", {"query": query})[0] == 201
        body["description"] = "v2"
        status, _, saved = server.request(
            "PUT", f"/v1/context-window-types/{TYPE}", body, {"If-Match": created["etag"]}
        )
        assert status == 200, saved
        assert server.request("POST", f"/v1/sessions/{SESSION}/turns", {"query": "Which is faster?"})[0] == 201
    return server.request("GET", f"/v1/sessions/{SESSION}/snapshots")[2]["snapshots"]


async def test_each_versions_traffic_is_charted_and_tabled_on_the_type_page(page: Any, server: Server) -> None:
    rows = await asyncio.to_thread(traffic, server)
    await page.goto(f"/ui/types/{TYPE}")
    table = page.locator("#version-metrics-table")
    await expect(table.locator("tbody tr")).to_have_count(2)
    for version in (1, 2):
        mine = [r for r in rows if r["type_version"] == version]
        tokens = sum(r["snapshot"]["model_call"]["prompt_tokens"] for r in mine)
        row = table.locator(f'tr[data-version="{version}"]')
        await expect(row.get_by_test_id("tokens-in")).to_have_text(f"{tokens:,}")
        await expect(row.locator('td[data-label="Windows"]')).to_have_text(str(len(mine)))

    chart = page.locator("#metric-chart svg")
    await expect(chart.locator("rect")).to_have_count(2)  # one day, two versions
    await expect(chart).to_have_attribute("aria-label", re.compile(r"^Tokens in per window by day and version: "))
    await page.get_by_label("Chart").select_option("utilisation")
    await expect(chart).to_have_attribute("aria-label", re.compile(r"^Average utilisation by day and version: "))
    await expect(chart.locator("rect")).to_have_count(2)
    assert page.js_errors == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_the_metrics_pass_axe_at_phone_width(browser: Any, server: Server, scheme: str) -> None:
    await asyncio.to_thread(traffic, server)
    page = await signed_in_page(browser, server, server.admin_token)
    await page.set_viewport_size({"width": 390, "height": 844})
    await page.emulate_media(color_scheme=scheme)
    await page.goto(f"/ui/types/{TYPE}")
    await expect(page.locator("#metric-chart svg")).to_be_attached()
    await page.wait_for_timeout(200)
    wide = await page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
    assert [*await violations(page), *(["scrolls sideways"] if wide else [])] == []
    await page.context.close()
