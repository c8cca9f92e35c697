"""The type editor shows each module's options from its options model's schema; the server's 422 lands at the field."""

from __future__ import annotations

from typing import Any

from playwright.async_api import expect

from tests.browser.conftest import BROWSER_LOOP, Server

pytestmark = BROWSER_LOOP


async def test_module_options_are_edited_checked_by_the_server_and_saved(page: Any, server: Server) -> None:
    body = server.balanced_copy(id="options-ui", name="Options UI")
    status, _, created = server.request("POST", "/v1/context-window-types", body)
    assert status == 201, created
    await page.goto("/ui/types/options-ui")
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")

    options = page.locator('[data-testid="options-document_context"]')
    await options.locator("summary").click()
    per_file = page.locator("#opt-document_context-per_file_chars")
    await expect(per_file).to_have_attribute("placeholder", "20000")  # the model's default
    await per_file.fill("0")
    await page.click("#save")
    # In the page's words: the module's name and the option's label as the field shows them, not the API's ids.
    label = (await page.locator('label[for="opt-document_context-per_file_chars"]').text_content()).strip()
    said = f"Documents, option “{label}”: Input should be greater than or equal to 1"
    await expect(page.locator("#e-document_context")).to_contain_text(said)
    await expect(page.locator("#error-summary")).to_contain_text(said)
    await expect(page.locator("#error-summary")).not_to_contain_text("per_file_chars")
    await per_file.fill("5000")
    await page.locator("#opt-document_context-total_chars").fill("")  # empty: the default applies
    await page.click("#save")
    await expect(page.locator("#toast")).to_contain_text("Saved Options UI as version 2")
    status, _, saved = server.request("GET", "/v1/context-window-types/options-ui")
    assert saved["modules"]["document_context"]["config"] == {"per_file_chars": 5000}

    await page.reload()
    await expect(page.locator("#editor")).to_have_attribute("aria-busy", "false")
    await page.locator('[data-testid="options-document_context"] summary').click()
    await expect(page.locator("#opt-document_context-per_file_chars")).to_have_value("5000")
    intensity = page.locator("#opt-component_instructions-intensity")
    await page.locator('[data-testid="options-component_instructions"] summary').click()
    assert await intensity.locator("option").all_inner_texts() == ["default (full)", "full", "medium", "light"]
    assert page.js_errors == []
