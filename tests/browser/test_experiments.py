"""Experiments in a real browser (issue 36, item 1): an admin runs one from the type editor (a saved version, then
the type as edited and unsaved), follows it to its page, reads the totals, the chart and the turns as the API has
them, and links it to a label move; the page passes axe at a phone's width, light and dark."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server, signed_in_page
from tests.browser.test_axe import violations

pytestmark = BROWSER_LOOP

TYPE = "experimented"


def traffic(server: Server) -> None:
    """A type of its own, a profile bound to it, and a session of three recorded turns under it."""
    if server.request("GET", f"/v1/context-window-types/{TYPE}")[0] == 200:
        return
    body = server.balanced_copy(id=TYPE, name="Experimented")
    status, _, created = server.request("POST", "/v1/context-window-types", body)
    assert status == 201, created
    profile = {"id": TYPE, "name": "Experimented", "type": "llm_only", "context_window_type_id": TYPE}
    assert server.request("POST", "/v1/profiles", profile)[0] == 201
    assert server.request("POST", "/v1/sessions", {"id": TYPE, "profile_id": TYPE})[0] == 201
    for query in ("Which depot ships to Lyon?", "And to Marseille?", "Which is faster?"):
        assert server.request("POST", f"/v1/sessions/{TYPE}/turns", {"query": query})[0] == 201


def experiment(server: Server, experiment_id: str) -> dict[str, Any]:
    status, _, body = server.request("GET", f"/v1/experiments/{experiment_id}")
    assert status == 200, body
    return body


async def read_as_the_api_says(page: Any, server: Server) -> dict[str, Any]:
    """The experiment page, once ended, against the API's figures (the oracle: what GET returns)."""
    experiment_id = page.url.rsplit("/", 1)[1]
    await expect(page.locator("#progress-text")).to_have_text(re.compile(r"^Done: 3 of 3 turns replayed"))
    e = await asyncio.to_thread(experiment, server, experiment_id)
    totals = e["totals"]
    tokens = page.locator("#totals-table tr", has_text="Tokens sent")
    await expect(tokens.locator('td[data-label="Baseline"]')).to_have_text(f"{totals['baseline']['tokens']:,}")
    await expect(tokens.locator('td[data-label="Candidate"]')).to_have_text(f"{totals['candidate']['tokens']:,}")
    await expect(page.locator("#turns-table tbody tr")).to_have_count(3)
    for t in e["turns"]:
        row = page.locator(f'#turns-table tr[data-session="{t["session_id"]}"][data-turn="{t["turn"]}"]')
        expected = f"{t['baseline']['tokens']:,} → {t['candidate']['tokens']:,}"
        await expect(row.locator('td[data-label="Tokens sent"]')).to_contain_text(expected)
    if any(t["delta"]["tokens"] for t in e["turns"]):  # a bar per turn compared
        await expect(page.locator("#delta-chart svg rect")).to_have_count(totals["compared"])
    else:
        await expect(page.get_by_test_id("no-change")).to_have_text(
            "Tokens sent: no change in any of the 3 turns compared."
        )
    await page.get_by_label("Chart").select_option("utilisation")
    if any(t["delta"]["utilisation"] for t in e["turns"]):
        await expect(page.locator("#delta-chart svg rect")).to_have_count(totals["compared"])
    await expect(page.locator("#experiment-cancel")).to_be_hidden()  # ended: nothing to cancel
    await expect(page.locator("#export-csv")).to_have_attribute(
        "href", f"/v1/experiments/{experiment_id}/export?format=csv"
    )
    return e


async def test_an_experiment_runs_from_the_editor_and_links_a_label_move(page: Any, server: Server) -> None:
    await asyncio.to_thread(traffic, server)
    await page.goto(f"/ui/types/{TYPE}")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")

    # A saved version as the candidate: nothing unsaved, so the experiment's page opens at once.
    await page.get_by_label("Candidate").select_option("1")
    await page.get_by_label("Turns (sample size)").fill("3")
    await page.get_by_role("button", name="Run experiment").click()
    await expect(page).to_have_url(re.compile(r"/ui/experiments/[0-9a-f]+$"))
    saved = await read_as_the_api_says(page, server)
    assert saved["spec"]["candidate"]["version"] == 1 and saved["spec"]["slice"]["type_id"] == TYPE

    # The type as edited: the edits stay in the editor, the experiment opens in another tab.
    await page.goto(f"/ui/types/{TYPE}")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await page.fill("#f-reserve-n", "30")
    await page.get_by_label("Turns (sample size)").fill("3")
    await page.get_by_label("Name (optional)").fill("reserve 30%")
    await page.get_by_label("Only these sessions").fill(f" {TYPE} ,")
    await page.get_by_role("button", name="Run experiment").click()
    link = page.locator("#experiment-started a")
    await expect(link).to_contain_text("Follow the experiment")
    href = await link.get_attribute("href")
    assert await page.locator("#f-reserve-n").input_value() == "30"  # still being edited
    tab = await page.context.new_page()
    await tab.goto(href)
    await expect(tab.locator("#experiment-title")).to_have_text("Experiment: reserve 30%")
    await expect(tab.locator("#experiment-spec")).to_contain_text(f"Candidate: {TYPE} (unsaved)")
    unsaved = await read_as_the_api_says(tab, server)
    assert unsaved["spec"]["candidate"]["type"]["output_reserve_pct"] == 30
    assert unsaved["spec"]["slice"]["session_ids"] == [TYPE]
    # A larger reserve leaves less room: every turn's utilisation is of a smaller budget.
    assert all(t["candidate"]["available"] < t["baseline"]["available"] for t in unsaved["turns"])
    await tab.close()

    # The rollout it justified: the label move links it, in the editor and in the audit log.
    page.once("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
    await page.get_by_label("Label", exact=True).fill("staging")
    await page.get_by_label("Justified by").select_option(unsaved["id"])
    await page.get_by_label("Why (kept with the move)").fill("the experiment reads well")
    await page.get_by_role("button", name="Move label").click()
    justified = page.locator('#labels li[data-label="staging"] a')
    await expect(justified).to_have_attribute("href", f"/ui/experiments/{unsaved['id']}")
    await page.goto("/ui/audit")
    await expect(page.get_by_test_id("label-move").first.locator("a")).to_have_attribute(
        "href", f"/ui/experiments/{unsaved['id']}"
    )
    assert page.js_errors == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_the_experiment_page_passes_axe_at_phone_width(browser: Any, server: Server, scheme: str) -> None:
    await asyncio.to_thread(traffic, server)
    status, _, created = await asyncio.to_thread(
        server.request, "POST", "/v1/experiments", {"candidate": {"type_id": TYPE}, "slice": {"type_id": TYPE}}
    )
    assert status == 201, created
    page = await signed_in_page(browser, server, server.admin_token)
    await page.set_viewport_size({"width": 390, "height": 844})
    await page.emulate_media(color_scheme=scheme)
    for path, ready in (
        (f"/ui/experiments/{created['id']}", "#turns-table tbody tr"),
        ("/ui/experiments", "#experiments-table a"),
    ):
        await page.goto(path)
        await expect(page.locator(ready).first).to_be_attached()
        await page.wait_for_timeout(200)
        wide = await page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
        assert [*await violations(page), *(["scrolls sideways"] if wide else [])] == [], path
    assert page.js_errors == []
    await page.context.close()
