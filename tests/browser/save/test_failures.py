"""Every refused answer to an editor's request is shown at the editor, and nothing typed is lost.

A session that ended while its page was open (signed out, or someone else signed in on this
browser) is shown by the page's channel without a keystroke; an ended session, a CSRF token the
session no longer holds (a page without its token), an edit too large to send, an answer from something
in front of the server (a proxy's error page), a request that got no answer, Kubernetes refusing
a write or a create: each renders an outcome in the editor's outcome region (or the review list),
a refusal that ends the session also shows in the connection state, Kubernetes' own message is
shown, and the text typed stays in its field. An outcome goes away when the draft changes after it.

Set ``KRM_SCREENSHOTS`` to a folder to keep a screenshot of each outcome at desktop width and at
390 px.
"""

from __future__ import annotations

import html
import json
import os
import typing as t

import kubernetes.client
import pytest
from playwright.sync_api import Locator, Page, Route, expect

from tests.browser.conftest import create_configmap, dirty, new_configmap, type_over, value_field
from tests.browser.save.conftest import SignedIn, WriteCounter
from tests.browser.save.test_outcomes import data_of, edit, open_editor, outcome, save
from tests.browser.save.test_review import open_list, review, review_item, stage_create

pytestmark = pytest.mark.browser

CountWrites = t.Callable[[str], WriteCounter]

SIGNED_OUT: t.Final = "You are signed out: sign in again, then reload the page."
LIMIT: t.Final = 3 * 1024 * 1024
"""``KRM_MAX_REQUEST_BYTES`` by default."""


def connection(page: Page) -> Locator:
    return page.locator(".krm-editor .krm-connection")


def save_button(page: Page) -> Locator:
    return page.get_by_role("button", name="Save", exact=True)


