"""The README's first command, end to end in headless Chromium.

The example is started exactly as ``make run`` starts it (``scripts/run-example``), on a free port.
The editor opens the Deployment editor, watches its live status move while someone else scales
the Deployment, edits the replica count, saves and sees the confirmed outcome; the viewer is told
it cannot change anything, and its forged requests are refused.
"""

from __future__ import annotations

import json
import re
import typing as t
from collections.abc import Iterator

import kubernetes.client
import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import ROOT, Example, start_example

pytestmark = pytest.mark.browser
WAIT_MS: t.Final = 15_000
NAMESPACE: t.Final = "demo"
DEPLOYMENT: t.Final = "web"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Example]:
    started = start_example([str(ROOT / "scripts" / "run-example"), "--port", "0"], tmp_path_factory.mktemp("run"))
    try:
        yield started
    finally:
        assert started.stop() == 0, started.stderr.read_text()[-4000:]


def sign_in(browser: Browser, example: Example, user: str) -> Page:
    page = browser.new_context(base_url=example.url).new_page()
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/sign-in"))
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", user)
    page.click("button[type=submit]")
    expect(page.locator("header.site .who strong")).to_have_text(user, timeout=WAIT_MS)
    return page


def ready_badge(page: Page) -> t.Any:
    """The ready/desired badge in the live status list beside the editor."""
    return page.locator(".krm-list .krm-badge", has_text="ready")


def save(page: Page, attempts: int = 5) -> str:
    """Press Save until the outcome is final, as the page asks the person to.

    Under ``krm-spec/v1`` the editor holds the resourceVersion of the last spec change; while the
    rollout still writes status, the first write can meet a newer version (409). The editor then
    answers ``version-stale`` ("Configuration refreshed... save again") with the draft intact.
    """
    outcome = page.locator(".krm-editor .krm-outcome [data-krm-outcome]")
    for _ in range(attempts):
        with page.expect_response(lambda r: r.url.endswith("/actions/save") and r.request.method == "POST") as answer:
            page.click(".krm-action-save")
        if answer.value.status != 409:
            break
        expect(outcome).to_have_attribute("data-krm-outcome", "version-stale", timeout=WAIT_MS)
        expect(page.locator(".krm-editor .krm-outcome")).to_contain_text("Your edits are intact")
    expect(outcome).to_have_attribute("data-krm-outcome", "saved", timeout=WAIT_MS)
    return outcome.get_attribute("data-krm-outcome") or ""


def test_the_banner_names_the_simulator_the_url_and_the_sign_ins(example: Example) -> None:
    text = "\n".join(example.banner)
    assert "embedded Kubernetes simulator" in text
    assert re.search(r"Open:\s+http://127\.0\.0\.1:\d+/", text)
    assert "editor / editor" in text and "viewer / viewer" in text
    assert not example.url.endswith(":0")


def test_an_editor_sees_the_rollout_live_and_saves_a_replica_count(browser: Browser, example: Example) -> None:
    page = sign_in(browser, example, "editor")
    page.goto(f"/namespaces/{NAMESPACE}/deployments/{DEPLOYMENT}")
    editor = page.locator(".krm-editor")
    expect(editor.locator(".krm-connection")).to_have_text("Live", timeout=WAIT_MS)
    replicas = page.get_by_role("spinbutton", name="Replicas", exact=True)
    expect(replicas).to_have_value("2", timeout=WAIT_MS)
    expect(ready_badge(page)).to_have_text("2/2 ready", timeout=WAIT_MS)

    with example.admin_api() as api:  # someone else scales the Deployment
        kubernetes.client.AppsV1Api(api).patch_namespaced_deployment(
            DEPLOYMENT, NAMESPACE, {"spec": {"replicas": 4}}, _content_type="application/merge-patch+json"
        )
    expect(replicas).to_have_value("4", timeout=WAIT_MS)  # the editor follows the spec
    expect(ready_badge(page)).to_have_text("3/4 ready", timeout=WAIT_MS)  # the status moves, live
    expect(ready_badge(page)).to_have_text("4/4 ready", timeout=WAIT_MS)

    replicas.fill("3")
    assert save(page) == "saved"
    expect(editor.locator(".krm-outcome")).to_contain_text("Saved. The live view shows your change.")
    expect(ready_badge(page)).to_have_text("3/3 ready", timeout=WAIT_MS)
    with example.admin_api() as api:
        assert kubernetes.client.AppsV1Api(api).read_namespaced_deployment(DEPLOYMENT, NAMESPACE).spec.replicas == 3

    page.goto("/audit")
    entry = page.locator("tr.audit-entry", has_text=f"Deployment {NAMESPACE}/{DEPLOYMENT}").first
    expect(entry).to_contain_text("editor")
    expect(entry).to_contain_text("replace /spec/replicas = 3")


