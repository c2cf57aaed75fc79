"""Creating and deleting through a live list's one review list, in a real browser.

Pending creates and deletes are staged server-side, listed together under one "Save all", and
written as the signed-in person; the live list shows the result. A delete is bound to the uid the
person selected, so an object recreated under the same name is never deleted by it.
"""

from __future__ import annotations

import html
import json
import os
import typing as t

import kubernetes.client
import pytest
from playwright.sync_api import APIResponse, Locator, Page, expect

from tests.browser.conftest import create_configmap, goto_live, new_configmap, row, unique
from tests.browser.host_app import NAMESPACE
from tests.browser.save.conftest import SignedIn, configmap_uid

pytestmark = pytest.mark.browser


def open_list(signed_in: SignedIn, user: str = "editor") -> Page:
    page = goto_live(signed_in(user), "/configmaps")
    expect(review(page)).to_contain_text("No pending changes.")
    return page


def review(page: Page) -> Locator:
    return page.locator("[data-krm-review]")


def stage_create(page: Page, body: dict[str, t.Any]) -> None:
    page.get_by_label("New ConfigMap (JSON)").fill(json.dumps(body))
    page.get_by_role("button", name="Add to review").click()


def review_item(page: Page, kind: str, name: str) -> Locator:
    return review(page).locator(f'[data-krm-review-kind="{kind}"]', has_text=name)


def names(core: kubernetes.client.CoreV1Api) -> set[str]:
    return {str(item.metadata.name) for item in core.list_namespaced_config_map(NAMESPACE).items if item.metadata}


