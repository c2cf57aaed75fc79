"""A field's state, driven the way a person drives it: typing, leaving the field, a change made
elsewhere arriving while typing, a conflict, a refused value, Save, and a connection cut and back.

Each test reads the state through ``data-krm-state`` (absent while clean) and ``krm.field.state``,
and records every state the field went through: each step must be a transition of the table at the
top of ``krm-field.js`` (``krm.field.TRANSITIONS``), and the trail must be the one the person's
actions call for.
"""

from __future__ import annotations

import re
import typing as t

import kubernetes.client
import pytest
from playwright.sync_api import Locator, Page, Request, expect

from tests.browser.conftest import dirty, entry, new_configmap, patch_data, type_over, value_field, wait_live
from tests.browser.host_app import NAMESPACE
from tests.browser.proxy import TcpProxy
from tests.browser.save.conftest import SignedIn
from tests.browser.save.test_inputs import control, open_new_deployment
from tests.browser.save.test_outcomes import data_of, open_editor, outcome, save

pytestmark = pytest.mark.browser

STATE: t.Final = "data-krm-state"

RECORD_TRAIL: t.Final = """field => {
    const trail = field.krmTrail = [];
    new MutationObserver(() => {
        const state = window.krm.field.state(field);
        if (trail[trail.length - 1] !== state) trail.push(state);
    }).observe(field, {attributes: true, attributeFilter: ["data-krm-state"]});
}"""
"""Records, from now on, every state ``field`` enters (``field.krmTrail``)."""


def record(field: Locator) -> None:
    field.evaluate(RECORD_TRAIL)


def trail(field: Locator) -> list[str]:
    """The states the field went through since ``record``, each a transition of the table."""
    states = t.cast(list[str], field.evaluate("field => field.krmTrail"))
    table = t.cast(dict[str, dict[str, str]], field.page.evaluate("() => window.krm.field.TRANSITIONS"))
    before = "clean"
    for state in states:
        assert state in table[before].values(), f"{before} -> {state} is no transition: {states}"
        before = state
    return states


def expect_clean(field: Locator) -> None:
    expect(field).not_to_have_attribute(STATE, re.compile(".*"))
    expect(field).not_to_have_attribute("data-krm-unsent", "")
    assert field.evaluate("field => window.krm.field.state(field)") == "clean"


def edits_sent(page: Page) -> list[str]:
    """The values of the field edit requests the page makes from now on."""
    sent: list[str] = []

    def seen(request: Request) -> None:
        if request.method == "POST" and request.url.endswith("/edit"):
            sent.append(request.post_data or "")

    page.on("request", seen)
    return sent


