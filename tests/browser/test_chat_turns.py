"""A session driven by a chat client (POST /v1/chat/completions), in a real browser: each call's snapshot carries
the turn the session recorded it as, so the panel's "Latest turn", its live updates and the traces it links to
name the right turn (they said turn 1 for every call)."""

from __future__ import annotations

import asyncio
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server

pytestmark = BROWSER_LOOP

SESSION = "chat-turns"
SYSTEM = {"role": "system", "content": "Answer in one short line."}
QUESTIONS = ["Which depot ships to Lyon?", "And to Marseille?", "Which of the two is faster?", "Thanks. Any delays?"]


def chat(server: Server, messages: list[dict[str, Any]]) -> tuple[int, str]:
    """One client call in SESSION: the turn the session recorded (its response header) and the reply."""
    body = {"model": "tda", "messages": messages}
    status, headers, reply = server.request("POST", "/v1/chat/completions", body, {"X-TDA-Session": SESSION})
    assert status == 200, reply
    return int(headers["X-TDA-Turn"]), reply["choices"][0]["message"]["content"]


def converse(server: Server, questions: list[str], messages: list[dict[str, Any]]) -> list[int]:
    """The client's way: each call resends the whole conversation, with the replies it got."""
    turns = []
    for question in questions:
        messages.append({"role": "user", "content": question})
        turn, answer = chat(server, messages)
        messages.append({"role": "assistant", "content": answer})
        turns.append(turn)
    return turns


def snapshot_turns(server: Server) -> list[int]:
    status, _, body = server.request("GET", f"/v1/sessions/{SESSION}/snapshots")
    assert status == 200, body
    return [row["snapshot"]["turn"] for row in body["snapshots"]]


async def test_a_chat_clients_turns_are_numbered_in_the_panel_and_its_snapshots(page: Any, server: Server) -> None:
    messages: list[dict[str, Any]] = [SYSTEM]
    turns = await asyncio.to_thread(converse, server, QUESTIONS[:3], messages)
    assert turns == [1, 2, 3]
    assert await asyncio.to_thread(snapshot_turns, server) == [1, 2, 3]

    await page.goto(f"/ui/sessions/{SESSION}")
    latest = page.locator("#fact-turn")
    await expect(latest).to_contain_text("3 (")
    await expect(latest.get_by_role("link")).to_have_attribute("href", f"/ui/sessions/{SESSION}/turns/3")
    await expect(page.locator("#cmp-b option:checked")).to_have_text("Turn 3")

    # A call while the panel is open arrives live (SSE) with its own number.
    assert await asyncio.to_thread(converse, server, QUESTIONS[3:], messages) == [4]
    await expect(latest).to_contain_text("4 (")
    await latest.get_by_role("link").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("Turn 4 trace")
    await expect(page.locator("#trace-status")).to_contain_text("identical to the recorded window")
    assert page.js_errors == []