def test_a_viewer_is_told_it_cannot_save_and_forged_requests_are_refused(browser: Browser, example: Example) -> None:
    page = sign_in(browser, example, "viewer")
    page.goto(f"/namespaces/{NAMESPACE}/deployments/{DEPLOYMENT}")
    editor = page.locator(".krm-editor")
    expect(editor.locator(".krm-connection")).to_have_text("Live", timeout=WAIT_MS)
    expect(page.locator("#read-only-notice")).to_contain_text("you cannot change anything")
    expect(editor.locator(".read-only")).to_contain_text("may not change this object")
    expect(editor.locator(".krm-action-save")).to_have_count(0)
    expect(page.get_by_role("spinbutton", name="Replicas", exact=True)).to_have_count(0)  # shown as text

    component = editor.get_attribute("id")
    headers = json.loads(editor.get_attribute("hx-headers:inherited") or "{}")
    assert component and set(headers) == {"X-KRM-CSRF", "X-KRM-Page"}
    save_url = f"/krm/ui/components/{component}/actions/save"

    forged_save = page.request.post(save_url, headers=headers)
    assert forged_save.status == 403
    assert "You do not have permission to make this change." in forged_save.text()

    forged_edit = page.request.post(
        f"/krm/ui/components/{component}/edit",
        headers=headers,
        form={"op": "set", "path": json.dumps(["spec", "replicas"]), "value": "9"},
    )
    assert forged_edit.status == 403
    assert "This field is read-only." in forged_edit.text()

    without_token = page.request.post(save_url, headers={"X-KRM-Page": headers["X-KRM-Page"]})
    assert without_token.status == 400

    with example.admin_api() as api:
        assert kubernetes.client.AppsV1Api(api).read_namespaced_deployment(DEPLOYMENT, NAMESPACE).spec.replicas != 9


def test_an_editor_creates_and_deletes_configmaps_through_one_review_list(browser: Browser, example: Example) -> None:
    page = sign_in(browser, example, "editor")
    page.goto(f"/namespaces/{NAMESPACE}")
    configmaps = page.locator(".krm-list", has=page.get_by_role("heading", name="ConfigMaps"))
    expect(configmaps.locator(".krm-connection")).to_have_text("Live", timeout=WAIT_MS)
    form = configmaps.locator("form.create-form")
    form.get_by_label("Name").fill("made-in-a-test")
    form.get_by_label("Key").fill("colour")
    form.get_by_label("Value").fill("teal")
    form.get_by_role("button", name="Add to review").click()
    review = configmaps.locator(".review")
    expect(review.locator("[data-krm-review-kind=create]")).to_contain_text("made-in-a-test", timeout=WAIT_MS)
    expect(form.get_by_label("Name")).to_have_value("")  # the form is ready for the next one

    configmaps.locator("tr", has_text="feature-flags").get_by_role("button", name="Delete").click()
    expect(review.locator("[data-krm-review-kind=delete]")).to_contain_text("feature-flags", timeout=WAIT_MS)
    assert configmaps.locator("tr", has_text="made-in-a-test").count() == 0  # nothing is written yet

    review.get_by_role("button", name="Save all").click()
    expect(configmaps.locator("tbody tr", has_text="made-in-a-test")).to_contain_text("teal", timeout=WAIT_MS)
    expect(configmaps.locator("tbody tr", has_text="feature-flags")).to_have_count(0, timeout=WAIT_MS)
    expect(review).to_contain_text("No pending changes.")
    with example.admin_api() as api:
        core = kubernetes.client.CoreV1Api(api)
        assert core.read_namespaced_config_map("made-in-a-test", NAMESPACE).data == {"colour": "teal"}
        names = [item.metadata.name for item in core.list_namespaced_config_map(NAMESPACE).items]
        assert "feature-flags" not in names

    page.goto("/audit")
    expect(page.locator("tr.audit-entry", has_text=f"ConfigMap {NAMESPACE}/made-in-a-test")).to_contain_text("Created")
    expect(page.locator("tr.audit-entry", has_text=f"ConfigMap {NAMESPACE}/feature-flags")).to_contain_text("Deleted")


def test_a_viewer_gets_no_create_form_and_no_delete_buttons(browser: Browser, example: Example) -> None:
    page = sign_in(browser, example, "viewer")
    page.goto(f"/namespaces/{NAMESPACE}")
    configmaps = page.locator(".krm-list", has=page.get_by_role("heading", name="ConfigMaps"))
    expect(configmaps.locator(".krm-connection")).to_have_text("Live", timeout=WAIT_MS)
    expect(configmaps.locator("tbody tr").first).to_be_visible()
    expect(configmaps.locator("form.create-form")).to_have_count(0)
    expect(configmaps.locator(".krm-row-action")).to_have_count(0)  # not drawn at all, not merely hidden