def test_typing_then_leaving_the_field_sends_one_edit_and_the_field_follows_the_draft_again(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "states", {"a": "one", "b": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    field = value_field(page, "a")
    record(field)
    sent = edits_sent(page)
    type_over(field, "typed")
    expect(field).to_have_attribute(STATE, "typing")
    expect(field).to_have_attribute("data-krm-pending", "")
    field.press("Tab")  # leaving a text field is no edit of its own
    expect(field).not_to_be_focused()

    expect(dirty(page, "a")).to_be_visible()
    expect_clean(field)
    assert trail(field) in (["typing", "sending", "settling", "clean"], ["typing", "sending", "clean"])
    assert len(sent) == 1 and "value=typed" in sent[0]
    # clean again: a change made elsewhere shows at once
    patch_data(core, name, {"b": "theirs"})
    expect(value_field(page, "b")).to_have_value("theirs")


def test_a_change_arriving_while_typing_leaves_the_text_then_shows_as_a_conflict(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "arrives", {"a": "one", "b": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    field = value_field(page, "a")
    record(field)
    field.click()
    field.press("End")
    field.press_sequentially(" m")
    typed = "one m"
    expect(field).to_have_attribute(STATE, re.compile("typing|sending|settling"))
    patch_data(core, name, {"a": "theirs", "b": "two"})
    for key in "ine, typed while theirs arrives":  # keys keep coming until the change is on the page
        field.press_sequentially(key)
        typed += key
        if value_field(page, "b").input_value() == "two":
            assert field.evaluate("field => window.krm.field.state(field)") != "clean"  # what was typed is kept
            break
    expect(value_field(page, "b")).to_have_value("two")
    expect(field).to_have_value(typed)
    expect(field).to_be_focused()

    conflict = entry(page, "a").locator(".krm-conflict")
    expect(conflict).to_contain_text("theirs")
    expect_clean(field)
    expect(field).to_have_value(typed)
    assert trail(field)[-1] == "clean"
    record(field)
    conflict.get_by_role("button", name="Take theirs").click()
    expect(conflict).to_have_count(0)
    expect(field).to_have_value("theirs")
    expect_clean(field)
    assert trail(field) == []  # a clean field took the draft: no state entered
    assert data_of(core, name) == {"a": "theirs", "b": "two"}


def test_a_refused_value_stays_refused_through_save_until_it_is_corrected(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api
) -> None:
    name, page = open_new_deployment(signed_in, apps)
    groups = control(page, "/spec/template/spec/securityContext/supplementalGroups")
    record(groups)
    type_over(groups, "[1000, ")
    expect(groups).to_have_attribute(STATE, "refused")
    expect(groups).to_have_attribute("data-krm-refused", "")
    assert trail(groups) == ["typing", "sending", "refused"]

    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "fix-fields")
    expect(groups).to_have_attribute(STATE, "refused")
    expect(groups).to_be_focused()
    groups.press("End")
    groups.press_sequentially("2000]")
    expect_clean(groups)
    assert trail(groups)[3:5] == ["typing", "sending"] and trail(groups)[-1] == "clean"
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")
    template = apps.read_namespaced_deployment(name, NAMESPACE).spec.template
    assert template.spec.security_context.supplemental_groups == [1000, 2000]


def test_an_edit_made_while_the_connection_is_cut_waits_queued_and_goes_when_it_is_back(
    through_proxy: Page, proxy: TcpProxy, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "cut", {"a": "one"})
    page = through_proxy
    page.goto(f"/configmaps/{name}")
    wait_live(page)
    field = value_field(page, "a")
    record(field)
    proxy.cut()
    expect(page.locator(".krm-connection").first).to_contain_text("Reconnecting")
    type_over(field, "typed offline")
    expect(field).to_have_attribute(STATE, "queued")
    expect(field).to_have_attribute("data-krm-queued", "")
    assert trail(field) == ["typing", "queued"]

    proxy.restore()
    wait_live(page)
    expect_clean(field)
    expect(dirty(page, "a")).to_be_visible()
    assert trail(field) in (
        ["typing", "queued", "sending", "settling", "clean"],
        ["typing", "queued", "sending", "clean"],
    )
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")
    assert data_of(core, name) == {"a": "typed offline"}


def test_a_change_to_the_focused_field_without_an_edit_keeps_its_caret_where_the_person_put_it(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api, tmp_path: t.Any
) -> None:
    name = new_configmap(core, "caret", {"a": "hello world", "b": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    field = value_field(page, "a")
    field_id = t.cast(str, field.get_attribute("id"))
    record(field)
    sent = edits_sent(page)
    field.click()
    field.press("Home")
    for _ in range(5):
        field.press("ArrowRight")  # the caret after "hello", nothing typed
    caret = (
        "() => [document.activeElement.id, document.activeElement.selectionStart, document.activeElement.selectionEnd]"
    )
    assert page.evaluate(caret) == [field_id, 5, 5]

    patch_data(core, name, {"a": "hello world, again"})  # changed after the caret: it stays
    expect(field).to_have_value("hello world, again")
    assert page.evaluate(caret) == [field_id, 5, 5]
    patch_data(core, name, {"a": "oh, hello world, again"})  # changed before it: it moves with its text
    expect(field).to_have_value("oh, hello world, again")
    assert page.evaluate(caret) == [field_id, 9, 9]
    field.press("Shift+ArrowLeft")
    patch_data(core, name, {"a": "oh, hello there"})  # a selection keeps its text selected
    expect(field).to_have_value("oh, hello there")
    assert page.evaluate(caret) == [field_id, 8, 9]
    page.screenshot(path=str(tmp_path / "caret-kept.png"))

    expect_clean(field)
    assert trail(field) == [] and sent == []  # no state entered, nothing sent: the person typed nothing
    field.press("Delete")  # typing goes where the caret is
    field.press("Delete")
    expect(field).to_have_value("oh, hellthere")