def screenshots(page: Page, name: str) -> None:
    """Keeps the page at desktop width and at 390 px when ``KRM_SCREENSHOTS`` names a folder."""
    folder = os.environ.get("KRM_SCREENSHOTS")
    if not folder:
        return
    size = page.viewport_size
    page.screenshot(path=os.path.join(folder, f"{name}-desktop.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=os.path.join(folder, f"{name}-390.png"), full_page=True)
    if size:
        page.set_viewport_size(size)


def assert_session_ended(page: Page, field: Locator, typed: str, detail: str | None = None) -> None:
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "session-ended")
    if detail is not None:
        expect(outcome(page).locator(".krm-outcome-detail")).to_contain_text(detail)
    expect(connection(page)).to_have_text(outcome(page).locator(".krm-outcome-message").inner_text())
    expect(page.locator(".krm-editor")).to_have_attribute("data-krm-connection", "terminal")
    expect(save_button(page)).to_be_disabled()
    expect(field).to_have_value(typed)  # nothing typed is taken away
    expect(field).to_be_editable()


def assert_ended_without_a_keystroke(page: Page, message: str) -> None:
    """The open editor learns that its session ended from its channel, before anything is typed."""
    expect(connection(page)).to_have_text(message)
    expect(page.locator(".krm-editor")).to_have_attribute("data-krm-connection", "terminal")
    expect(save_button(page)).to_be_disabled()


def assert_typing_is_kept(page: Page, core: kubernetes.client.CoreV1Api, name: str, typed: str) -> None:
    field = value_field(page, "a")
    type_over(field, typed)
    expect(field).to_have_value(typed)  # nothing typed is taken away
    expect(field).to_be_editable()
    expect(save_button(page)).to_be_disabled()
    assert data_of(core, name) == {"a": "one"}


def test_signing_out_in_another_tab_is_shown_at_the_editor_and_as_the_connection(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "signed-out", {"a": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    page.context.new_page().goto("/logout")
    assert_ended_without_a_keystroke(page, SIGNED_OUT)
    assert_typing_is_kept(page, core, name, "typed after signing out")
    screenshots(page, "signed-out")


def test_someone_else_signing_in_on_this_browser_ends_the_page_session(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "other-user", {"a": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    page.context.new_page().goto("/login/admin")
    assert_ended_without_a_keystroke(page, SIGNED_OUT)
    assert_typing_is_kept(page, core, name, "typed as the first person")
    screenshots(page, "csrf-revoked")


def test_an_ended_session_is_shown_at_the_editor(signed_in: SignedIn, core: kubernetes.client.CoreV1Api) -> None:
    name = new_configmap(core, "ended", {"a": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    page.context.clear_cookies()  # the session cookie expired or was removed
    field = value_field(page, "a")
    type_over(field, "typed after the session ended")
    assert_session_ended(page, field, "typed after the session ended", "The CSRF session token is missing")
    screenshots(page, "session-ended")


def test_a_page_without_its_csrf_token_is_told_so(signed_in: SignedIn, core: kubernetes.client.CoreV1Api) -> None:
    name = new_configmap(core, "no-token", {"a": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    page.locator(".krm-editor").evaluate(
        """editor => {
            const headers = JSON.parse(editor.getAttribute("hx-headers:inherited"));
            delete headers["X-KRM-CSRF"];
            editor.setAttribute("hx-headers:inherited", JSON.stringify(headers));
        }"""
    )
    field = value_field(page, "a")
    type_over(field, "typed without a token")
    assert_session_ended(page, field, "typed without a token", "The CSRF token is missing")


def test_an_edit_too_large_to_send_is_refused_at_the_editor_and_save_names_it(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api, count_writes: CountWrites
) -> None:
    name = new_configmap(core, "large", {"a": "one", "b": "one"})
    writes = count_writes(name)
    page = open_editor(signed_in, f"/configmaps/{name}")
    edit(page, "b", "a small edit")
    field = value_field(page, "a")
    field.evaluate(
        """(field, size) => {
            field.value = "x".repeat(size);
            field.dispatchEvent(new Event("input", {bubbles: true}));
        }""",
        LIMIT + 1,
    )
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "too-large")
    expect(outcome(page).locator(".krm-outcome-message")).to_have_text(
        "This change is too large to send. Your other changes are still here."
    )
    expect(outcome(page).locator(".krm-outcome-detail")).to_have_text(f"The request body is larger than {LIMIT} bytes.")
    expect(field).to_have_attribute("data-krm-refused", "")
    expect(connection(page)).to_have_text("Live")
    screenshots(page, "too-large")

    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "fix-fields")
    expect(outcome(page).locator(".krm-outcome-causes a")).to_have_text("Value of a")
    assert writes.count() == 0
    type_over(field, "short again")
    expect(field).not_to_have_attribute("data-krm-unsent", "")
    expect(outcome(page)).to_have_count(0)
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")
    assert data_of(core, name) == {"a": "short again", "b": "a small edit"}


def test_an_error_page_from_a_proxy_is_shown_and_the_edit_is_sent_again(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "proxy", {"a": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")

    def bad_gateway(route: Route) -> None:
        route.fulfill(status=502, content_type="text/html", body="<html><body><h1>502 Bad Gateway</h1></body></html>")

    page.route("**/edit", bad_gateway)
    field = value_field(page, "a")
    type_over(field, "through a broken proxy")
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "failed")
    expect(outcome(page)).to_have_text(
        "The server did not take this edit (HTTP 502); it is sent again in a moment."
        " Your unsaved changes are still here."
    )
    expect(field).to_have_value("through a broken proxy")
    screenshots(page, "proxy-error")

    page.unroute("**/edit", bad_gateway)  # the edit is sent again by itself
    expect(dirty(page, "a")).to_be_visible()
    expect(outcome(page)).to_have_count(0)
    expect(field).not_to_have_attribute("data-krm-unsent", "")
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")
    assert data_of(core, name) == {"a": "through a broken proxy"}


def test_a_save_that_gets_no_answer_says_so(signed_in: SignedIn, core: kubernetes.client.CoreV1Api) -> None:
    name = new_configmap(core, "no-answer", {"a": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    edit(page, "a", "kept")
    page.route("**/actions/save", lambda route: route.abort("connectionreset"))
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "no-answer")
    expect(outcome(page)).to_contain_text("No answer from the server")
    screenshots(page, "no-answer")
    expect(value_field(page, "a")).to_have_value("kept")
    expect(dirty(page, "a")).to_be_visible()


def test_kubernetes_refusing_a_write_is_shown_in_its_own_words(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "forbidden", {"a": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}", user="viewer")
    edit(page, "a", "the viewer's change")
    editor = page.locator("[data-krm-kind=editor]")
    expect(editor.get_by_role("button", name="Save", exact=True)).to_have_count(0)  # not offered: it would be refused
    # a Save sent anyway (a forged request, or permissions changed since the page was drawn)
    headers = json.loads(editor.get_attribute("hx-headers:inherited") or "{}")
    forged = page.request.post(f"/krm/ui/components/{editor.get_attribute('id')}/actions/save", headers=headers)
    assert forged.status == 403, forged.text()
    answer = html.unescape(forged.text())
    assert 'data-krm-outcome="access-denied"' in answer, answer
    assert f'configmaps "{name}" is forbidden' in answer, answer
    assert 'User "viewer" cannot patch resource "configmaps"' in answer, answer
    expect(value_field(page, "a")).to_have_value("the viewer's change")
    assert data_of(core, name) == {"a": "one"}


def test_kubernetes_refusing_a_create_is_shown_in_its_own_words(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    taken = new_configmap(core, "taken", {"k": "before"})
    page = open_list(signed_in)
    core.delete_namespaced_config_map(taken, "demo")
    stage_create(page, {"metadata": {"name": taken}, "data": {"k": "mine"}})
    expect(review_item(page, "create", taken)).to_be_visible()
    create_configmap(core, taken, {"k": "someone else's"})  # created by someone else meanwhile
    review(page).get_by_role("button", name="Save all").click()
    item = review_item(page, "create", taken)
    expect(item.locator(".krm-review-detail")).to_have_text(f'configmaps "{taken}" already exists')
    expect(item.locator(".krm-review-outcome")).to_have_text(
        "Kubernetes refused the request. Your edits are still here."
    )
    screenshots(page, "create-exists")
    assert data_of(core, taken) == {"k": "someone else's"}


def test_an_outcome_is_cleared_when_the_draft_changes_after_it(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "cleared", {"a": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "nothing-to-save")
    edit(page, "a", "changed")
    expect(outcome(page)).to_have_count(0)
