"""The example's Deployment editor checked by the cluster while it is edited, in headless Chromium.

Typing ``-1`` replicas or a label value Kubernetes refuses shows Kubernetes' own message at that
field before Save (the draft's merge patch sent with ``dryRun=All``), marked as checked by the
cluster; Save refuses with it until the draft is fixed, and nothing is written meanwhile. A
person whom Kubernetes' RBAC lets only read (the example impersonates the signed-in person) gets
a read-only editor without Save, and a Save posted by hand is still refused with 403.
"""

from __future__ import annotations

import json
import typing as t

import kubernetes.client
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from .conftest import Example

pytestmark = pytest.mark.browser
WAIT_MS: t.Final = 15_000
NAMESPACE: t.Final = "demo"
DEPLOYMENT: t.Final = f"/namespaces/{NAMESPACE}/deployments/web"
PHONE: t.Final = {"width": 390, "height": 844}
NEGATIVE: t.Final = "must be greater than or equal to 0"
LABEL_RULE: t.Final = "a valid label must be an empty string or consist of alphanumeric characters"


def sign_in(browser: Browser, example: Example, user: str, **options: t.Any) -> Page:
    page = browser.new_context(base_url=example.url, **options).new_page()
    page.goto("/sign-in")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", user)
    page.click("button[type=submit]")
    expect(page.locator("header.site .who strong")).to_have_text(user, timeout=WAIT_MS)
    return page


def open_deployment(page: Page) -> Locator:
    """The Deployment editor, live, once any rollout an earlier test started has finished (a
    rollout's status writes make a check answer 409 until they stop, which shows nothing)."""
    page.goto(DEPLOYMENT)
    expect(page.get_by_text("Rolled out:")).to_be_visible(timeout=2 * WAIT_MS)
    editor = page.locator("section.krm-editor").first
    expect(editor.locator(".krm-connection")).to_have_text("Live", timeout=WAIT_MS)
    return editor


def deployment(example: Example) -> t.Any:
    with example.admin_api() as api:
        return kubernetes.client.AppsV1Api(api).read_namespaced_deployment("web", NAMESPACE)


def field_error(editor: Locator, path: str) -> Locator:
    return editor.locator(f'[data-krm-path="{path}"] .krm-error').first


def test_the_cluster_refuses_negative_replicas_and_a_bad_label_before_save(browser: Browser, example: Example) -> None:
    before = deployment(example)
    page = sign_in(browser, example, "editor", viewport={"width": 1280, "height": 900})
    editor = open_deployment(page)
    check = editor.locator(".krm-check")
    replicas = editor.get_by_label("Replicas", exact=True)
    replicas.fill("-1")
    # Before any Save: Kubernetes' own message at the field, marked as the cluster's check.
    expect(field_error(editor, "/spec/replicas")).to_contain_text(NEGATIVE, timeout=WAIT_MS)
    expect(field_error(editor, "/spec/replicas")).to_contain_text("(checked by the cluster)")
    expect(check.locator('[data-krm-check="refused"]')).to_contain_text("Checked by the cluster:")
    expect(check.locator("li")).to_contain_text(["spec.replicas"])
    expect(check.locator("li")).to_contain_text([NEGATIVE])
    page.screenshot(path="/tmp/checked-replicas-1280.png", full_page=True)

    editor.locator(".krm-action-save").click()
    outcome = editor.locator(".krm-outcome")
    expect(outcome.locator('[data-krm-outcome="invalid"]')).to_contain_text(
        "Checked by the cluster before saving: nothing was written.", timeout=WAIT_MS
    )
    assert deployment(example).spec.replicas == before.spec.replicas  # nothing reached etcd

    wanted = 3 if before.spec.replicas != 3 else 4
    replicas.fill(str(wanted))
    expect(check.locator('[data-krm-check="passed"]')).to_contain_text("Kubernetes accepts", timeout=WAIT_MS)
    expect(field_error(editor, "/spec/replicas")).to_be_empty()

    label = editor.get_by_label("Value of app", exact=True)
    label.fill("not valid!")
    labels_error = editor.locator('[data-krm-path="/metadata/labels"] > fieldset > .krm-error')
    expect(labels_error).to_contain_text(LABEL_RULE, timeout=WAIT_MS)  # Kubernetes names metadata.labels
    expect(labels_error).to_contain_text("(checked by the cluster)")
    expect(check.locator('[data-krm-check="refused"]')).to_be_visible()
    page.screenshot(path="/tmp/checked-label-1280.png", full_page=True)
    editor.locator(".krm-action-save").click()
    expect(outcome.locator('[data-krm-outcome="invalid"]')).to_contain_text("Fix the marked fields", timeout=WAIT_MS)
    assert deployment(example).metadata.labels == before.metadata.labels

    label.fill("web")
    expect(check.locator('[data-krm-check="passed"]')).to_be_visible(timeout=WAIT_MS)
    editor.locator(".krm-action-save").click()
    expect(outcome.locator('[data-krm-outcome="saved"]')).to_be_visible(timeout=WAIT_MS)
    assert deployment(example).spec.replicas == wanted
    expect(check).to_be_empty(timeout=WAIT_MS)  # no unsaved changes: nothing left to check
    page.context.close()


def test_the_check_reads_well_on_a_phone(browser: Browser, example: Example) -> None:
    page = sign_in(browser, example, "editor", viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
    editor = open_deployment(page)
    editor.get_by_label("Replicas", exact=True).fill("-1")
    expect(field_error(editor, "/spec/replicas")).to_contain_text(NEGATIVE, timeout=WAIT_MS)
    page.screenshot(path="/tmp/checked-replicas-390.png", full_page=True)
    assert int(page.evaluate("document.documentElement.scrollWidth")) <= PHONE["width"]
    editor.get_by_role("button", name="Undo changes to Replicas").click()
    expect(editor.locator(".krm-check")).to_be_empty(timeout=WAIT_MS)
    page.context.close()


def test_a_person_who_may_only_read_sees_no_save_and_a_forged_save_is_403(browser: Browser, example: Example) -> None:
    page = sign_in(browser, example, "viewer", viewport={"width": 1280, "height": 900})
    editor = open_deployment(page)
    expect(editor.locator(".krm-action-save")).to_have_count(0)
    expect(editor.locator("input.krm-input")).to_have_count(0)
    expect(editor.get_by_role("button", name="Remove")).to_have_count(0)
    page.screenshot(path="/tmp/checked-viewer-1280.png", full_page=True)
    component = editor.get_attribute("id")
    headers = json.loads(editor.get_attribute("hx-headers:inherited") or "{}")
    before = deployment(example).metadata.resource_version
    forged = page.request.post(f"/krm/ui/components/{component}/actions/save", headers=headers, form={})
    assert forged.status == 403, forged.text()
    assert deployment(example).metadata.resource_version == before
    page.context.close()
