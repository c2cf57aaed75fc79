"""Every input shows the draft after every render, except the one being typed in.

After an Undo, a Take theirs, a colleague's change or another tab's edit, each field of the editor
shows what the session's draft holds, for every widget (text, multiline text, number, checkbox,
JSON array, map key); the field being typed in keeps what is typed. Retyping a value that was just
undone is sent like any other edit; a value the server refuses (invalid JSON) keeps Save from
saving and names the field to fix. The draft is read back the only way that matters: by saving it
to the simulator and reading the object with the Kubernetes client.
"""

from __future__ import annotations

import re
import typing as t

import kubernetes.client
import pytest
from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.browser.conftest import (
    MERGE_PATCH,
    dirty,
    entry,
    goto_live,
    new_configmap,
    patch_data,
    type_over,
    unique,
    value_field,
)
from tests.browser.host_app import NAMESPACE
from tests.browser.save.conftest import SignedIn, WriteCounter
from tests.browser.save.test_failures import screenshots
from tests.browser.save.test_outcomes import data_of, deployment_body, edit, open_editor, outcome, save

pytestmark = pytest.mark.browser

CountWrites = t.Callable[[str], WriteCounter]

INPUTS_MATCH_RENDER: t.Final = """() => [...document.querySelectorAll(".krm-editor [hx-post]")]
    .filter(f => f.matches("input, textarea") && !f.hasAttribute("data-krm-unsent"))
    .filter(f => f.type === "checkbox" ? f.checked !== f.defaultChecked : f.value !== f.defaultValue)
    .map(f => f.id)"""
"""Ids of the fields (without an unsent edit) whose shown value differs from the latest render."""


def settled(field: Locator) -> None:
    """The field's edit is in the draft and the page has rendered the draft since."""
    expect(field).not_to_have_attribute("data-krm-unsent", "")
    expect(field).not_to_have_attribute("data-krm-pending", "")


def at(page: Page, pointer: str) -> Locator:
    """The field whose path is ``pointer``."""
    return page.locator(f'[data-krm-path="{pointer}"]')


def control(page: Page, pointer: str) -> Locator:
    return at(page, pointer).locator(":scope > input.krm-input:not(.krm-key), :scope > textarea.krm-input")


def undo(page: Page, pointer: str) -> None:
    at(page, pointer).locator(":scope > button.krm-revert, :scope > fieldset > legend > button.krm-revert").click()


def assert_inputs_match_render(page: Page) -> None:
    assert page.evaluate(INPUTS_MATCH_RENDER) == []


def saved_outcome(page: Page) -> str | None:
    save(page)
    expect(outcome(page)).not_to_have_attribute("data-krm-outcome", "saved-pending")
    return outcome(page).get_attribute("data-krm-outcome")


def new_deployment(apps: kubernetes.client.AppsV1Api) -> str:
    name = unique("inputs")
    body = deployment_body(name, replicas=2)
    body["spec"]["paused"] = False
    # an array of numbers: still edited as JSON text
    body["spec"]["template"]["spec"]["securityContext"] = {"supplementalGroups": [1000]}
    body["spec"]["minReadySeconds"] = 1
    body["spec"]["template"]["metadata"]["labels"]["tier"] = "web"
    apps.create_namespaced_deployment(NAMESPACE, t.cast(t.Any, body))
    return name


def open_new_deployment(signed_in: SignedIn, apps: kubernetes.client.AppsV1Api) -> tuple[str, Page]:
    """A new Deployment (:func:`new_deployment`) and its editor's page."""
    name = new_deployment(apps)
    return name, open_editor(signed_in, f"/deployments/{name}")