def test_creates_and_deletes_are_reviewed_and_saved_together(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    doomed, created = unique("doomed"), unique("created")
    create_configmap(core, doomed, {"greeting": "bye"})
    page = open_list(signed_in)
    stage_create(page, {"metadata": {"name": created}, "data": {"greeting": "hello <b>there</b>"}})
    expect(review_item(page, "create", created)).to_be_visible()
    row(page, doomed).get_by_role("button", name=f"Delete {doomed}").click()
    expect(review_item(page, "delete", doomed)).to_be_visible()
    assert created not in names(core) and doomed in names(core), "nothing is written before Save all"
    review(page).get_by_role("button", name="Save all").click()
    expect(row(page, created)).to_contain_text("hello <b>there</b>")
    expect(row(page, doomed)).to_have_count(0)
    expect(review(page)).to_contain_text("No pending changes.")
    present = names(core)
    assert created in present and doomed not in present


def test_a_create_outside_the_allowed_fields_is_refused_before_it_is_staged(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = unique("refused")
    page = open_list(signed_in)
    stage_create(page, {"metadata": {"name": name, "annotations": {"a": "b"}}, "data": {"k": "v"}})
    refusal = review(page).locator(".krm-review-refusal")
    expect(refusal).to_contain_text("metadata/annotations/a: is not a field this form may set")
    expect(review(page).locator("[data-krm-review-kind]")).to_have_count(0)
    assert name not in names(core)


def post_as_the_page(page: Page, action: str, form: dict[str, str]) -> APIResponse:
    """``POST <review>/<list id>/<action>`` as the list's controls would send it (a control the page
    does not offer, sent anyway)."""
    section = page.locator("[data-krm-kind=list]")
    headers = json.loads(section.get_attribute("hx-headers:inherited") or "{}")
    return page.request.post(f"/krm/review/{section.get_attribute('id')}/{action}", form=form, headers=headers)


def test_a_viewer_is_offered_no_create_and_kubernetes_refuses_one_sent_anyway(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = unique("viewer-create")
    page = open_list(signed_in, user="viewer")
    expect(page.get_by_label("New ConfigMap (JSON)")).to_have_count(0)  # Kubernetes would refuse it
    staged = post_as_the_page(page, "create", {"body": json.dumps({"metadata": {"name": name}, "data": {"k": "v"}})})
    assert staged.status == 200, staged.text()  # the host's authorizer leaves creates to Kubernetes
    saved = post_as_the_page(page, "save", {})
    assert saved.status == 403, saved.text()
    assert "You do not have permission to make this change. Your edits are still here." in saved.text()
    assert 'User "viewer" cannot create resource "configmaps"' in html.unescape(saved.text())  # Kubernetes' words
    assert name not in names(core)


def test_a_delete_the_viewer_may_not_make_is_not_offered_and_is_refused_when_sent_anyway(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    kept = unique("kept")
    create_configmap(core, kept, {"k": "v"})
    page = open_list(signed_in, user="viewer")
    expect(row(page, kept)).to_be_visible()
    expect(row(page, kept).get_by_role("button", name=f"Delete {kept}")).to_have_count(0)
    refused = post_as_the_page(page, "delete", {"uid": configmap_uid(core, kept)})
    assert refused.status == 403, refused.text()
    assert f"You do not have permission to make this change. Your edits are still here. You may not delete {kept}." in (
        refused.text()
    )
    saved = post_as_the_page(page, "save", {})
    assert "No pending changes." in saved.text(), "nothing was staged"
    expect(row(page, kept)).to_be_visible()
    if os.environ.get("KRM_SCREENSHOTS"):
        page.screenshot(path=os.path.join(os.environ["KRM_SCREENSHOTS"], "viewer-delete-refused.png"), full_page=True)
    assert kept in names(core)


def test_a_delete_never_removes_an_object_recreated_under_the_same_name(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "recreated", {"greeting": "first"})
    page = open_list(signed_in)
    row(page, name).get_by_role("button", name=f"Delete {name}").click()
    expect(review_item(page, "delete", name)).to_be_visible()
    core.delete_namespaced_config_map(name, NAMESPACE)
    create_configmap(core, name, {"greeting": "second"})
    replacement = configmap_uid(core, name)
    expect(row(page, name)).to_contain_text("second")
    review(page).get_by_role("button", name="Save all").click()
    expect(review(page)).to_contain_text("No pending changes.")
    assert configmap_uid(core, name) == replacement


def test_pending_deletes_are_struck_through_and_the_save_says_how_many_changes_it_saved(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    doomed, kept, created = unique("struck"), unique("kept"), unique("counted")
    create_configmap(core, doomed, {"greeting": "bye"})
    create_configmap(core, kept, {"greeting": "stay"})
    page = open_list(signed_in)
    doomed_row, kept_row = row(page, doomed), row(page, kept)
    doomed_row.get_by_role("button", name=f"Delete {doomed}").click()
    expect(review_item(page, "delete", doomed)).to_be_visible()
    expect(doomed_row).to_have_attribute("data-krm-pending-delete", "")
    line = doomed_row.locator("th").evaluate("cell => getComputedStyle(cell).textDecorationLine")
    assert line == "line-through"
    expect(kept_row).not_to_have_attribute("data-krm-pending-delete", "")
    assert kept_row.locator("th").evaluate("cell => getComputedStyle(cell).textDecorationLine") == "none"

    core.patch_namespaced_config_map(doomed, NAMESPACE, {"data": {"greeting": "changed"}})
    expect(doomed_row).to_contain_text("changed")  # the row was re-rendered by the live stream...
    expect(doomed_row).to_have_attribute("data-krm-pending-delete", "")  # ...and is still marked

    review_item(page, "delete", doomed).get_by_role("button", name="Discard").click()
    expect(doomed_row).not_to_have_attribute("data-krm-pending-delete", "")

    doomed_row.get_by_role("button", name=f"Delete {doomed}").click()
    stage_create(page, {"metadata": {"name": created}, "data": {"a": "1"}})
    expect(review_item(page, "create", created)).to_be_visible()
    review(page).get_by_role("button", name="Save all").click()
    expect(review(page).locator(".krm-review-saved")).to_have_text("2 changes saved")
    expect(review(page)).to_contain_text("No pending changes.")
    expect(row(page, doomed)).to_have_count(0)
    assert created in names(core) and doomed not in names(core)
