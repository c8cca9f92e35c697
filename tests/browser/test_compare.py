"""Trace tools people know from Langfuse, LangSmith and the OpenAI Playground (issue 26): two turns' windows side by
side, any two type versions in sentences, the what-if's own messages beside the recorded turn's, dark mode."""

from __future__ import annotations

import asyncio
import difflib
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server

pytestmark = BROWSER_LOOP

SESSION = "cmp-late"
OTHER = "cmp-other"
FIRST = "Which warehouse shipped the late orders?"
SECOND = "Which carrier lost the pallets?"
OTHER_FIRST = "Which warehouse shipped the early orders?"


def seed(server: Server) -> list[dict[str, Any]]:
    """Two turns of one session and one turn of another (a query one word apart), through the API."""
    from tests.browser.test_trace import traced_profile

    if server.request("GET", f"/v1/sessions/{SESSION}")[0] == 200:
        recorded = {s: server.request("GET", f"/v1/sessions/{s}/snapshots")[2]["snapshots"] for s in (SESSION, OTHER)}
        return [*recorded[SESSION], *recorded[OTHER]]
    traced_profile(server)
    turns = []
    for session_id, queries in ((SESSION, (FIRST, SECOND)), (OTHER, (OTHER_FIRST,))):
        status, _, body = server.request(
            "POST", "/v1/sessions", {"id": session_id, "profile_id": "trace-tools", "title": f"Compare {session_id}"}
        )
        assert status == 201, body
        for query in queries:
            status, _, turn = server.request("POST", f"/v1/sessions/{session_id}/turns", {"query": query})
            assert status == 201, turn
            turns.append(turn)
    return turns


def trace_of(server: Server, session_id: str, turn: int) -> dict[str, Any]:
    _, _, listed = server.request("GET", f"/v1/sessions/{session_id}/turns")
    snapshot_id = next(t["snapshot_id"] for t in listed["turns"] if t["turn"] == turn)
    status, _, trace = server.request("GET", f"/v1/snapshots/{snapshot_id}/trace")
    assert status == 200, trace
    return trace


async def test_compare_two_turns_shows_the_message_that_differs(page: Any, server: Server) -> None:
    first, _, other = await asyncio.to_thread(seed, server)
    await page.goto(f"/ui/compare?sa={SESSION}&ta=1&sb={OTHER}&tb=1")
    diff = page.locator('[data-testid="window-diff"]')
    await expect(diff).to_be_visible()

    # The query is the last message of both windows: a "changed" line, the old word struck, the new one marked.
    changed = diff.locator("li.wd-row[data-kind=changed]")
    changed = changed.filter(has_text=FIRST)  # (the knowledge excerpts, retrieved for each query, differ too)
    await expect(changed).to_have_count(1)
    await expect(changed.locator(".wd-cell").nth(0)).to_contain_text(FIRST)
    await expect(changed.locator(".wd-cell").nth(1)).to_contain_text(OTHER_FIRST)
    await expect(changed.locator("del")).to_have_text(["late"])
    await expect(changed.locator("ins")).to_have_text(["early"])
    await expect(diff.locator("li.wd-row[data-kind=added], li.wd-row[data-kind=removed]")).to_have_count(0)
    await expect(page.locator('[data-testid="window-diff-summary"]')).to_contain_text("0 only in")

    # Tokens per module before and after, and the totals the turns recorded.
    total = page.locator('#cmp-modules [data-testid="comparison"] tr', has_text="Total used").locator("td")
    await expect(total.nth(0)).to_have_text(f"{first['snapshot']['total_used']:,}")
    await expect(total.nth(1)).to_have_text(f"{other['snapshot']['total_used']:,}")
    assert page.js_errors == []


