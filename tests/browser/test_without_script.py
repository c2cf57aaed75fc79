"""With JavaScript off, the pages can still be read: a list's rows, its filter (a GET form) and an
editor's values are in the first render, whatever the page scripts do afterwards."""

from __future__ import annotations

import re
from collections.abc import Iterator

import kubernetes.client
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import Server, create_configmap, row, unique, value_field

pytestmark = pytest.mark.browser


@pytest.fixture
def no_script(browser: Browser, server: Server) -> Iterator[Page]:
    """A signed-in page of a browser profile with JavaScript disabled."""
    context = browser.new_context(base_url=server.url, java_script_enabled=False)
    page = context.new_page()
    page.goto("/login/editor")
    yield page
    context.close()


def test_lists_filters_and_editors_are_readable_without_javascript(
    no_script: Page, core: kubernetes.client.CoreV1Api
) -> None:
    page = no_script
    shown, other = unique("noscript-shown"), unique("noscript-other")
    create_configmap(core, shown, {"greeting": "read without script"})
    create_configmap(core, other, {"greeting": "filtered out"})
    page.goto("/configmaps")
    expect(row(page, shown)).to_contain_text("read without script")
    expect(row(page, other)).to_contain_text("filtered out")

    search = page.locator("form.krm-filter input[type=search]").first
    search.fill(shown)
    search.press("Enter")  # the filter is a GET form: the server renders the filtered list
    expect(page).to_have_url(re.compile(r"\?.*" + shown))
    expect(row(page, shown)).to_be_visible()
    expect(row(page, other)).to_have_count(0)

    row(page, shown).get_by_role("link", name=shown, exact=True).click()
    expect(page.get_by_role("heading", name=shown)).to_be_visible()
    expect(value_field(page, "greeting")).to_have_value("read without script")
    # the page scripts did not run: the writes stay as rendered, disabled until a script enables them
    expect(page.locator(".krm-writes").first).to_have_attribute("disabled", "")
