"""axe-core (vendored: tests/browser/axe.min.js, axe-core 4.12.1, MPL-2.0) on every page, as an admin and as a
viewer: no critical and no serious violations. Plus what axe cannot see: tap targets of at least 24 px, and Save
one shortcut away and always in view."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server, signed_in_page

pytestmark = BROWSER_LOOP

AXE = (Path(__file__).parent / "axe.min.js").read_text()
SESSION = "axe"


def seed(server: Server) -> int:
    if server.request("GET", f"/v1/sessions/{SESSION}")[0] == 200:
        return server.request("GET", f"/v1/sessions/{SESSION}/turns")[2]["turns"][-1]["turn"]
    status, _, body = server.request(
        "POST", "/v1/sessions", {"id": SESSION, "profile_id": "demo-tools", "title": "Axe"}
    )
    assert status == 201, body
    for query in ("Where did returns rise?", "Why?"):
        status, _, turn = server.request("POST", f"/v1/sessions/{SESSION}/turns", {"query": query})
        assert status == 201, turn
    return turn["turn"]


def seed_experiment(server: Server) -> str:
    """An experiment over the axe session's turns (the type as the editor would send it, history off), ended."""
    status, _, listed = server.request("GET", "/v1/experiments")
    mine = [e for e in listed["experiments"] if e["spec"]["name"] == "axe"]
    if mine:
        return mine[0]["id"]
    body = server.balanced_copy(output_reserve_pct=30)
    spec = {"name": "axe", "candidate": {"type": body}, "slice": {"session_ids": [SESSION]}}
    status, _, created = server.request("POST", "/v1/experiments", spec)
    assert status == 201, created
    for _ in range(600):  # a bound: it runs in the background
        if server.request("GET", f"/v1/experiments/{created['id']}")[2]["finished_at"]:
            return created["id"]
        time.sleep(0.1)
    raise AssertionError("the axe experiment did not end")


def pages(turn: int, experiment: str = "") -> dict[str, str]:
    """Each page and an element that shows it has loaded (the experiment's page when one is given)."""
    return {
        "/ui/experiments": "#experiments-table tbody tr",
        **({f"/ui/experiments/{experiment}": "#turns-table tbody tr"} if experiment else {}),
        "/ui/types": ".card",
        "/ui/types/balanced": "#editor[aria-busy=false]",
        "/ui/types/new": "#editor[aria-busy=false]",
        "/ui/modules": "#module-table tbody tr",
        "/ui/profiles": "#profile-table tbody tr",
        "/ui/sessions": "#session-table tbody tr",
        f"/ui/sessions/{SESSION}": "#timeline a.turn-column",
        f"/ui/sessions/{SESSION}/turns/{turn}": "#messages > li",
        "/ui/audit": "h1",  # a viewer is refused the audit log: the refusal page is checked too
    }


async def violations(page: Any) -> list[str]:
    await page.evaluate(AXE + "\n;true")  # evaluated, not a <script>: the pages' CSP allows no inline script
    # Tap targets (WCAG 2.2's target-size, off by default) and content outside landmarks (region) are checked too.
    result = await page.evaluate(
        """async () => (await axe.run(document, { resultTypes: ['violations'],
            rules: { 'target-size': { enabled: true }, region: { enabled: true } } })).violations"""
    )
    return [
        f"{v['impact']} {v['id']}: {v['help']} ({len(v['nodes'])}x, e.g. {v['nodes'][0]['target']})"
        for v in result
        if v["impact"] in ("critical", "serious") or v["id"] in ("target-size", "region")
    ]


CONTROLS = "main button, main input[type=checkbox], main input[type=radio], main select, .top a, .top button"
SMALL = f"""() => [...document.querySelectorAll("{CONTROLS}")]
  .filter((el) => el.offsetParent !== null && !el.closest(".skip"))
  .map((el) => [el, el.getBoundingClientRect()])
  .filter(([, r]) => r.width < 24 || r.height < 24)
  .map(([el, r]) => `${{el.tagName}}#${{el.id}} ${{Math.round(r.width)}}x${{Math.round(r.height)}}`)
  .slice(0, 5)"""


async def small_targets(page: Any) -> list[str]:
    """Controls smaller than 24 x 24 px (WCAG 2.2 target size, minimum, without relying on spacing)."""
    return [f"small target {t}" for t in await page.evaluate(SMALL)]


@pytest.mark.parametrize("role", ["admin", "viewer"])
async def test_no_critical_or_serious_axe_violations(browser: Any, server: Server, role: str) -> None:
    turn = await asyncio.to_thread(seed, server)
    experiment = await asyncio.to_thread(seed_experiment, server)
    page = await signed_in_page(browser, server, server.admin_token if role == "admin" else server.viewer_token)
    found = {}
    for path, ready in pages(turn, experiment).items():
        await page.goto(path)
        await expect(page.locator(ready).first).to_be_attached()
        await page.wait_for_timeout(200)
        found[path] = await violations(page) + await small_targets(page)
    assert found == {path: [] for path in found}, found
    await page.context.close()


async def test_save_is_two_tabs_or_one_shortcut_away_and_always_in_view(page: Any, server: Server) -> None:
    from tests.browser.test_round2 import make_type, versions

    await asyncio.to_thread(make_type, server, "r2-keys")
    await page.goto("/ui/types/r2-keys")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await page.keyboard.press("Tab")
    await page.keyboard.press("Tab")
    await expect(page.locator(":focus")).to_have_text("Skip to Save (or press Ctrl+S)")
    await page.keyboard.press("Enter")
    await expect(page.locator("#save")).to_be_focused()

    await page.fill("#f-name", "Saved from the keyboard")
    await page.keyboard.press("Control+s")
    await expect(page.locator("#toast")).to_contain_text("Saved from the keyboard as version 2")
    assert [v["version"] for v in versions(server, "r2-keys")] == [2, 1]
    # Save is in view wherever the page is scrolled.
    for y in (0, 1500, 100_000):
        await page.evaluate(f"window.scrollTo(0, {y})")
        await expect(page.locator("#save")).to_be_in_viewport()
    assert page.js_errors == []
