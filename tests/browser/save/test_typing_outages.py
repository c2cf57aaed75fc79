"""Typing through connection outages, and leaving a page with an edit not sent yet.

The browser reaches the app through a real TCP proxy (``proxy.TcpProxy``) that the test cuts and
restores: the page's stream, edits in flight and idle connections all drop, and new connections are
refused. Fields stay editable and focused meanwhile, edits wait in the page and are sent in order
when the stream is live again; only Save and the row buttons wait for the connection. An edit still
inside its debounce window when the page goes away is sent with a keepalive request.
"""

from __future__ import annotations

import string
import time
import typing as t
from urllib.parse import parse_qs

import kubernetes.client
import pytest
from playwright.sync_api import Locator, Page, Request, expect

from tests.browser.conftest import dirty, entry, new_configmap, type_over, value_field, wait_live
from tests.browser.proxy import TcpProxy
from tests.browser.save.conftest import SignedIn
from tests.browser.save.test_outcomes import data_of, open_editor, outcome, save

pytestmark = pytest.mark.browser

KEY_EVERY: t.Final = 0.1
"""Seconds between two keys."""
OUTAGE_KEYS: t.Final = 30
"""Keys typed during each outage: 3 seconds at one key per 100 ms."""
RECONNECTING: t.Final = "Reconnecting. Your unsaved changes are still here."

WATCH_FIELD: t.Final = """field => {
    window.krmWatch = {field, blurs: 0, caretOff: 0, disabledSeen: 0};
    field.addEventListener("blur", () => window.krmWatch.blurs++);
    field.addEventListener("input", () => {
        const end = field.value.length;
        if (field.selectionStart !== end || field.selectionEnd !== end) window.krmWatch.caretOff++;
        if (field.matches(":disabled")) window.krmWatch.disabledSeen++;
    });
}"""
"""Counts, from now on, every blur of ``field``, every key after which the caret was not at the end of
the text, and every key typed while the field was disabled."""

WATCHED: t.Final = """() => {
    const w = window.krmWatch, field = w.field;
    return {blurs: w.blurs, caretOff: w.caretOff, disabledSeen: w.disabledSeen,
            focused: document.activeElement === field, connected: field.isConnected,
            caret: [field.selectionStart, field.selectionEnd], length: field.value.length};
}"""


def status(page: Page) -> str:
    return page.locator(".krm-connection").first.inner_text()


def save_button(page: Page) -> Locator:
    return page.get_by_role("button", name="Save", exact=True)


def test_keys_typed_through_two_outages_are_all_kept_and_saved(
    through_proxy: Page,
    proxy: TcpProxy,
    core: kubernetes.client.CoreV1Api,
) -> None:
    name = new_configmap(core, "outage", {"a": "start-", "b": "other"})
    page = through_proxy
    page.goto(f"/configmaps/{name}")
    wait_live(page)
    field = value_field(page, "a")
    field.click()
    page.keyboard.press("End")
    field.evaluate(WATCH_FIELD)

    keys = (string.ascii_lowercase + string.digits) * 5
    typed = ""
    outages = 0
    cut_at: int | None = None
    tick = time.monotonic()
    for index, key in enumerate(keys):
        if cut_at is None and outages < 2 and index >= 10 + outages * 60 and status(page) == "Live":
            proxy.cut()
            cut_at = index
        page.keyboard.press(key)
        typed += key
        if cut_at is not None and index == cut_at + OUTAGE_KEYS // 2:
            # Mid-outage: the page says so, the field is still editable, Save waits for the connection.
            assert status(page) == RECONNECTING
            expect(field).to_be_editable()
            expect(save_button(page)).to_be_disabled()
            expect(entry(page, "b").get_by_role("button", name="Remove b")).to_be_disabled()
            assert field.get_attribute("data-krm-unsent") == ""
        if cut_at is not None and index == cut_at + OUTAGE_KEYS:
            proxy.restore()
            cut_at = None
            outages += 1
        tick += KEY_EVERY
        time.sleep(max(0.0, tick - time.monotonic()))
        if outages == 2 and index >= 10 and status(page) == "Live" and len(typed) >= 150:
            break
    assert outages == 2, f"only {outages} outages happened while typing {len(typed)} keys"
    assert proxy.refused > 0, "no connection was refused: the stream never tried to reconnect during an outage"

    wait_live(page)
    expect(field).to_have_value("start-" + typed)
    expect(field).not_to_have_attribute("data-krm-unsent", "")
    expect(field).not_to_have_attribute("data-krm-queued", "")
    expect(dirty(page, "a")).to_be_visible()
    assert page.evaluate(WATCHED) == {
        "blurs": 0,
        "caretOff": 0,
        "disabledSeen": 0,
        "focused": True,
        "connected": True,
        "caret": [len("start-" + typed)] * 2,
        "length": len("start-" + typed),
    }

    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")
    assert data_of(core, name) == {"a": "start-" + typed, "b": "other"}