async def test_compare_turns_picked_on_the_page(page: Any, server: Server) -> None:
    await asyncio.to_thread(seed, server)
    await page.goto(f"/ui/sessions/{OTHER}/turns/1")
    await page.click("#compare-page-link")
    await expect(page.locator('[data-testid="window-diff"]')).to_be_visible()
    await page.select_option("#pick-sa", SESSION)
    await expect(page.locator("#pick-ta option")).to_have_count(2)
    await page.select_option("#pick-ta", "1")
    await page.select_option("#pick-sb", SESSION)
    await expect(page.locator("#pick-tb option")).to_have_count(2)
    await page.select_option("#pick-tb", "2")
    await page.click("#compare-pick button[type=submit]")
    await expect(page).to_have_url(f"{server.url}/ui/compare?sa={SESSION}&ta=1&sb={SESSION}&tb=2")
    await expect(page.locator(".wd-heads")).to_have_text("Turn 1Turn 2")

    # Against difflib's alignment of the two traces' messages (by role and text): as many lines the same, and every
    # other message of each window on a line of its own kind. Turn 1's question is history in turn 2: the same.
    a, b = trace_of(server, SESSION, 1), trace_of(server, SESSION, 2)
    keys = [[(m["role"], m["content"]) for m in t["messages"]] for t in (a, b)]
    same = sum(block.size for block in difflib.SequenceMatcher(None, *keys, autojunk=False).get_matching_blocks())
    rows = page.locator("li.wd-row")
    kinds = await rows.evaluate_all("(rows) => rows.map((r) => r.dataset.kind)")
    assert kinds.count("same") == same
    assert kinds.count("changed") + kinds.count("added") == len(keys[1]) - same
    assert kinds.count("changed") + kinds.count("removed") == len(keys[0]) - same
    await expect(rows.filter(has_text=SECOND)).to_have_attribute("data-kind", "added")
    await expect(page.locator("li.wd-row[data-kind=same]", has_text=FIRST)).to_have_count(1)
    assert page.js_errors == []


WHAT_IF = "cmp-what-if"


def seed_what_if(server: Server) -> dict[str, Any]:
    if server.request("GET", f"/v1/sessions/{WHAT_IF}")[0] == 200:
        return server.request("GET", f"/v1/sessions/{WHAT_IF}/turns")[2]["turns"][0]
    status, _, body = server.request(
        "POST", "/v1/sessions", {"id": WHAT_IF, "profile_id": "demo-rag", "title": "Compare what-if"}
    )
    assert status == 201, body
    status, _, turn = server.request("POST", f"/v1/sessions/{WHAT_IF}/turns", {"query": FIRST})
    assert status == 201, turn
    return turn


async def test_what_if_lists_the_messages_it_would_send_beside_the_recorded_turn(page: Any, server: Server) -> None:
    turn = await asyncio.to_thread(seed_what_if, server)
    await page.goto("/ui/types/knowledge_heavy")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await page.select_option("#preview-session", WHAT_IF)
    await page.fill("#preview-query", SECOND)
    await page.click("#preview-form button")
    section = page.locator(".what-if-messages")
    await expect(section.locator("h3")).to_have_text(f"Messages it would send, beside turn {turn['turn']}'s")

    # What the preview API says it would send (the same question, asked directly), message by message.
    body = {"session_id": WHAT_IF, "query": SECOND, "type_id": "knowledge_heavy"}
    status, _, preview = server.request("POST", "/v1/context-window-types/preview", body)
    assert status == 200, preview
    sent = preview["messages"]
    assert sent[-1] == {"role": "user", "content": SECOND}
    rows = section.locator("li.wd-row")
    right = section.locator("li.wd-row .wd-cell:nth-child(2):not(.wd-empty)")
    await expect(right).to_have_count(len(sent))
    for cell, message, who in zip(await right.all(), sent, preview["attribution"], strict=True):
        await expect(cell.locator("strong").first).to_have_text(message["role"])
        await expect(cell.locator(".tokens-badge")).to_have_text(f"{who['tokens']:,} tokens")
    await expect(rows.last.locator(".wd-cell").nth(1)).to_contain_text(SECOND)
    # Beside the recorded turn's own: its question was the last message it sent, now history.
    await expect(rows.filter(has_text=FIRST).first.locator(".wd-cell").nth(0)).to_contain_text(FIRST)
    await expect(section).to_contain_text("Turn 1 (as sent)")
    assert page.js_errors == []


