"""Wrong or raw text (issue 26, item 9): replay verdicts and differences in words, the what-if not called a turn,
the "in context" checkbox labelled for what it is, an over-long id told so, condense strategies a choice, and
targets over 100% never saved without a word."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server
from tests.browser.test_round2 import make_type, open_editor

pytestmark = BROWSER_LOOP

SESSION = "words"
RAW_PATH = re.compile(r"\b[a-z]+_?[a-z]*\.[a-z_]+\b|\[\d+\]")
RAW_FRACTION = re.compile(r"\b0\.\d{2,}\b")


def seed(server: Server) -> list[dict[str, Any]]:
    status, _, body = server.request(
        "POST", "/v1/sessions", {"id": SESSION, "profile_id": "demo-tools", "title": "Words"}
    )
    assert status == 201, body
    turns = []
    for query in ("Where did returns rise?", "Why?", "And the week before?"):
        status, _, turn = server.request("POST", f"/v1/sessions/{SESSION}/turns", {"query": query})
        assert status == 201, turn
        turns.append(turn)
    return turns


async def test_replay_verdicts_and_differences_in_words(page: Any, server: Server) -> None:
    turns = await asyncio.to_thread(seed, server)
    last = turns[-1]["turn"]
    await page.goto(f"/ui/sessions/{SESSION}/turns/{last}")
    await page.click("#replay")
    verdict = page.locator('[data-testid="replay-verdict"]')
    await expect(verdict).to_contain_text("Identical")
    assert "null" not in await page.locator("#replay-result").inner_text()

    # Leave the first turn out: the replay now differs, and says how in words.
    status, _, out = await asyncio.to_thread(
        server.request, "PATCH", f"/v1/sessions/{SESSION}/turns/{turns[0]['turn']}", {"valid": False}
    )
    assert status == 200, out
    await page.click("#replay")
    await expect(verdict).to_contain_text("Different")
    text = await page.locator("#replay-result").inner_text()
    assert "null" not in text
    assert not RAW_PATH.search(text), text
    assert not RAW_FRACTION.search(text), text
    for line in await page.locator("#replay-result li").all_inner_texts():
        was, now = re.match(r".* was (.*), now (.*)\.$", line).groups()
        assert was != now, line  # a difference never reads as the same value twice
    assert page.js_errors == []


async def test_what_if_is_not_called_a_turn(page: Any, server: Server) -> None:
    if server.request("GET", f"/v1/sessions/{SESSION}")[0] != 200:
        await asyncio.to_thread(seed, server)
    await open_editor(page, "balanced")
    await page.select_option("#preview-session", SESSION)
    await page.click("#preview-form button")
    summary = page.locator('#preview [data-testid="usage-summary"]')
    await expect(summary).to_contain_text("What-if")
    assert not re.match(r"\s*Turn \d+", await summary.inner_text())


async def test_in_context_checkbox_says_what_it_is(page: Any, server: Server) -> None:
    if server.request("GET", f"/v1/sessions/{SESSION}")[0] != 200:
        await asyncio.to_thread(seed, server)
    await page.goto(f"/ui/sessions/{SESSION}")
    box = page.get_by_role("checkbox", name="Turn 2 in context")
    await expect(box).to_be_checked()
    await box.uncheck()
    await expect(page.locator("#toast")).to_contain_text("left out of the context")
    await expect(page.get_by_role("checkbox", name="Turn 2 in context")).not_to_be_checked()
    await expect(page.locator("#turns")).not_to_contain_text("yes")


async def test_an_over_long_id_gets_a_length_message(page: Any) -> None:
    await page.goto("/ui/types/new")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await page.fill("#f-id", "a" * 135)
    await expect(page.locator("#f-id-error")).to_have_text("The id is at most 64 characters; this one has 135.")


def make_legacy_type(server: Server, type_id: str, rule: dict[str, Any], strategy: str) -> None:
    """A type stored before strategies were checked on save: saved with a good one, then rewritten in the database
    (a new updated_at, so the running service reads it afresh)."""
    make_type(server, type_id, [rule])
    with contextlib.closing(sqlite3.connect(Path(server.env["TDA_DATA_DIR"]) / "tda.db")) as db, db:
        for table, key in (("context_window_types", "id"), ("context_window_type_versions", "type_id")):
            db.execute(
                f"UPDATE {table} SET data = json_set(data, '$.dynamic_adjustments[0].action.strategy', ?) "
                f"WHERE {key} = ?",
                (strategy, type_id),
            )
        db.execute(
            "UPDATE context_window_types SET updated_at = datetime(updated_at, '+1 second') WHERE id = ?", (type_id,)
        )
    deadline = time.monotonic() + 5  # the service re-reads the current types at most every second
    while (stored := server.request("GET", f"/v1/context-window-types/{type_id}")[2])["dynamic_adjustments"][0][
        "action"
    ]["strategy"] != strategy:
        assert time.monotonic() < deadline, stored
        time.sleep(0.2)


async def test_condense_strategy_is_a_choice(page: Any, server: Server) -> None:
    rule = {
        "condition": {"type": "first_turn"},
        "action": {"type": "condense", "module": "conversation_history", "strategy": "summarize", "to_pct": 50},
    }
    await asyncio.to_thread(make_legacy_type, server, "r2-strategy", rule, "foo")
    await open_editor(page, "r2-strategy")
    strategy = page.locator("#r0-action-strategy")
    assert await strategy.evaluate("(el) => el.tagName") == "SELECT"
    await expect(page.locator("#r0-action-strategy-error")).to_contain_text("“foo” is not a strategy")
    await page.fill("#f-name", "Strategy fixed")
    await page.click("#save")
    await expect(page.locator("#error-summary")).to_contain_text("is not a strategy")
    await strategy.select_option("summarize")
    await page.click("#save")
    await expect(page.locator("#toast")).to_contain_text("Saved Strategy fixed as version 2")
    saved = server.request("GET", "/v1/context-window-types/r2-strategy")[2]
    assert saved["dynamic_adjustments"][0]["action"]["strategy"] == "summarize"


async def test_targets_over_100_percent_are_not_saved_without_a_word(page: Any, server: Server) -> None:
    created = await asyncio.to_thread(make_type, server, "r2-over")
    active = {k: s for k, s in created["modules"].items() if s["active"]}
    total = sum(s["target_pct"] for s in active.values())
    first = next(iter(active))
    await open_editor(page, "r2-over")
    label = page.locator(f'#module-rows tr[data-module="{first}"] .module-name')
    name = await label.inner_text()
    new_target = active[first]["target_pct"] + 183
    await page.fill(f"#in-{first}-max_pct", "100")
    await page.get_by_label(f"Target % for {name} (number)").fill(str(min(new_target, 100)))
    expected = round(total - active[first]["target_pct"] + min(new_target, 100))
    assert expected > 100
    await page.click("#save")
    # Refused (the service would answer 422 too), said at the modules and in the summary, nothing saved.
    message = f"The active modules' targets add up to {expected}%"
    await expect(page.locator("#error-summary")).to_contain_text(message)
    await expect(page.locator("#modules-error")).to_contain_text(message)
    stored = server.request("GET", "/v1/context-window-types/r2-over")[2]
    assert stored["version"] == created["version"]
    await page.get_by_label(f"Target % for {name} (number)").fill(str(active[first]["target_pct"]))
    await page.click("#save")
    await expect(page.locator("#toast")).to_contain_text("Saved Round two r2-over as version 2")
