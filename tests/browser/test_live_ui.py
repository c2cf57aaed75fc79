"""The live UI in a real browser: lists, merges and conflicts while typing, drafts across reloads
and tabs, escaping, and Secret values that never leave the server."""

from __future__ import annotations

import base64
import json
import os
import re
import typing as t

import kubernetes.client
import pytest
from playwright.sync_api import BrowserContext, Dialog, Locator, Page, Response, expect

from tests.browser.conftest import (
    MERGE_PATCH,
    Server,
    create_configmap,
    dirty,
    entry,
    goto_live,
    new_configmap,
    patch_data,
    row,
    type_over,
    unique,
    value_field,
    wait_live,
)
from tests.browser.host_app import NAMESPACE

pytestmark = pytest.mark.browser

XSS_SCRIPT = "<script>window.pwned = 1</script>"
XSS_ATTR = '"><img src=x onerror="window.pwned = 2">'


def marker_of(page: Page, field: Locator) -> Locator:
    """The field's dirty marker (in the field wrapper, ``<id>-field``)."""
    return page.locator(f"#{field.get_attribute('id')}-field > .krm-dirty-marker")


def caret(field: Locator) -> list[int]:
    return [int(n) for n in field.evaluate("el => [el.selectionStart, el.selectionEnd]")]


def is_focused(field: Locator) -> bool:
    return bool(field.evaluate("el => document.activeElement === el"))


def test_a_list_follows_the_cluster(page: Page, core: kubernetes.client.CoreV1Api) -> None:
    first, second = unique("list-a"), unique("list-b")
    create_configmap(core, first, {"greeting": "hi"})
    goto_live(page, "/configmaps")
    first_row = row(page, first)
    expect(first_row).to_contain_text("hi")
    create_configmap(core, second, {"greeting": "hello"})
    expect(row(page, second)).to_contain_text("hello")
    patch_data(core, first, {"greeting": "changed upstream"})
    expect(first_row).to_contain_text("changed upstream")
    core.delete_namespaced_config_map(first, NAMESPACE)
    expect(first_row).to_have_count(0)


def test_typing_while_the_cluster_changes_merges_then_conflicts_and_resolves(
    page: Page, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "merge", {"a": "one", "b": "one"})
    goto_live(page, f"/configmaps/{name}")
    a, b = value_field(page, "a"), value_field(page, "b")
    type_over(a, "mine")
    expect(dirty(page, "a")).to_be_visible()

    patch_data(core, name, {"b": "theirs-b"})
    expect(b).to_have_value("theirs-b")
    expect(a).to_have_value("mine")
    assert is_focused(a) and caret(a) == [4, 4]

    patch_data(core, name, {"a": "theirs-a"})
    conflict = entry(page, "a").locator(".krm-conflict")
    expect(conflict).to_contain_text("theirs-a")
    expect(page.locator(".krm-announce")).to_contain_text("1 field was changed by someone else")
    expect(a).to_have_value("mine")
    assert is_focused(a) and caret(a) == [4, 4]

    conflict.get_by_role("button", name="Keep mine").click()
    expect(conflict).to_have_count(0)
    expect(a).to_have_value("mine")
    expect(dirty(page, "a")).to_be_visible()

    patch_data(core, name, {"a": "theirs-again"})
    expect(conflict).to_contain_text("theirs-again")
    conflict.get_by_role("button", name="Take theirs").click()
    expect(a).to_have_value("theirs-again")
    expect(conflict).to_have_count(0)
    expect(dirty(page, "a")).to_have_count(0)


def test_the_focused_field_keeps_its_text_and_caret_while_live_updates_arrive(
    page: Page, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "caret", {"a": "start", "b": "start"})
    goto_live(page, f"/configmaps/{name}")
    a, b = value_field(page, "a"), value_field(page, "b")
    type_over(a, "typing here")
    expect(dirty(page, "a")).to_be_visible()
    a.evaluate("el => el.setSelectionRange(3, 6)")
    patch_data(core, name, {"b": "moved", "a": "server-side"})
    expect(b).to_have_value("moved")
    expect(entry(page, "a").locator(".krm-conflict")).to_contain_text("server-side")
    expect(a).to_have_value("typing here")
    assert is_focused(a)
    assert caret(a) == [3, 6]
    a.press("End")
    a.press_sequentially("!")
    expect(a).to_have_value("typing here!")


def test_a_reload_keeps_the_draft(page: Page, core: kubernetes.client.CoreV1Api) -> None:
    name = new_configmap(core, "reload", {"a": "saved"})
    goto_live(page, f"/configmaps/{name}")
    type_over(value_field(page, "a"), "draft value")
    expect(dirty(page, "a")).to_be_visible()
    page.reload()
    wait_live(page)
    expect(value_field(page, "a")).to_have_value("draft value")
    expect(dirty(page, "a")).to_be_visible()


