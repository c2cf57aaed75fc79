"""The habits of a Kubernetes tool, in a real browser: labels from the path, key inputs named for
their key, Enter in an add row, Ctrl/Cmd+S, "Discard changes" (server-side), and no Save where
there is no object."""

from __future__ import annotations

import kubernetes.client
import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.browser.conftest import dirty, entry, goto_live, new_configmap, type_over, unique, value_field
from tests.browser.host_app import NAMESPACE

pytestmark = pytest.mark.browser


def data_of(core: kubernetes.client.CoreV1Api, name: str) -> dict[str, str]:
    return dict(core.read_namespaced_config_map(name, NAMESPACE).data or {})


def test_fields_are_labelled_from_their_path_and_keys_are_named_for_their_key(
    page: Page, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "labels", {"greeting": "hi"})
    goto_live(page, f"/configmaps/{name}")
    expect(page.locator("fieldset.krm-map > legend").first).to_have_text("Labels")
    expect(page.get_by_role("group", name="Data")).to_be_visible()
    expect(page.get_by_role("textbox", name="Key of greeting", exact=True)).to_have_value("greeting")
    expect(page.get_by_role("textbox", name="Value of greeting", exact=True)).to_have_value("hi")


def test_enter_in_the_add_row_adds_the_key_and_keeps_the_keyboard_there(
    page: Page, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "enter", {"a": "1"})
    goto_live(page, f"/configmaps/{name}")
    new_key = page.get_by_label("New key in Data", exact=True)
    new_key.fill("colour")
    page.get_by_label("Value of the new key in Data", exact=True).fill("teal")
    page.get_by_label("Value of the new key in Data", exact=True).press("Enter")
    expect(value_field(page, "colour")).to_have_value("teal")
    expect(new_key).to_have_value("")
    expect(new_key).to_be_focused()
    new_key.fill("size")
    new_key.press("Enter")  # Enter in the key input adds too (an empty value)
    expect(value_field(page, "size")).to_have_value("")
    expect(entry(page, "size").locator(".krm-dirty-marker")).to_be_visible()


def test_ctrl_s_saves_the_editor_holding_the_focus(page: Page, core: kubernetes.client.CoreV1Api) -> None:
    name = new_configmap(core, "ctrl-s", {"a": "1"})
    goto_live(page, f"/configmaps/{name}")
    field = value_field(page, "a")
    type_over(field, "saved with the keyboard")
    field.press("ControlOrMeta+s")  # no pause: the pending edit is sent before the Save
    expect(page.locator(".krm-outcome [data-krm-outcome]")).to_have_attribute("data-krm-outcome", "saved")
    assert data_of(core, name) == {"a": "saved with the keyboard"}
    expect(dirty(page, "a")).to_have_count(0)


def test_discard_changes_drops_the_whole_draft_on_the_server(
    context: BrowserContext, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "discard", {"a": "1", "b": "2"})
    page = goto_live(context.new_page(), f"/configmaps/{name}")
    type_over(value_field(page, "a"), "mine")
    page.get_by_role("button", name="Remove b", exact=True).click()
    expect(dirty(page, "a")).to_be_visible()
    expect(value_field(page, "b")).to_have_count(0)
    core.patch_namespaced_config_map(name, NAMESPACE, {"data": {"a": "theirs"}})
    expect(page.locator(".krm-conflict")).to_be_visible()

    save, discard = page.locator(".krm-action-save"), page.get_by_role("button", name="Discard changes")
    assert save.evaluate("b => getComputedStyle(b).backgroundColor") != discard.evaluate(
        "b => getComputedStyle(b).backgroundColor"
    ), "Save is the primary action"
    discard.click()
    expect(page.locator(".krm-outcome [data-krm-outcome]")).to_have_attribute("data-krm-outcome", "discarded")
    expect(value_field(page, "a")).to_have_value("theirs")
    expect(value_field(page, "b")).to_have_value("2")
    expect(page.locator(".krm-conflict, .krm-dirty-marker")).to_have_count(0)

    reloaded = goto_live(context.new_page(), f"/configmaps/{name}")  # the session's draft is gone, not hidden
    expect(value_field(reloaded, "a")).to_have_value("theirs")
    expect(reloaded.locator(".krm-dirty-marker")).to_have_count(0)
    assert data_of(core, name) == {"a": "theirs", "b": "2"}, "discarding writes nothing"
    reloaded.get_by_role("button", name="Discard changes").click()
    expect(reloaded.locator(".krm-outcome")).to_have_text("There are no changes to discard.")


def test_a_missing_object_offers_no_save(page: Page, core: kubernetes.client.CoreV1Api) -> None:
    name = unique("missing")
    goto_live(page, f"/configmaps/{name}")
    expect(page.locator(".krm-missing")).to_contain_text(f"“{name}” does not exist in namespace {NAMESPACE}")
    expect(page.get_by_role("button", name="Save")).to_have_count(0)
    expect(page.get_by_role("button", name="Discard changes")).to_have_count(0)
    core.create_namespaced_config_map(NAMESPACE, {"metadata": {"name": name}, "data": {"a": "1"}})
    expect(value_field(page, "a")).to_have_value("1")  # created meanwhile: the editor shows it, Save too
    expect(page.get_by_role("button", name="Save", exact=True)).to_be_visible()
