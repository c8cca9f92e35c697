"""When tda cannot answer, in a real browser: with the server down, Save and Sign in say so (they showed nothing,
an uncaught "Failed to fetch"); a proxy's HTML error page (nginx in front, as the shipped compose file has it) is
described, never shown raw in the error summary."""

from __future__ import annotations

import asyncio
from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, WAIT_MS, Server, signed_in_page

pytestmark = BROWSER_LOOP

TYPE = "token_efficient"
NGINX_502 = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n"
    "<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n"
)


async def edited_type(page: Any, description: str) -> None:
    await page.goto(f"/ui/types/{TYPE}")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await page.fill("#f-description", description)
    await expect(page.locator("#dirty")).to_have_text("Unsaved changes")


async def sign_in_page(browser: Any, server: Server) -> Any:
    context = await browser.new_context(base_url=server.url)
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors
    await page.goto("/ui/sign-in")
    await page.fill("#token", server.admin_token)
    return page


def version(server: Server) -> int:
    return server.request("GET", f"/v1/context-window-types/{TYPE}")[2]["version"]


async def test_with_the_server_down_save_and_sign_in_say_so(browser: Any, server: Server) -> None:
    editor = await signed_in_page(browser, server, server.admin_token)
    await edited_type(editor, "Edited while the server is away")
    signing_in = await sign_in_page(browser, server)
    saved = await asyncio.to_thread(version, server)
    await asyncio.to_thread(server.stop)
    try:
        await editor.locator("#save").click()
        summary = editor.locator("#error-summary")
        await expect(summary).to_be_visible()
        await expect(summary).to_contain_text("Could not reach the tda server")
        await expect(editor.locator("#dirty")).to_have_text("Unsaved changes")  # the edit is still there to save
        await expect(editor.locator("#f-description")).to_have_value("Edited while the server is away")

        await signing_in.get_by_role("button", name="Sign in").click()
        await expect(signing_in.locator("#token-error")).to_contain_text("Could not reach the tda server")
        await expect(signing_in).to_have_url(f"{server.url}/ui/sign-in")
    finally:
        await asyncio.to_thread(server.start)

    # Back up: the same Save goes through, and so does signing in.
    await editor.locator("#save").click()
    await expect(editor.locator("#toast")).to_contain_text(f"as version {saved + 1}")
    await signing_in.get_by_role("button", name="Sign in").click()
    await expect(signing_in).to_have_url(f"{server.url}/ui/types")
    assert editor.js_errors == [] and signing_in.js_errors == []
    await editor.context.close()
    await signing_in.context.close()


async def test_a_proxys_error_page_is_described_not_shown_raw(browser: Any, server: Server) -> None:
    async def bad_gateway(route: Any) -> None:
        await route.fulfill(status=502, content_type="text/html", body=NGINX_502)

    editor = await signed_in_page(browser, server, server.admin_token)
    await edited_type(editor, "Edited behind a proxy whose upstream is away")
    await editor.route(f"**/v1/context-window-types/{TYPE}", bad_gateway)
    await editor.locator("#save").click()
    summary = editor.locator("#error-summary")
    await expect(summary).to_contain_text("answered 502")
    await expect(summary).to_contain_text("a page that is not tda's")
    assert "<" not in await summary.text_content(), "the proxy's HTML is shown raw"

    signing_in = await sign_in_page(browser, server)
    await signing_in.route("**/v1/auth/session", bad_gateway)
    await signing_in.get_by_role("button", name="Sign in").click()
    error = signing_in.locator("#token-error")
    await expect(error).to_contain_text("answered 502")
    await expect(error).to_contain_text("a page that is not tda's")
    assert "<" not in await error.text_content()
    assert editor.js_errors == [] and signing_in.js_errors == []
    await editor.context.close()
    await signing_in.context.close()