async def test_compare_and_what_if_do_not_scroll_sideways_on_tablets_or_phones(browser: Any, server: Server) -> None:
    from tests.browser.test_layout_round2 import sized_page

    await asyncio.to_thread(seed, server)
    await asyncio.to_thread(seed_what_if, server)
    page = await sized_page(browser, server, 768, 1024)
    widths = {}
    for width in (768, 390):
        await page.set_viewport_size({"width": width, "height": 1024})
        await page.goto(f"/ui/compare?sa={SESSION}&ta=1&sb={OTHER}&tb=1")
        await expect(page.locator("li.wd-row").first).to_be_visible()
        widths[width, "compare"] = await page.evaluate("document.documentElement.scrollWidth") - width
        await page.goto("/ui/types/knowledge_heavy")
        await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
        await page.select_option("#preview-session", WHAT_IF)
        await page.click("#preview-form button")
        await expect(page.locator(".what-if-messages li.wd-row").first).to_be_visible()
        widths[width, "what-if"] = await page.evaluate("document.documentElement.scrollWidth") - width
    assert widths == dict.fromkeys(widths, 0), widths
    # On a phone the two sides stack, each message saying which turn it belongs to.
    await expect(page.locator(".what-if-messages .wd-side").first).to_be_visible()
    await page.context.close()


async def test_any_two_versions_compare_after_a_rule_removal(page: Any, server: Server) -> None:
    from tests.browser.test_round2 import RULES, make_type, open_editor, put

    v1 = await asyncio.to_thread(make_type, server, "cmp-versions", RULES)
    v2 = await asyncio.to_thread(put, server, v1, name="Renamed")
    await asyncio.to_thread(put, server, v2, dynamic_adjustments=[RULES[0], RULES[2]])  # v3 removes rule 2
    await open_editor(page, "cmp-versions")
    await page.select_option("#compare-from", "1")
    await page.select_option("#compare-to", "3")
    await page.click("#compare-form button[type=submit]")
    lines = page.locator("#version-diff li")
    removed = "Rule 2 removed: reduce Documents by 40% from turn 12."
    await expect(lines).to_have_text([removed, "Name changed from “Round two cmp-versions” to “Renamed”."])
    await page.select_option("#compare-from", "2")
    await page.click("#compare-form button[type=submit]")
    await expect(lines).to_have_text([removed])
    assert page.js_errors == []


async def test_compare_page_has_no_serious_axe_violations(page: Any, server: Server) -> None:
    from tests.browser.test_axe import small_targets, violations

    await asyncio.to_thread(seed, server)
    await page.goto(f"/ui/compare?sa={SESSION}&ta=1&sb={SESSION}&tb=2")
    await expect(page.locator("li.wd-row").first).to_be_visible()
    assert await violations(page) + await small_targets(page) == []

    # A turn against itself: every message the same, folded into one line that opens.
    sent = trace_of(server, SESSION, 2)["messages"]
    await page.goto(f"/ui/compare?sa={SESSION}&ta=2&sb={SESSION}&tb=2")
    await expect(page.locator('[data-testid="window-diff-summary"]')).to_have_text(
        f"All {len(sent)} messages are the same."
    )
    fold = page.locator(".wd-fold summary")
    await expect(fold).to_have_text(f"{len(sent)} identical messages ({sum(m['tokens'] for m in sent):,} tokens)")
    await fold.click()
    await expect(page.locator(".wd-fold li.wd-row").first).to_be_visible()
    assert await violations(page) + await small_targets(page) == []
    assert page.js_errors == []
