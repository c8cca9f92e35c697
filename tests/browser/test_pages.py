"""Every page renders from the API without a script error; the screenshots in docs/ come from here.

Set TDA_SCREENSHOTS_DIR=docs to refresh docs/*.png; otherwise they go to a temporary folder.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server

pytestmark = BROWSER_LOOP

SESSION = "screenshots"
CONTRAST = (Path(__file__).parent / "contrast.js").read_text()
FILLER = (
    "The weekly report compares shipped orders, returns and refunds by region, and explains each change "
    "against the previous week with the queries that produced the figures. "
)


def seed_busy_session(server: Server) -> None:
    """A session with a small window and a long history, so the panel shows condensation and full bars; its own
    profile and type, changed halfway, so the timeline shows a new type version."""
    shots = server.balanced_copy(id="shots", name="Returns review")
    # Champion cases recorded by later turns are served to replays too (the case store keeps no time), so a
    # turn with RAG cases does not replay identically; this session leaves them out to show a reproducible trace.
    shots["modules"]["rag_context"]["active"] = False
    shots["condensation_order"] = [m for m in shots["condensation_order"] if m != "rag_context"]
    assert server.request("POST", "/v1/context-window-types", shots)[0] == 201
    _, _, tools = server.request("GET", "/v1/profiles/demo-tools")
    profile = {k: tools[k] for k in ("type", "system_prompt", "tools", "knowledge_collections")}
    status, _, body = server.request(
        "POST", "/v1/profiles", {**profile, "id": "shots", "name": "Returns analyst", "context_window_type_id": "shots"}
    )
    assert status == 201, body
    status, _, body = server.request(
        "POST",
        "/v1/sessions",
        {"id": SESSION, "profile_id": "shots", "title": "Quarterly returns review", "context_limit": 6144},
    )
    assert status == 201, body
    messages = []
    for turn in range(1, 13):
        messages += [
            {"role": "user", "turn": turn, "content": f"Question {turn}: " + FILLER * 2},
            {"role": "assistant", "turn": turn, "content": f"Answer {turn}: " + FILLER * 4},
        ]
    status, _, body = server.request("POST", f"/v1/sessions/{SESSION}/messages", {"messages": messages})
    assert status == 201, body
    queries = [
        "Which regions drove the rise in returns?",
        "How do refunds compare with last quarter?",
        "Which carriers are involved?",
        "List the five products returned most.",
        "What did the north region change in March?",
        "Draft the summary for the regional managers.",
    ]
    for i, query in enumerate(queries):
        if i == 3:  # the type changes halfway: a larger reply reserve
            _, _, current = server.request("GET", "/v1/context-window-types/shots")
            changed = {k: v for k, v in current.items() if k not in {"version", "updated_at", "etag"}}
            changed["output_reserve_pct"] = 20
            assert (
                server.request("PUT", "/v1/context-window-types/shots", changed, {"If-Match": current["etag"]})[0]
                == 200
            )
        status, _, body = server.request("POST", f"/v1/sessions/{SESSION}/turns", {"query": query})
        assert status == 201, body


async def shoot(page: Any, folder: Path, name: str, element: Any = None) -> None:
    """Check the page (no script errors, WCAG AA text contrast) and take its picture."""
    assert page.js_errors == [], f"{name}: {page.js_errors}"
    assert await page.evaluate(CONTRAST) == [], f"{name}: text below WCAG AA contrast"
    if element is not None:
        await element.screenshot(path=folder / f"{name}.png")
        return
    height = await page.evaluate("document.documentElement.scrollHeight")
    await page.set_viewport_size({"width": 1360, "height": min(max(height, 600), 4000)})  # no sticky-bar artefacts
    await page.screenshot(path=folder / f"{name}.png")
    await page.set_viewport_size({"width": 1360, "height": 900})


async def test_every_page_renders(page: Any, server: Server, tmp_path: Path) -> None:
    folder = Path(os.environ.get("TDA_SCREENSHOTS_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    seed_busy_session(server)

    await page.goto("/ui/types")
    await expect(page.locator(".card")).to_have_count(
        len(server.request("GET", "/v1/context-window-types")[2]["types"])
    )
    await shoot(page, folder, "ui-types")

    await page.goto("/ui/types/balanced")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await page.set_viewport_size({"width": 1360, "height": 1500})
    await page.screenshot(path=folder / "ui-type-editor.png")
    await page.set_viewport_size({"width": 1360, "height": 900})
    # The sticky bar is kept out of the pictures through the CSSOM: the pages' policy refuses an injected <style>.
    await page.evaluate("document.querySelectorAll('.savebar').forEach((bar) => { bar.style.position = 'static'; })")
    await page.evaluate("window.scrollTo(0, 0)")  # so the boxes' viewport coordinates are page coordinates
    top = await page.locator("#order-h").locator("..").bounding_box()
    bottom = await page.locator("#rules-h").locator("..").bounding_box()
    assert page.js_errors == [] and await page.evaluate(CONTRAST) == []
    await page.screenshot(
        path=folder / "ui-type-editor-order-rules.png",
        full_page=True,
        clip={"x": top["x"], "y": top["y"], "width": top["width"], "height": bottom["y"] + bottom["height"] - top["y"]},
    )
    await page.select_option("#preview-session", SESSION)
    await page.click("#preview-form button")
    await expect(page.locator('[data-testid="preview-summary"]')).to_contain_text("tokens")
    await shoot(page, folder, "ui-what-if-preview", page.locator("#preview-h").locator(".."))

    await page.goto("/ui/modules")
    await expect(page.locator('#module-table tr[data-module="system_prompt"]')).to_contain_text("required")
    await shoot(page, folder, "ui-modules")

    await page.goto("/ui/profiles")
    await expect(page.locator("#profile-table tbody tr")).to_have_count(
        len(server.request("GET", "/v1/profiles")[2]["profiles"])
    )
    await shoot(page, folder, "ui-profiles")

    await page.goto(f"/ui/sessions/{SESSION}")
    await expect(page.locator("#live")).to_have_text("Live")
    await expect(page.locator("#fact-turn")).to_contain_text("18 (")
    await expect(page.locator(".module-card").first).to_be_visible()
    await expect(page.locator("#analytics")).to_contain_text("Condensations")
    await expect(page.locator("#timeline a.turn-column")).to_have_count(6)
    await expect(page.locator("#timeline .mark-version")).to_have_count(1)
    await shoot(page, folder, "ui-context-panel")
    await shoot(page, folder, "ui-timeline", page.locator("#timeline-h").locator(".."))

    await page.goto(f"/ui/sessions/{SESSION}/turns/18")
    await expect(page.locator("#trace-status")).to_contain_text("identical")
    await expect(page.locator("#messages > li").last).to_have_attribute("data-module", "query")
    await expect(page.locator("a[rel=prev]")).to_have_attribute("href", f"/ui/sessions/{SESSION}/turns/17")
    await expect(page.locator("a[rel=next]")).to_have_count(0)  # the latest turn
    await page.click("#compare-previous")
    snapshots = server.request("GET", f"/v1/sessions/{SESSION}/snapshots")[2]["snapshots"]
    totals = {s["turn"]: s["snapshot"]["total_used"] for s in snapshots}
    total = page.locator('[data-testid="comparison"] tr', has_text="Total used")
    await expect(total.locator("td").first).to_have_text(f"{totals[17]:,}")
    await expect(total.locator("td").nth(1)).to_have_text(f"{totals[18]:,}")
    await shoot(page, folder, "ui-trace")

    await page.goto("/ui/sessions")
    await expect(page.locator(f'#session-table tr[data-session="{SESSION}"]')).to_be_visible()
    await shoot(page, folder, "ui-sessions")
    await page.goto("/ui/audit")
    await expect(page.locator("#audit-table tbody tr").first).to_contain_text("Output reserve changed from 12% to 20%")
    await shoot(page, folder, "ui-audit")

    # An experiment over the session's turns: less history and the reserve the type started with.
    _, _, current = server.request("GET", "/v1/context-window-types/shots")
    candidate = {k: v for k, v in current.items() if k not in {"version", "updated_at", "etag"}}
    candidate["modules"]["conversation_history"]["target_pct"] = 12
    candidate["output_reserve_pct"] = 12
    spec = {"name": "Less history", "candidate": {"type": candidate}, "slice": {"type_id": "shots"}}
    status, _, created = server.request("POST", "/v1/experiments", spec)
    assert status == 201, created
    await page.goto(f"/ui/experiments/{created['id']}")
    await expect(page.locator("#progress-text")).to_contain_text("Done")
    await expect(page.locator("#turns-table tbody tr")).to_have_count(created["total"])
    await shoot(page, folder, "ui-experiment")

    # A phone: the panel at 390 px, menu closed.
    await page.set_viewport_size({"width": 390, "height": 844})
    await page.goto(f"/ui/sessions/{SESSION}")
    await expect(page.locator("#timeline a.turn-column")).to_have_count(6)
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.js_errors == [] and await page.evaluate(CONTRAST) == []
    await page.screenshot(path=folder / "ui-phone.png")
    await page.set_viewport_size({"width": 1360, "height": 900})


VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`);
});
"""