def test_undo_makes_every_kind_of_input_show_the_draft(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api, count_writes: CountWrites
) -> None:
    name, page = open_new_deployment(signed_in, apps)
    replicas = control(page, "/spec/replicas")
    paused = control(page, "/spec/paused")
    groups = control(page, "/spec/template/spec/securityContext/supplementalGroups")
    tier_key = at(page, "/spec/template/metadata/labels/tier").locator("input.krm-key")
    tier_value = control(page, "/spec/template/metadata/labels/tier")
    original_groups = groups.input_value()

    type_over(replicas, "5")
    paused.check()
    type_over(groups, "[1000, 2000]")
    type_over(tier_value, "backend")
    for field in (replicas, paused, groups, tier_value):
        settled(field)
    expect(at(page, "/spec/replicas").locator(".krm-dirty-marker")).to_be_visible()

    for pointer in ("/spec/replicas", "/spec/paused", "/spec/template/spec/securityContext/supplementalGroups"):
        undo(page, pointer)
    at(page, "/spec/template/metadata/labels/tier").get_by_role("button", name=re.compile("^Undo")).click()
    expect(replicas).to_have_value("2")
    expect(paused).not_to_be_checked()
    expect(groups).to_have_value(original_groups)
    expect(tier_value).to_have_value("web")
    expect(tier_key).to_have_value("tier")
    expect(page.locator(".krm-editor .krm-dirty-marker")).to_have_count(0)
    assert_inputs_match_render(page)

    writes = count_writes(name)
    assert saved_outcome(page) == "nothing-to-save"
    assert writes.count() == 0


