"""What users of Langfuse and LangSmith expect of a trace tool, in a real browser: sessions and turns filtered on
the server with the filters in the address; per turn the model call's tokens, cache, cost and step times; the
request copied as JSON, cURL and OpenAI SDK code that, run for real, sends the same request again; the messages
grouped by module (collapsible) with a token bar each. axe-core and a tablet's width on the pages changed."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server, signed_in_page
from tests.browser.test_axe import small_targets, violations

pytestmark = BROWSER_LOOP

SESSION = "copy-me"
SENT = {
    "model": "tda",
    "messages": [
        {"role": "system", "content": "You are a terse logistics analyst. Quote order numbers like 'ORD-1'."},
        {"role": "user", "content": "Which orders were late?"},
        {"role": "assistant", "content": "ORD-1043 and ORD-1077, two days each."},
        {"role": "user", "content": 'Why was ORD-1077 late? It\'s "urgent" — reply in one line.\nThanks.'},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "lookup_order",
                "description": "Look up one order by its number.",
                "parameters": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]},
            },
        }
    ],
    "tool_choice": "auto",
    "temperature": 0.3,
    "seed": 11,
    "max_tokens": 120,
}


def chat_turn(server: Server) -> tuple[int, int]:
    """A chat client's call recorded in SESSION: its turn and snapshot."""
    status, headers, body = server.request("POST", "/v1/chat/completions", SENT, {"X-TDA-Session": SESSION})
    assert status == 200, body
    return int(headers["X-TDA-Turn"]), int(headers["X-TDA-Snapshot"])


def newest_snapshot(server: Server) -> dict[str, Any]:
    status, _, body = server.request("GET", f"/v1/sessions/{SESSION}/snapshots?newest_first=true&limit=1")
    assert status == 200, body
    return body["snapshots"][0]


def traced_request(server: Server, snapshot_id: int) -> dict[str, Any]:
    status, _, body = server.request("GET", f"/v1/snapshots/{snapshot_id}/trace")
    assert status == 200, body
    return body["request"]


async def copied(page: Any, kind: str) -> str:
    await page.locator(f'[data-copy="{kind}"]').click()
    await expect(page.locator("#copy-status")).to_contain_text("Copied")
    text = await page.evaluate("navigator.clipboard.readText()")
    assert text == await page.locator("#copy-text").text_content()
    return text


async def trace_page(browser: Any, server: Server, turn: int) -> Any:
    page = await signed_in_page(browser, server, server.admin_token)
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    await page.goto(f"/ui/sessions/{SESSION}/turns/{turn}")
    await expect(page.locator("#messages > li.message").first).to_be_visible()
    return page


def turn_record(server: Server, turn: int) -> dict[str, Any]:
    return next(t for t in turns_of(server, SESSION) if t["turn"] == turn)


