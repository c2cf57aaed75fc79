"""The controls a person is offered follow what Kubernetes lets them do, in a real browser.

The saving host acts as the signed-in person (impersonation): ``viewer`` may read ConfigMaps but
not patch, create or delete them, ``editor`` may. Both are shown the same editor and the same list
(one component each); the viewer is shown no Save, Add, Remove, Delete or create form, on the first
paint and in every live update, and the editor all of them.
"""

from __future__ import annotations

import os

import kubernetes.client
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import entry, goto_live, new_configmap, patch_data, row, value_field
from tests.browser.save.conftest import SignedIn

pytestmark = pytest.mark.browser


def shots(page: Page, name: str) -> None:
    """Keeps the page at 1280 and at 390 px when ``KRM_SCREENSHOTS`` names a folder."""
    folder = os.environ.get("KRM_SCREENSHOTS")
    if not folder:
        return
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=os.path.join(folder, f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def test_a_viewer_is_shown_no_write_controls_also_after_live_updates(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "viewed", {"a": "one", "greeting": "hello"})
    viewer = signed_in("viewer")
    listed = goto_live(viewer.context.new_page(), "/configmaps")
    editing = goto_live(viewer, f"/configmaps/{name}")
    editor = editing.locator("[data-krm-kind=editor]")
    expect(value_field(editing, "a")).to_have_value("one")  # shown, and a draft of it may still be made
    for control in ("Save", "Remove a", "Add a key to Data"):
        expect(editor.get_by_role("button", name=control, exact=True)).to_have_count(0)
    expect(row(listed, name)).to_contain_text("hello")
    expect(listed.get_by_role("button", name=f"Delete {name}")).to_have_count(0)
    expect(listed.get_by_label("New ConfigMap (JSON)")).to_have_count(0)

    patch_data(core, name, {"b": "added", "greeting": "hello again"})  # someone else's change, live
    expect(value_field(editing, "b")).to_have_value("added")
    expect(entry(editing, "b")).to_be_visible()
    expect(editor.get_by_role("button", name="Remove b", exact=True)).to_have_count(0)
    expect(editor.get_by_role("button", name="Add a key to Data", exact=True)).to_have_count(0)
    expect(row(listed, name)).to_contain_text("hello again")
    expect(listed.locator(".krm-row-action")).to_have_count(0)
    shots(editing, "viewer-editor")
    shots(listed, "viewer-list")


def test_an_editor_is_shown_every_write_control(signed_in: SignedIn, core: kubernetes.client.CoreV1Api) -> None:
    name = new_configmap(core, "edited", {"a": "one", "greeting": "hello"})
    page = signed_in("editor")
    listed = goto_live(page.context.new_page(), "/configmaps")
    editing = goto_live(page, f"/configmaps/{name}")
    editor = editing.locator("[data-krm-kind=editor]")
    for control in ("Save", "Remove a", "Add a key to Data"):
        expect(editor.get_by_role("button", name=control, exact=True)).to_have_count(1)
    expect(listed.get_by_role("button", name=f"Delete {name}")).to_be_visible()
    expect(listed.get_by_label("New ConfigMap (JSON)")).to_be_visible()
    patch_data(core, name, {"b": "added", "greeting": "hello again"})
    expect(editor.get_by_role("button", name="Remove b", exact=True)).to_be_visible()
    expect(row(listed, name)).to_contain_text("hello again")
    expect(listed.get_by_role("button", name=f"Delete {name}")).to_be_visible()