def test_undo_while_an_edit_waits_for_its_debounce_keeps_the_undo(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "undo-pending", {"a": "one", "b": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    field = value_field(page, "a")
    edit(page, "a", "first")
    field.press("End")
    field.press_sequentially(" and more")
    expect(field).to_have_attribute("data-krm-pending", "")
    entry(page, "a").get_by_role("button", name="Undo changes to a").click()

    expect(field).to_have_value("one")
    expect(dirty(page, "a")).to_have_count(0)
    # the debounced edit came due after the Undo and sent nothing
    expect(field).not_to_have_attribute("data-krm-pending", "")
    expect(field).not_to_have_attribute("data-krm-unsent", "")
    expect(field).to_have_value("one")
    expect(dirty(page, "a")).to_have_count(0)
    assert saved_outcome(page) == "nothing-to-save"
    assert data_of(core, name) == {"a": "one", "b": "one"}


def test_retyping_a_value_just_undone_is_sent(signed_in: SignedIn, core: kubernetes.client.CoreV1Api) -> None:
    name = new_configmap(core, "retype", {"a": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    field = value_field(page, "a")
    edit(page, "a", "two")
    entry(page, "a").get_by_role("button", name="Undo changes to a").click()
    expect(field).to_have_value("one")
    expect(dirty(page, "a")).to_have_count(0)

    type_over(field, "two")  # the very value the last edit request carried
    expect(dirty(page, "a")).to_be_visible()
    settled(field)
    assert saved_outcome(page) == "saved"
    assert data_of(core, name) == {"a": "two"}
    expect(field).to_have_value("two")


def test_take_theirs_shows_their_value_even_over_text_still_being_sent(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "theirs", {"a": "one", "b": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    field = value_field(page, "a")
    edit(page, "a", "mine")
    patch_data(core, name, {"a": "theirs"})
    conflict = entry(page, "a").locator(".krm-conflict")
    expect(conflict).to_contain_text("theirs")
    field.press("End")
    field.press_sequentially(" typed on")
    conflict.get_by_role("button", name="Take theirs").click()

    expect(conflict).to_have_count(0)
    expect(field).to_have_value("theirs")
    expect(field).not_to_have_attribute("data-krm-pending", "")
    expect(field).to_have_value("theirs")
    expect(dirty(page, "a")).to_have_count(0)
    assert_inputs_match_render(page)
    assert saved_outcome(page) == "nothing-to-save"
    assert data_of(core, name) == {"a": "theirs", "b": "one"}


def test_a_focused_field_follows_a_change_made_elsewhere(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "focused", {"a": "one", "b": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    field = value_field(page, "a")
    edit(page, "a", "one!")
    entry(page, "a").get_by_role("button", name="Undo changes to a").click()
    field.focus()
    patch_data(core, name, {"a": "changed by someone else"})
    expect(field).to_have_value("changed by someone else")
    expect(field).to_be_focused()


def test_invalid_json_keeps_save_from_saving_and_names_the_field(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api, count_writes: CountWrites
) -> None:
    name, page = open_new_deployment(signed_in, apps)
    writes = count_writes(name)
    replicas = control(page, "/spec/replicas")
    groups = control(page, "/spec/template/spec/securityContext/supplementalGroups")
    type_over(replicas, "3")
    settled(replicas)
    type_over(groups, "[1000, ")
    error = page.locator(f"#{groups.get_attribute('id')}-error")
    expect(error).to_contain_text("Not valid JSON")
    expect(groups).to_have_attribute("data-krm-refused", "")

    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "fix-fields")
    expect(outcome(page)).to_contain_text("Nothing was saved: correct the marked field first.")
    link = outcome(page).locator(".krm-outcome-causes a")
    expect(link).to_have_text("Supplemental groups")
    expect(link).to_have_attribute("href", f"#{groups.get_attribute('id')}")
    expect(outcome(page).locator(".krm-outcome-causes li")).to_contain_text("Not valid JSON")
    expect(groups).to_be_focused()
    expect(groups).to_have_value("[1000, ")  # what was typed stays
    screenshots(page, "fix-fields")
    assert writes.count() == 0 and apps.read_namespaced_deployment(name, NAMESPACE).spec.replicas == 2

    type_over(groups, "[1000, 3000]")
    settled(groups)
    expect(error).to_have_text("")
    expect(outcome(page)).to_have_count(0)  # the draft changed after the outcome
    assert saved_outcome(page) == "saved"
    spec = apps.read_namespaced_deployment(name, NAMESPACE).spec
    assert spec.replicas == 3 and spec.template.spec.security_context.supplemental_groups == [1000, 3000]
    assert writes.count() == 1


def test_two_tabs_typing_into_one_field_converge_on_what_was_typed_last(
    browser_context: BrowserContext, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "tabs", {"a": "one", "b": "one"})
    first = goto_live(browser_context.new_page(), f"/configmaps/{name}")
    second = goto_live(browser_context.new_page(), f"/configmaps/{name}")
    in_first, in_second = value_field(first, "a"), value_field(second, "a")

    type_over(in_first, "typed in the first tab")
    settled(in_first)
    expect(in_second).to_have_value("typed in the first tab")
    type_over(in_second, "typed in the second tab")
    settled(in_second)
    expect(in_first).to_have_value("typed in the second tab")
    expect(in_first).to_be_focused()  # it follows the draft though focused: nobody types there now

    # Both type at once, one key each in turn; the second tab types last.
    in_first.click()
    first.keyboard.press("ControlOrMeta+a")
    in_second.click()
    second.keyboard.press("ControlOrMeta+a")
    for key_first, key_second in zip("xxxx", "yyyy", strict=True):
        first.keyboard.press(key_first)
        second.keyboard.press(key_second)
    settled(in_first)
    settled(in_second)
    expect(in_first).to_have_value("yyyy")
    expect(in_second).to_have_value("yyyy")
    for page in (first, second):
        assert_inputs_match_render(page)
    first.get_by_role("button", name="Save", exact=True).click()
    expect(outcome(first)).to_have_attribute("data-krm-outcome", "saved")
    assert data_of(core, name) == {"a": "yyyy", "b": "one"}


@pytest.fixture
def browser_context(signed_in: SignedIn) -> BrowserContext:
    """A signed-in profile whose pages are tabs of one session."""
    return signed_in("editor").context


def test_a_colleague_changing_the_field_just_edited_is_shown_once_the_edit_is_in(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api
) -> None:
    name, page = open_new_deployment(signed_in, apps)
    minimum = control(page, "/spec/minReadySeconds")
    type_over(minimum, "4")
    settled(minimum)
    apps.patch_namespaced_deployment(name, NAMESPACE, {"spec": {"replicas": 7}}, _content_type=MERGE_PATCH)
    expect(control(page, "/spec/replicas")).to_have_value("7")
    expect(minimum).to_have_value("4")
    assert_inputs_match_render(page)
    assert saved_outcome(page) == "saved"
    spec = apps.read_namespaced_deployment(name, NAMESPACE).spec
    assert (spec.replicas, spec.min_ready_seconds) == (7, 4)