async def test_the_copied_request_sent_for_real_is_the_same_request(browser: Any, server: Server) -> None:
    """Run for real, each copy is the same request, recorded as a new turn: the turn it was copied from keeps its
    record (tokens, window, snapshot), and the page says so next to the copy buttons."""
    turn, snapshot = await asyncio.to_thread(chat_turn, server)
    original = await asyncio.to_thread(traced_request, server, snapshot)
    recorded = await asyncio.to_thread(turn_record, server, turn)
    page = await trace_page(browser, server, turn)
    env = {**os.environ, "TDA_TOKEN": server.admin_token}
    warning = page.get_by_test_id("copy-warning")
    await expect(warning).to_contain_text("records a new turn")
    await expect(warning).to_contain_text("X-TDA-New-Turn: true")

    body = json.loads(await copied(page, "json"))
    assert body == SENT  # exactly what the client sent: the oracle is the test's own request

    curl = await copied(page, "curl")
    assert server.admin_token not in curl and "$TDA_TOKEN" in curl
    assert shutil.which("curl"), "the test runs the copied command with the real curl"
    run = await asyncio.to_thread(
        subprocess.run, ["bash", "-c", curl], env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["object"] == "chat.completion", run.stdout
    again = await asyncio.to_thread(newest_snapshot, server)
    assert again["id"] > snapshot and again["turn"] > turn  # sent again: a turn of its own
    assert await asyncio.to_thread(traced_request, server, again["id"]) == original
    assert await asyncio.to_thread(turn_record, server, turn) == recorded  # the original turn is as it was

    python = await copied(page, "python")
    assert server.admin_token not in python and "from openai import OpenAI" in python
    run = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", python], env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr  # the real openai SDK sent it
    third = await asyncio.to_thread(newest_snapshot, server)
    assert third["id"] > again["id"] and third["turn"] > again["turn"]
    assert await asyncio.to_thread(traced_request, server, third["id"]) == original
    assert await asyncio.to_thread(turn_record, server, turn) == recorded
    assert page.js_errors == []
    await page.context.close()


def native_turn(server: Server) -> dict[str, Any]:
    if server.request("GET", "/v1/sessions/tools-native")[0] != 200:
        body = {"id": "tools-native", "profile_id": "demo-tools", "title": "Native"}
        assert server.request("POST", "/v1/sessions", body)[0] == 201
    status, _, turn = server.request("POST", "/v1/sessions/tools-native/turns", {"query": "Where did returns rise?"})
    assert status == 201, turn
    return turn


async def test_the_model_call_groups_and_token_bars(page: Any, server: Server) -> None:
    import litellm

    turn = await asyncio.to_thread(native_turn, server)
    await page.goto(f"/ui/sessions/tools-native/turns/{turn['turn']}")
    await expect(page.locator("#messages > li.message").first).to_be_visible()
    call = turn["model_call"]
    facts = page.locator("#call-facts")
    await expect(facts.locator('[data-testid="tokens-in"]')).to_contain_text(f"{call['prompt_tokens']:,}")
    await expect(facts.locator('[data-testid="tokens-out"]')).to_contain_text(f"{call['completion_tokens']:,}")
    await expect(facts.locator('[data-testid="cached"]')).to_contain_text(f"{call['cache_read_tokens']:,} read")
    # The cost from litellm's price list, computed here from the raw prices (not by tda's code).
    price = litellm.model_cost[turn["model"]]
    usd = (
        call["prompt_tokens"] * price["input_cost_per_token"]
        + call["completion_tokens"] * price["output_cost_per_token"]
    )
    shown = await facts.locator('[data-testid="cost"]').text_content()
    assert abs(float(re.match(r"\$([\d.e-]+)", shown).group(1)) - usd) <= usd * 0.01, (shown, usd)
    # Step times: the stored ones, in order, adding up to the total shown.
    steps = page.locator(".latency-steps li")
    assert [await s.get_attribute("data-step") for s in await steps.all()] == ["load", "assemble", "snapshot", "model"]
    await expect(page.locator('[data-testid="latency-total"]')).to_contain_text("ms in all")

    # Each message's bar is its share of the window.
    total = turn["snapshot"]["total_used"]
    for item in (await page.locator("#messages > li.message").all())[:6]:
        tokens = int((await item.locator(".tokens-badge").text_content()).split()[0].replace(",", ""))
        width = await item.locator(".token-bar > span").evaluate("(el) => parseFloat(el.style.width)")
        assert abs(width - 100 * tokens / total) < 0.01

    # Groups: one heading per run of a module's messages; collapsing hides exactly its messages.
    groups = page.locator("#messages > li.message-group")
    first = groups.first
    module = await first.get_attribute("data-group")
    messages = page.locator("#messages > li.message:visible")
    before = await messages.count()
    members = len((await first.locator("button").get_attribute("aria-controls")).split())
    await first.get_by_role("button").click()
    await expect(first.get_by_role("button")).to_have_attribute("aria-expanded", "false")
    await expect(messages).to_have_count(before - members)
    await expect(page.locator(f'#messages > li.message[data-module="{module}"]:visible')).to_have_count(0)
    await first.get_by_role("button").click()
    await expect(messages).to_have_count(before)
    await page.locator("#collapse-all").click()
    await expect(messages).to_have_count(0)
    await expect(groups.first).to_be_visible()  # the headings stay: the order of the modules is still shown
    await page.locator("#expand-all").click()
    await expect(messages).to_have_count(before)
    assert page.js_errors == []


def turns_of(server: Server, session: str) -> list[dict[str, Any]]:
    return server.request("GET", f"/v1/sessions/{session}/turns")[2]["turns"]


async def test_a_native_turns_request_copied_and_run_asks_the_same_query(browser: Any, server: Server) -> None:
    turn = await asyncio.to_thread(native_turn, server)
    page = await signed_in_page(browser, server, server.admin_token)
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    await page.goto(f"/ui/sessions/tools-native/turns/{turn['turn']}")
    await expect(page.locator("#messages > li.message").first).to_be_visible()
    env = {**os.environ, "TDA_TOKEN": server.admin_token}
    for kind, command in (("curl", ["bash", "-c"]), ("python", [sys.executable, "-c"])):
        before = await asyncio.to_thread(turns_of, server, "tools-native")
        code = await copied(page, kind)
        run = await asyncio.to_thread(
            subprocess.run, [*command, code], env=env, capture_output=True, text=True, timeout=60
        )
        assert run.returncode == 0, run.stderr
        after = await asyncio.to_thread(turns_of, server, "tools-native")
        assert len(after) == len(before) + 1 and after[-1]["query"] == "Where did returns rise?", kind
    assert page.js_errors == []
    await page.context.close()


def unpriced_turn(server: Server) -> int:
    """A turn on a model litellm can route but has no price for (a house model behind an OpenAI-style API)."""
    if server.request("GET", "/v1/sessions/unpriced")[0] != 200:
        profile = {"id": "house-model", "type": "llm_only", "system_prompt": "Be brief.", "model": "openai/house-7b"}
        status, _, body = server.request("POST", "/v1/profiles", profile)
        assert status == 201, body
        assert server.request("POST", "/v1/sessions", {"id": "unpriced", "profile_id": "house-model"})[0] == 201
    status, _, turn = server.request("POST", "/v1/sessions/unpriced/turns", {"query": "Hello?"})
    assert status == 201, turn
    assert turn["model_call"]["cost"] is None
    return turn["turn"]


async def test_an_unpriced_model_says_price_unknown_never_zero(page: Any, server: Server) -> None:
    turn = await asyncio.to_thread(unpriced_turn, server)
    await page.goto(f"/ui/sessions/unpriced/turns/{turn}")
    cost = page.locator('#call-facts [data-testid="cost"]')
    await expect(cost).to_contain_text("price unknown")
    assert "$" not in await cost.text_content()
    assert page.js_errors == []


def filter_seed(server: Server) -> None:
    if server.request("GET", "/v1/sessions/find-a")[0] == 200:
        return
    for session, profile, query in (
        ("find-a", "demo-tools", "Which pallets went to Rotterdam?"),
        ("find-b", "demo-tools", "Summarise the refunds."),
        ("find-c", "demo-chat", "A Rotterdam customer asks about refunds."),
    ):
        body = {"id": session, "profile_id": profile, "title": f"Find {session[-1]}"}
        assert server.request("POST", "/v1/sessions", body)[0] == 201
        status, _, turn = server.request("POST", f"/v1/sessions/{session}/turns", {"query": query})
        assert status == 201, turn


async def rows(page: Any) -> set[str]:
    return {
        await r.get_attribute("data-session") for r in await page.locator("#session-table tbody tr[data-session]").all()
    }


async def test_filters_narrow_the_list_and_survive_a_reload(page: Any, server: Server) -> None:
    await asyncio.to_thread(filter_seed, server)
    await page.goto("/ui/sessions")
    await expect(page.locator('#session-table tr[data-session="find-a"]')).to_be_visible()
    assert {"find-a", "find-b", "find-c"} <= await rows(page)

    await page.fill("#f-q", "rotterdam")
    await page.get_by_role("button", name="Filter", exact=True).click()
    await expect(page.locator("#filter-summary")).to_contain_text("matching turn")
    assert await rows(page) == {"find-a", "find-c"}
    await page.select_option("#f-profile", "demo-tools")
    await page.get_by_role("button", name="Filter", exact=True).click()
    await expect(page.locator("#session-table tbody tr[data-session]")).to_have_count(1)
    assert await rows(page) == {"find-a"}
    assert "q=rotterdam" in page.url and "profile_id=demo-tools" in page.url
    # The matching turn links to its trace.
    link = page.locator('tr[data-session="find-a"] [data-testid="matching-turns"] a')
    await expect(link).to_have_attribute("href", "/ui/sessions/find-a/turns/1")

    await page.reload()
    await expect(page.locator("#f-q")).to_have_value("rotterdam")
    await expect(page.locator("#f-profile")).to_have_value("demo-tools")
    await expect(page.locator("#session-table tbody tr[data-session]")).to_have_count(1)
    assert await rows(page) == {"find-a"}
    # Back goes to the unfiltered list's filters one step before.
    await page.go_back()
    await expect(page.locator("#f-profile")).to_have_value("")
    await expect(page.locator("#session-table tbody tr[data-session]")).to_have_count(2)
    assert await rows(page) == {"find-a", "find-c"}

    # A shared address with dates the wrong way round says what to change.
    await page.goto("/ui/sessions?since=2026-11-25&until=2026-11-20")
    await expect(page.locator("#filter-error")).to_contain_text("since must come before until")
    await page.goto("/ui/sessions?outcome=tool_calls&q=rotterdam")
    await expect(page.locator("#session-table tbody")).to_contain_text("No session matches these filters.")
    await page.locator("#f-clear").click()
    await expect(page.locator('#session-table tr[data-session="find-b"]')).to_be_visible()
    assert page.url.endswith("/ui/sessions")
    assert page.js_errors == []


@pytest.mark.parametrize("role", ["admin", "viewer"])
async def test_axe_and_a_tablets_width_on_the_changed_pages(browser: Any, server: Server, role: str) -> None:
    await asyncio.to_thread(filter_seed, server)
    turn = await asyncio.to_thread(native_turn, server)
    page = await signed_in_page(browser, server, server.admin_token if role == "admin" else server.viewer_token)
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    found, widths = {}, {}
    for width in (1360, 768, 390):
        await page.set_viewport_size({"width": width, "height": 1000})
        await page.goto("/ui/sessions?q=rotterdam&outcome=success")
        await expect(page.locator('[data-testid="matching-turns"]').first).to_be_visible()
        found["sessions", width] = await violations(page) + await small_targets(page)
        widths["sessions", width] = await page.evaluate("document.documentElement.scrollWidth") - width
        await page.goto(f"/ui/sessions/tools-native/turns/{turn['turn']}")
        await expect(page.locator("#messages > li.message").first).to_be_visible()
        await page.locator('[data-copy="python"]').click()  # the copied text shown
        await expect(page.locator("#copy-text")).to_be_visible()
        await page.locator("#messages > li.message-group button").first.click()  # a group collapsed
        found["trace", width] = await violations(page) + await small_targets(page)
        widths["trace", width] = await page.evaluate("document.documentElement.scrollWidth") - width
    assert found == {key: [] for key in found}, found
    assert widths == dict.fromkeys(widths, 0), widths
    assert page.js_errors == []
    await page.context.close()