def test_a_second_tab_shows_the_same_draft(context: BrowserContext, core: kubernetes.client.CoreV1Api) -> None:
    name = unique("tabs")
    create_configmap(core, name, {"a": "saved"})
    first, second = context.new_page(), context.new_page()
    for tab in (first, second):
        tab.goto(f"/configmaps/{name}")
        wait_live(tab)
    type_over(value_field(first, "a"), "from the first tab")
    expect(value_field(second, "a")).to_have_value("from the first tab")
    expect(dirty(second, "a")).to_be_visible()


def test_hostile_values_are_shown_as_text_and_run_nothing(page: Page, core: kubernetes.client.CoreV1Api) -> None:
    name = unique("xss")
    create_configmap(
        core, name, {"greeting": XSS_SCRIPT, "attr": XSS_ATTR}, labels={"app": "x"}, annotations={"note": XSS_ATTR}
    )
    dialogs: list[str] = []

    def dismiss(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    goto_live(page, f"/configmaps/{name}")
    expect(value_field(page, "greeting")).to_have_value(XSS_SCRIPT)
    expect(value_field(page, "attr")).to_have_value(XSS_ATTR)
    expect(value_field(page, "note")).to_have_value(XSS_ATTR)
    patch_data(core, name, {"attr": XSS_ATTR + " again"})
    expect(value_field(page, "attr")).to_have_value(XSS_ATTR + " again")
    goto_live(page, "/configmaps")
    expect(row(page, name)).to_contain_text(XSS_SCRIPT)
    assert page.evaluate("window.pwned") is None
    assert page.locator("img").count() == 0
    assert dialogs == []


def test_secret_values_are_never_sent_to_the_browser(
    page: Page, core: kubernetes.client.CoreV1Api, server: Server
) -> None:
    name = unique("secret")
    token, rotated = f"s3cr3t-{name}", f"r0tated-{name}"
    secret: dict[str, t.Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "labels": {"team": "a"}},
        "type": "Opaque",
        "stringData": {"token": token},
        "data": {"password": base64.b64encode(b"hunter2-" + name.encode()).decode()},
    }
    core.create_namespaced_secret(NAMESPACE, t.cast(t.Any, secret))
    bodies: list[bytes] = []

    def keep(response: Response) -> None:
        if "text/event-stream" not in (response.headers.get("content-type") or ""):
            bodies.append(response.body())

    page.on("response", keep)
    goto_live(page, f"/secrets/{name}")
    masked = page.locator(".krm-masked")
    expect(masked).to_have_count(2)
    expect(masked.first).to_contain_text("revision 1")
    type_over(value_field(page, "team"), "b")
    expect(dirty(page, "team")).to_be_visible()
    core.patch_namespaced_secret(name, NAMESPACE, {"stringData": {"token": rotated}}, _content_type=MERGE_PATCH)
    expect(page.locator(".krm-entry", has_text="token").locator(".krm-revision")).to_have_text("(revision 2)")
    page.reload()
    wait_live(page)
    expect(masked).to_have_count(2)

    secrets = [token, rotated, f"hunter2-{name}"]
    encoded = [base64.b64encode(s.encode()).decode() for s in secrets]
    traffic = server.traffic_bytes()
    assert f"/secrets/{name}".encode() in traffic, "the traffic log did not record this test's pages"
    assert b"(revision 2)" in traffic, "the traffic log did not record the stream"
    for needle in secrets + encoded:
        assert needle.encode() not in traffic, f"{needle!r} was sent to the browser"
        assert not any(needle.encode() in body for body in bodies)
    page_text = page.content()
    assert not any(needle in page_text for needle in secrets + encoded)
    assert re.search(r"hidden value", page_text)


def test_copies_of_a_secret_in_annotations_are_shown_as_withheld(
    page: Page, core: kubernetes.client.CoreV1Api, server: Server
) -> None:
    name = unique("applied")
    token, copied = f"t0ken-{name}", f"c0pied-{name}"

    def kapp_copy(value: str) -> str:
        return json.dumps(
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {"token": value}}
        )

    secret: dict[str, t.Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "stringData": {"token": token},
        "metadata": {"name": name, "annotations": {"kapp.k14s.io/original": kapp_copy(token), "owner": "payments"}},
    }
    core.create_namespaced_secret(NAMESPACE, t.cast(t.Any, secret))
    goto_live(page, f"/secrets/{name}")
    copy_entry = page.locator(".krm-entry", has_text="kapp.k14s.io/original")
    expect(copy_entry.locator(".krm-masked")).to_contain_text("revision 1")
    expect(value_field(page, "owner")).to_have_value("payments")
    annotations = {"kapp.k14s.io/original": kapp_copy(copied)}
    core.patch_namespaced_secret(name, NAMESPACE, {"metadata": {"annotations": annotations}}, _content_type=MERGE_PATCH)
    expect(copy_entry.locator(".krm-revision")).to_have_text("(revision 2)")
    if os.environ.get("KRM_SCREENSHOTS"):
        page.screenshot(path=os.path.join(os.environ["KRM_SCREENSHOTS"], "secret-annotation-copy.png"), full_page=True)
    traffic = server.traffic_bytes()
    assert b"kapp.k14s.io/original" in traffic and b"(revision 2)" in traffic
    for needle in (
        token,
        copied,
        base64.b64encode(token.encode()).decode(),
        base64.b64encode(copied.encode()).decode(),
    ):
        assert needle.encode() not in traffic, f"{needle!r} was sent to the browser"
        assert needle not in page.content()