async def test_the_content_security_policy_lets_every_page_work(page: Any, server: Server) -> None:
    """Each page under its Content-Security-Policy: nothing it loads or runs is refused, and the API docs (Swagger
    UI, started by an inline script the policy allows by its hash) still render."""
    await page.add_init_script(VIOLATIONS)
    for path, ready in (
        ("/ui/types", ".card"),
        ("/ui/types/balanced", "#editor[aria-busy=false]"),
        ("/ui/modules", "#module-table tr[data-module]"),
        ("/ui/profiles", "#profile-table tbody tr"),
        ("/ui/sessions", "#session-table"),
        ("/ui/audit", "#audit-table"),
        ("/docs", ".opblock"),
    ):
        response = await page.goto(path)
        assert "script-src 'self'" in response.headers["content-security-policy"], path
        # Swagger UI builds its page from the whole OpenAPI document: past 5 s on a busy 2-core machine
        await expect(page.locator(ready).first).to_be_visible(timeout=30_000)
        assert await page.evaluate("window.__violations") == [], path
    assert page.js_errors == []
    signed_out = await page.context.browser.new_page()
    await signed_out.add_init_script(VIOLATIONS)
    await signed_out.goto(f"{server.url}/ui/sign-in")
    await expect(signed_out.locator("form")).to_be_visible()
    assert await signed_out.evaluate("window.__violations") == []
    await signed_out.close()
