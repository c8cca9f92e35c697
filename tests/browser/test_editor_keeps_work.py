"""The type editor never loses work: unsaved-change guards, Enter never saves, Ctrl+S does, checks at the fields,
and it tells the truth about modules (switched off for all types, cannot condense, rules that do nothing)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server

pytestmark = BROWSER_LOOP


async def open_editor(page: Any, type_id: str) -> None:
    await page.goto(f"/ui/types/{type_id}")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")


def version(server: Server, type_id: str) -> int:
    return server.request("GET", f"/v1/context-window-types/{type_id}")[2]["version"]


async def test_enter_never_saves_and_ctrl_s_does(page: Any, server: Server) -> None:
    await open_editor(page, "token_efficient")
    before = version(server, "token_efficient")
    await page.fill("#f-description", "Lean windows for small models")
    await page.press("#f-description", "Enter")
    await page.press("#f-name", "Enter")
    await page.wait_for_timeout(300)  # a save would have answered by now
    assert version(server, "token_efficient") == before
    await expect(page.locator("#dirty")).to_have_text("Unsaved changes")

    await page.keyboard.press("Control+s")
    await expect(page.locator("#toast")).to_contain_text(f"as version {before + 1}")
    assert version(server, "token_efficient") == before + 1
    await expect(page.locator("#dirty")).to_have_text("All changes saved")
    assert page.js_errors == []


async def test_unsaved_changes_are_guarded(page: Any, server: Server) -> None:
    await open_editor(page, "balanced")
    dialogs: list[str] = []
    saved = version(server, "balanced")

    # Untouched: links just go.
    await page.get_by_role("link", name="Back to types").click()
    await expect(page).to_have_url(f"{server.url}/ui/types")
    await open_editor(page, "balanced")

    await page.fill("#f-name", "Balanced, half edited")

    async def answer(dialog: Any, accept: bool) -> None:
        dialogs.append(dialog.type)
        await (dialog.accept() if accept else dialog.dismiss())

    page.once("dialog", lambda dialog: answer(dialog, accept=False))
    await page.get_by_role("link", name="Modules", exact=True).click()
    await expect(page).to_have_url(f"{server.url}/ui/types/balanced")  # stayed, the edit is still there
    await expect(page.locator("#f-name")).to_have_value("Balanced, half edited")
    assert dialogs == ["confirm"]

    # Reloading (or closing) asks the browser's own question.
    page.once("dialog", lambda dialog: answer(dialog, accept=True))
    await page.reload()
    assert dialogs == ["confirm", "beforeunload"]
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await expect(page.locator("#f-name")).to_have_value("Balanced")  # the edit was dropped only after saying yes
    assert version(server, "balanced") == saved


async def test_targets_in_tokens_for_a_reference_limit(page: Any, server: Server) -> None:
    _, _, saved = server.request("GET", "/v1/context-window-types/knowledge_heavy")
    await open_editor(page, "knowledge_heavy")
    await page.select_option("#ref-limit", "32768")
    for module_id, slot in saved["modules"].items():
        room = 32768 * (100 - saved["output_reserve_pct"]) / 100
        expected = math.floor(room * slot["target_pct"] / 100)
        await expect(page.locator(f'[data-tokens-for="{module_id}"]')).to_have_text(f"≈ {expected:,} tokens")
    # Small non-zero shares never read 0%.
    assert await page.evaluate(
        "import('/static/ui/lib.js').then((m) => [m.pct(24 / 11262), m.pct(0), m.pct(0.5)])"
    ) == [
        "<1%",
        "0%",
        "50%",
    ]


async def test_one_truth_about_modules(page: Any, server: Server) -> None:
    await open_editor(page, "balanced")
    # The required system prompt cannot condense: it is never offered for the condensation order.
    rest = page.locator("#order-rest")
    await expect(rest.get_by_role("button", name="Add System prompt to the condensation order")).to_have_count(0)
    await expect(page.locator('[data-testid="not-condensable"]')).to_contain_text("System prompt")

    # A rule aimed at a module switched off in the type says it has no effect.
    rule = page.locator('[data-rule="0"]')
    target = await page.locator('[data-loc="dynamic_adjustments.0.action.module"]').input_value()
    await expect(rule.locator('[data-testid="rule-idle"]')).to_be_hidden()
    label = await page.locator(f'[data-module="{target}"] .module-name').first.text_content()
    await page.locator(f"#active-{target}").uncheck()
    await expect(rule.locator('[data-testid="rule-idle"]')).to_contain_text(f"{label} is not active in this type")
    await page.locator(f"#active-{target}").check()
    await expect(rule.locator('[data-testid="rule-idle"]')).to_be_hidden()

    # Switched off for every type on the Modules page: the editor says so and the bar leaves it out.
    status, _, _ = server.request("POST", "/v1/context-window/modules/workflow_history/deactivate")
    assert status == 200
    try:
        await page.goto("/ui/types/balanced")
        await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
        row = page.locator('#module-rows tr[data-module="workflow_history"]')
        await expect(row.locator('[data-testid="globally-off"]')).to_have_text("switched off for all types")
        await expect(page.locator('#composition .seg[data-key="workflow_history"]')).to_have_count(0)
    finally:
        server.request("POST", "/v1/context-window/modules/workflow_history/activate")


@pytest.mark.parametrize("width", [1360, 390])
async def test_focus_is_never_hidden_under_the_sticky_bars(page: Any, width: int) -> None:
    await page.set_viewport_size({"width": width, "height": 844})
    await open_editor(page, "balanced")
    await page.locator("#f-id").focus()
    hidden = []
    for _ in range(140):
        await page.keyboard.press("Tab")
        box = await page.evaluate(
            """() => {
              const el = document.activeElement;
              if (!el || el === document.body || !document.getElementById('editor').contains(el)) return null;
              const r = el.getBoundingClientRect();
              const bar = document.querySelector('.savebar').getBoundingClientRect();
              const comp = document.getElementById('composition').getBoundingClientRect();
              const underSave = r.bottom > bar.top && !el.closest('.savebar');
              const underComp = getComputedStyle(document.getElementById('composition')).position === 'sticky'
                && comp.top <= 1 && r.top < comp.bottom && !el.closest('#composition');
              return (underSave || underComp) ? (el.id || el.getAttribute('aria-label')) : '';
            }"""
        )
        if box:
            hidden.append(box)
    assert hidden == []