def test_an_editor_action_waits_for_the_edit_still_being_typed(page: Page, core: kubernetes.client.CoreV1Api) -> None:
    name = new_configmap(core, "flush", {"a": "before"})
    goto_live(page, f"/configmaps/{name}")
    type_over(value_field(page, "a"), "typed just now")
    page.get_by_role("button", name="Show draft").click()
    expect(page.locator(".krm-outcome")).to_have_text('{"a": "typed just now"}')


def test_keys_are_added_renamed_and_removed_in_the_page(page: Page, core: kubernetes.client.CoreV1Api) -> None:
    name = new_configmap(core, "keys", {"a": "1", "b": "2"})
    goto_live(page, f"/configmaps/{name}")
    page.get_by_label("New key in Data", exact=True).fill("c")
    page.get_by_label("Value of the new key in Data", exact=True).fill("three")
    page.get_by_role("button", name="Add a key to Data").click()
    expect(value_field(page, "c")).to_have_value("three")
    expect(page.get_by_label("New key in Data", exact=True)).to_have_value("")
    key_a = entry(page, "a").get_by_label("Key of a", exact=True)
    key_a.fill("alpha")
    key_a.press("Tab")
    expect(value_field(page, "alpha")).to_have_value("1")
    expect(value_field(page, "a")).to_have_count(0)
    page.get_by_role("button", name="Remove b", exact=True).click()
    expect(value_field(page, "b")).to_have_count(0)
    new_key = page.get_by_label("New key in Data", exact=True)
    new_key.fill("c")
    page.get_by_role("button", name="Add a key to Data").click()
    data_map = (new_key.get_attribute("id") or "").removesuffix("-new-key")
    expect(page.locator(f"#{data_map}-error")).to_have_text("A key named c already exists.")


def test_a_value_the_field_cannot_hold_is_refused_at_the_field(page: Page) -> None:
    goto_live(page, "/deployments/web")
    web = page.locator('fieldset.krm-item[data-krm-path="/spec/template/spec/containers/[name=web]"]')
    port = web.get_by_label("Container port of the new item of ports")
    port.fill("8080")
    web.get_by_role("button", name="Add an item to ports").click()
    expect(web.locator(".krm-error").filter(has_text="An item with these keys is already in the list.")).to_be_visible()
    port.fill("9090")
    web.get_by_role("button", name="Add an item to ports").click()
    expect(web.locator(".krm-item-name", has_text="9090/TCP")).to_be_visible()
    expect(web.locator(".krm-error").filter(has_text="already in the list")).to_have_count(0)
    expect(web.locator(".krm-dirty-marker").first).to_be_visible()
    replicas = page.get_by_label("Replicas", exact=True)
    type_over(replicas, "5")
    expect(marker_of(page, replicas)).to_be_visible()


def set_hidden(page: Page, hidden: bool) -> None:
    """Tell the page it went to the background (or came back): its stream pauses and reconnects."""
    page.evaluate(
        """hidden => {
            Object.defineProperty(document, "hidden", {value: hidden, configurable: true});
            Object.defineProperty(
                document, "visibilityState", {value: hidden ? "hidden" : "visible", configurable: true});
            document.dispatchEvent(new Event("visibilitychange"));
        }""",
        hidden,
    )


def test_the_connection_state_is_shown_and_a_terminal_close_stops_reconnecting(
    context: BrowserContext, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "state", {"a": "1"})
    page = context.new_page()
    goto_live(page, f"/configmaps/{name}")
    status, remove = page.locator(".krm-connection"), page.get_by_role("button", name="Remove a")
    set_hidden(page, True)
    context.set_offline(True)
    set_hidden(page, False)
    expect(status).to_have_text("Reconnecting. Your unsaved changes are still here.")
    # announced once for the page, in its one live region; the component's indicator is only shown
    announced = page.get_by_role("status").filter(has_text="Reconnecting")
    expect(announced).to_have_count(1)
    expect(announced).to_have_attribute("id", "krm-page-status")
    expect(remove).to_be_disabled()
    expect(value_field(page, "a")).to_be_editable()
    context.set_offline(False)
    wait_live(page)
    expect(page.locator("#krm-page-status")).to_have_text("Live")

    other = context.new_page()
    other.goto("/logout")
    set_hidden(page, True)
    set_hidden(page, False)
    expect(status).to_have_text("You are signed out: sign in again, then reload the page.")
    expect(page.locator("#krm-page-status")).to_have_text("You are signed out: sign in again, then reload the page.")
    expect(page.locator("[data-krm-component]")).to_have_attribute("data-krm-connection", "terminal")
    expect(remove).to_be_disabled()
    assert page.evaluate("document.getElementById('krm-channel')._htmx?.sse === undefined")