def test_edits_of_several_fields_during_an_outage_are_sent_when_live_again(
    through_proxy: Page,
    proxy: TcpProxy,
    core: kubernetes.client.CoreV1Api,
) -> None:
    name = new_configmap(core, "queued", {"a": "one", "b": "one", "c": "one"})
    page = through_proxy
    page.goto(f"/configmaps/{name}")
    wait_live(page)
    proxy.cut()
    expect(page.locator(".krm-connection").first).to_have_text(RECONNECTING)
    type_over(value_field(page, "b"), "b offline")
    expect(value_field(page, "b")).to_have_attribute("data-krm-queued", "")  # the queue: b
    type_over(value_field(page, "a"), "a offline")
    expect(value_field(page, "a")).to_have_attribute("data-krm-queued", "")  # b, a
    type_over(value_field(page, "b"), "b offline, twice")  # a, b: a field's latest edit goes last
    expect(value_field(page, "a")).to_have_attribute("data-krm-queued", "")
    expect(value_field(page, "b")).to_have_attribute("data-krm-queued", "")
    expect(save_button(page)).to_be_disabled()
    for key in ("a", "b"):  # every debounced request made (and queued) before the connection returns
        expect(value_field(page, key)).not_to_have_attribute("data-krm-pending", "")
    sent: list[str] = []

    def record(request: Request) -> None:
        if request.method == "POST" and request.url.endswith("/edit"):
            sent.extend(parse_qs(request.post_data or "").get("value", []))

    page.on("request", record)
    proxy.restore()

    wait_live(page)
    # in the order of each field's latest edit (b, a, then b again), each field once
    expect(value_field(page, "b")).not_to_have_attribute("data-krm-unsent", "")
    assert sent == ["a offline", "b offline, twice"]
    for key, text in (("a", "a offline"), ("b", "b offline, twice")):
        expect(value_field(page, key)).not_to_have_attribute("data-krm-queued", "")
        expect(value_field(page, key)).not_to_have_attribute("data-krm-unsent", "")
        expect(dirty(page, key)).to_be_visible()
        expect(value_field(page, key)).to_have_value(text)
    expect(value_field(page, "b")).to_be_focused()
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")
    assert data_of(core, name) == {"a": "a offline", "b": "b offline, twice", "c": "one"}


def test_a_reload_inside_the_debounce_window_keeps_what_was_typed(
    signed_in: SignedIn,
    core: kubernetes.client.CoreV1Api,
) -> None:
    name = new_configmap(core, "reload", {"a": "one", "b": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    field = value_field(page, "a")
    type_over(field, "typed then reloaded")
    # the debounced edit has not been made yet when the page goes away
    expect(field).to_have_attribute("data-krm-pending", "")
    page.reload()

    wait_live(page)
    field = value_field(page, "a")
    expect(field).to_have_value("typed then reloaded")
    expect(dirty(page, "a")).to_be_visible()
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")
    assert data_of(core, name) == {"a": "typed then reloaded", "b": "one"}


def test_row_actions_wait_for_the_connection(
    through_proxy: Page,
    proxy: TcpProxy,
    core: kubernetes.client.CoreV1Api,
) -> None:
    name = new_configmap(core, "rows", {"a": "one"})
    page = through_proxy
    page.goto("/configmaps")
    wait_live(page)
    delete = page.get_by_role("button", name=f"Delete {name}", exact=True)
    expect(delete).to_be_enabled()
    proxy.cut()
    expect(page.locator(".krm-connection").first).to_have_text(RECONNECTING)
    expect(delete).to_be_disabled()
    proxy.restore()
    wait_live(page)
    expect(delete).to_be_enabled()
