"""Every outcome of a Save, as the person sees it in the editor's outcome region of a real browser.

The application saves to a Kubernetes simulator running in this process, which lets a test change
the cluster as someone else, lose a response, restore a field the way a mutating webhook does, and
count the writes that reach it. Every wait is a Playwright condition, never a sleep.

Which controls are offered follows what Kubernetes lets the person do (the host impersonates them):
``viewer`` may read ConfigMaps but not patch, create or delete them and is shown no Save, Add,
Remove, Delete or create form, on the first paint and in every live update; ``editor`` is shown
all of them, on the same components.
"""

from __future__ import annotations

import json
import os
import typing as t
from collections.abc import Callable

import kubernetes.client
import pytest
from playwright.sync_api import Locator, Page, expect

from flask_krm.testing import KubeSimulator
from flask_krm.testing.simulator import WriteRequest
from flask_krm.testing.simulator.faults import Faults
from tests.browser.conftest import (
    MERGE_PATCH,
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
from tests.browser.save.conftest import SaveServer, SignedIn, WriteCounter, configmap_uid

pytestmark = pytest.mark.browser

CountWrites = Callable[[str], WriteCounter]

PENDING: t.Final = "Saved to Kubernetes; waiting for live confirmation."
SAVED: t.Final = "Saved. The live view shows your change."
STALE: t.Final = "Configuration refreshed. Your edits are intact; review and save again."
UNAVAILABLE: t.Final = "This configuration was removed. A replacement must be opened separately."

RECORD_OUTCOMES: t.Final = """() => {
    window.krmOutcomes = [];
    const region = document.querySelector(".krm-outcome");
    new MutationObserver(() => {
        const shown = region.querySelector(".krm-save-outcome");
        const kind = shown ? shown.getAttribute("data-krm-outcome") : null;
        if (kind && window.krmOutcomes[window.krmOutcomes.length - 1] !== kind) window.krmOutcomes.push(kind);
    }).observe(region, {childList: true, subtree: true, characterData: true});
}"""
"""Keeps every outcome kind the region shows, in order, in ``window.krmOutcomes``."""


def faults_of(kube: KubeSimulator) -> Faults:
    assert kube.faults is not None, "the simulator is not running"
    return kube.faults


def outcome(page: Page) -> Locator:
    return page.locator(".krm-outcome .krm-save-outcome")


def edit(page: Page, key: str, text: str) -> None:
    """Type ``text`` over the value of ``key`` and wait until the server holds it as a draft."""
    type_over(value_field(page, key), text)
    expect(dirty(page, key)).to_be_visible()
    expect(value_field(page, key)).not_to_have_attribute("data-krm-unsent", "")


def save(page: Page) -> None:
    page.get_by_role("button", name="Save", exact=True).click()


def open_editor(signed_in: SignedIn, path: str, user: str = "editor") -> Page:
    page = goto_live(signed_in(user), path)
    page.evaluate(RECORD_OUTCOMES)
    return page


def shown_outcomes(page: Page) -> list[str]:
    return t.cast(list[str], page.evaluate("window.krmOutcomes"))


def data_of(core: kubernetes.client.CoreV1Api, name: str) -> dict[str, str]:
    return dict(core.read_namespaced_config_map(name, NAMESPACE).data or {})


def test_a_save_is_pending_until_its_echo_confirms_it(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api, count_writes: CountWrites
) -> None:
    name = new_configmap(core, "echo", {"a": "one", "b": "one"})
    writes = count_writes(name)
    page = open_editor(signed_in, f"/configmaps/{name}")
    edit(page, "a", "mine")
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")
    expect(outcome(page)).to_have_text(SAVED)
    assert shown_outcomes(page) == ["saved-pending", "saved"]
    expect(dirty(page, "a")).to_have_count(0)
    expect(value_field(page, "a")).to_have_value("mine")
    assert data_of(core, name) == {"a": "mine", "b": "one"}
    assert writes.count() == 1


def deployment_body(name: str, replicas: int = 1) -> dict[str, t.Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


def test_a_write_the_view_never_showed_does_not_bounce_the_save(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api, count_writes: CountWrites
) -> None:
    name = unique("stale")
    apps.create_namespaced_deployment(NAMESPACE, t.cast(t.Any, deployment_body(name)))
    page = open_editor(signed_in, f"/deployments/{name}")
    replicas = page.get_by_label("Replicas", exact=True)
    type_over(replicas, "3")
    expect(replicas).not_to_have_attribute("data-krm-unsent", "")
    # A controller's status-only write: invisible under krm-spec/v1, so the version the editor holds
    # is older than the object's; the Save is based on the newest version that looks the same.
    apps.patch_namespaced_deployment_status(
        name, NAMESPACE, {"status": {"observedGeneration": 1, "replicas": 1}}, _content_type=MERGE_PATCH
    )
    writes = count_writes(name)
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")
    assert "version-stale" not in shown_outcomes(page)
    assert apps.read_namespaced_deployment(name, NAMESPACE).spec.replicas == 3
    assert writes.count() == 1, "one write, accepted"


def test_a_field_conflict_is_shown_at_the_field_and_nothing_is_written_until_it_is_resolved(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api, count_writes: CountWrites
) -> None:
    name = new_configmap(core, "conflict", {"a": "one", "b": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    edit(page, "a", "mine")
    patch_data(core, name, {"a": "theirs"})
    conflict = entry(page, "a").locator(".krm-conflict")
    expect(conflict).to_contain_text("theirs")
    writes = count_writes(name)
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "draft-conflict")
    link = outcome(page).locator(".krm-outcome-conflicts a")
    expect(link).to_have_text("/data/a")
    field_id = value_field(page, "a").get_attribute("id")
    expect(link).to_have_attribute("href", f"#{field_id}-field")
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "draft-conflict")
    assert writes.count() == 0 and data_of(core, name)["a"] == "theirs"
    conflict.get_by_role("button", name="Keep mine").click()
    expect(conflict).to_have_count(0)
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")
    assert data_of(core, name) == {"a": "mine", "b": "one"} and writes.count() == 1


def test_kubernetes_refusing_a_value_shows_the_cause_at_its_field(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api
) -> None:
    name = unique("invalid")
    apps.create_namespaced_deployment(NAMESPACE, t.cast(t.Any, deployment_body(name, replicas=2)))
    page = open_editor(signed_in, f"/deployments/{name}")
    replicas = page.get_by_label("Replicas", exact=True)
    type_over(replicas, "-1")
    expect(replicas).not_to_have_attribute("data-krm-unsent", "")
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "invalid")
    error = page.locator(f"#{replicas.get_attribute('id')}-error")
    expect(error).to_contain_text("must be greater than or equal to 0")
    expect(outcome(page).locator(".krm-outcome-causes a")).to_have_text("spec.replicas")
    expect(replicas).to_have_value("-1")
    type_over(replicas, "4")
    expect(replicas).not_to_have_attribute("data-krm-unsent", "")
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")
    expect(error).to_have_text("")
    assert apps.read_namespaced_deployment(name, NAMESPACE).spec.replicas == 4


def test_a_viewer_is_offered_no_save_is_refused_a_forged_one_and_keeps_the_edits(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api, count_writes: CountWrites
) -> None:
    name = new_configmap(core, "viewer", {"a": "one"})
    writes = count_writes(name)
    page = open_editor(signed_in, f"/configmaps/{name}", user="viewer")
    edit(page, "a", "mine")
    editor = page.locator("[data-krm-kind=editor]")
    expect(editor.get_by_role("button", name="Save", exact=True)).to_have_count(0)  # Kubernetes would refuse it
    headers = json.loads(editor.get_attribute("hx-headers:inherited") or "{}")
    forged = page.request.post(f"/krm/ui/components/{editor.get_attribute('id')}/actions/save", headers=headers)
    assert forged.status == 403, forged.text()
    assert "You do not have permission to make this change. Your edits are still here." in forged.text()
    expect(page.locator(".krm-conflict")).to_have_count(0)
    expect(value_field(page, "a")).to_have_value("mine")
    expect(dirty(page, "a")).to_be_visible()
    assert data_of(core, name) == {"a": "one"} and writes.count() == 0


def test_after_a_lost_response_the_next_save_reads_and_nothing_is_written_twice(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api, count_writes: CountWrites, kube: KubeSimulator
) -> None:
    name = new_configmap(core, "lost", {"a": "one"})
    writes = count_writes(name)
    page = open_editor(signed_in, f"/configmaps/{name}")
    edit(page, "a", "mine")
    faults_of(kube).lose_next_write_response()
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "unknown")
    expect(outcome(page).locator(".krm-outcome-message")).to_contain_text("may or may not have reached Kubernetes")
    assert writes.count() == 1
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")
    assert data_of(core, name) == {"a": "mine"}
    assert writes.count() == 1, "the second Save read the object; it did not send the patch again"


STALE_EDIT: t.Final = """async value => {
    const editor = document.querySelector("[data-krm-kind=editor]");
    const headers = JSON.parse(editor.getAttribute("hx-headers:inherited"));
    const body = new URLSearchParams({op: "set", path: '["data", "a"]', value});
    const response = await fetch(`/krm/ui/components/${editor.id}/edit`, {method: "POST", headers, body});
    return response.status;
}"""
"""Sends a field edit for ``/data/a`` as this page's editor would (a tab that did not update in time)."""


def removed_notice(page: Page) -> Locator:
    return page.locator(".krm-removed")


def expect_only_the_notice(page: Page) -> None:
    """An editor whose object is gone offers nothing to act on: no Save, no Discard, no tabs."""
    for control in (".krm-action-save", ".krm-action-discard", ".krm-tabs", ".krm-yaml-panel"):
        expect(page.locator(control)).to_have_count(1)
        expect(page.locator(control)).to_be_hidden()
    expect(removed_notice(page)).to_be_visible()


def save_sent_as_it_went(page: Page) -> None:
    """A Save clicked as the page learned the object was gone (the button was still there)."""
    page.locator(".krm-action-save").dispatch_event("click")


def test_a_deleted_object_is_unavailable_and_the_draft_is_offered_for_copy_out(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "deleted", {"a": "one", "b": "kept"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    edit(page, "a", "mine")
    core.delete_namespaced_config_map(name, NAMESPACE)
    expect(removed_notice(page)).to_contain_text("This configuration was deleted while you had unsaved changes.")
    expect(removed_notice(page).locator(".krm-recovery-copy")).to_contain_text('"a": "mine"')
    copy = removed_notice(page).locator(".krm-recovery-copy")
    expect(copy).to_contain_text('"b": "kept"')
    expect(copy).not_to_contain_text("resourceVersion")
    expect(removed_notice(page).locator(".krm-recovery-changed")).to_have_text("You changed /data/a.")
    expect_only_the_notice(page)
    save_sent_as_it_went(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "unavailable")
    expect(outcome(page).locator(".krm-outcome-message")).to_have_text(UNAVAILABLE)
    expect(outcome(page).locator(".krm-outcome-detail")).to_have_text(
        "Your unsaved changes are shown above, to copy out."
    )
    expect(page.locator(".krm-recovery-copy")).to_have_count(1)


def test_a_deletion_seen_on_the_yaml_tab_shows_the_notice_instead_of_the_yaml(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = new_configmap(core, "deleted-yaml", {"a": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    edit(page, "a", "mine")
    page.get_by_role("tab", name="YAML", exact=True).click()
    text = page.get_by_label(f"{name} as YAML", exact=True)
    expect(text).to_be_visible()
    core.delete_namespaced_config_map(name, NAMESPACE)
    expect(removed_notice(page)).to_contain_text("This configuration was deleted while you had unsaved changes.")
    expect(removed_notice(page).locator(".krm-recovery-copy")).to_contain_text('"a": "mine"')
    expect(text).to_be_hidden()
    expect_only_the_notice(page)
    if os.environ.get("KRM_SCREENSHOTS"):
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.screenshot(path=os.path.join(os.environ["KRM_SCREENSHOTS"], f"deleted-on-yaml-tab-{width}.png"))


def test_a_replacement_under_the_same_name_is_never_touched(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api, count_writes: CountWrites
) -> None:
    name = new_configmap(core, "replaced", {"a": "one"})
    hostile = '<img src=x onerror="window.pwned=1">'
    page = open_editor(signed_in, f"/configmaps/{name}")
    edit(page, "a", hostile)
    writes = count_writes(name)
    core.delete_namespaced_config_map(name, NAMESPACE)
    create_configmap(core, name, {"a": "new"})
    replacement = configmap_uid(core, name)
    expect(removed_notice(page)).to_contain_text("another object now has its name")
    expect(value_field(page, "a")).to_have_count(0)
    expect_only_the_notice(page)
    save_sent_as_it_went(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "unavailable")
    expect(outcome(page).locator(".krm-outcome-replacement")).to_contain_text(replacement)
    expect(removed_notice(page).locator(".krm-recovery-copy")).to_contain_text(
        f'"a": "{hostile.replace(chr(34), chr(92) + chr(34))}"'
    )
    assert page.evaluate("window.pwned") is None and page.locator(".krm-editor img").count() == 0
    assert data_of(core, name) == {"a": "new"} and writes.count() == 0
    assert page.evaluate(STALE_EDIT, "typed in a stale tab") == 404, (
        "an edit from this page never reaches the replacement"
    )
    page.reload()
    wait_live(page)
    expect(value_field(page, "a")).to_have_value("new")
    expect(dirty(page, "a")).to_have_count(0)
    expect(removed_notice(page)).to_have_count(0)


def test_a_webhook_restoring_the_field_leaves_no_echo_and_the_guarded_read_decides(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api, kube: KubeSimulator
) -> None:
    name = new_configmap(core, "webhook", {"a": "one", "b": "one"})

    def restore_a(write: WriteRequest) -> None:
        if write.verb == "patch" and write.name == name and write.old is not None:
            write.new["data"]["a"] = write.old["data"]["a"]

    page = open_editor(signed_in, f"/configmaps/{name}")
    edit(page, "a", "mine")
    remove = faults_of(kube).mutate_writes(restore_a)
    try:
        save(page)
        expect(outcome(page)).to_have_attribute("data-krm-outcome", "not-applied")
        assert shown_outcomes(page) == ["saved-pending", "not-applied"]
        expect(value_field(page, "a")).to_have_value("mine")
        expect(dirty(page, "a")).to_be_visible()
        assert data_of(core, name) == {"a": "one", "b": "one"}

        edit(page, "b", "two")  # the restore leaves a visible change now: its echo decides
        save(page)
        expect(outcome(page)).to_have_attribute("data-krm-outcome", "not-applied")
        expect(outcome(page).locator(".krm-outcome-message")).to_contain_text("does not show your change")
        expect(dirty(page, "b")).to_have_count(0)
        expect(dirty(page, "a")).to_be_visible()
        assert data_of(core, name) == {"a": "one", "b": "two"}
    finally:
        remove()
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")
    assert data_of(core, name) == {"a": "mine", "b": "two"}


class WriteGate:
    """Holds the simulator's writes to one object until released (a slow API server)."""

    def __init__(self, kube: KubeSimulator, name: str) -> None:
        import threading

        import gevent.event

        self._kube = kube
        self._name = name
        self._open: t.Any = kube.call(gevent.event.Event)  # made on the simulator's hub, where it is waited on
        self.reached = threading.Event()

    def __call__(self, write: WriteRequest) -> None:
        if write.verb == "patch" and write.name == self._name and not write.dry_run:  # a Save, not its check
            self.reached.set()
            self._open.wait(timeout=10)

    def release(self) -> None:
        self._kube.call(self._open.set)


def test_typing_during_a_save_is_kept(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api, kube: KubeSimulator
) -> None:
    name = new_configmap(core, "typing", {"a": "one", "b": "one"})
    page = open_editor(signed_in, f"/configmaps/{name}")
    edit(page, "a", "mine")
    gate = WriteGate(kube, name)
    remove = faults_of(kube).mutate_writes(gate)
    try:
        save(page)
        assert gate.reached.wait(timeout=10), "the save's PATCH did not reach the simulator"
        edit(page, "b", "typed while saving")
        type_over(value_field(page, "a"), "mine, and more")
        expect(value_field(page, "a")).not_to_have_attribute("data-krm-unsent", "")
    finally:
        gate.release()
        remove()
    # The write carried what Save captured; the later typing stayed in the draft. The same field
    # typed again makes the save's own echo a conflict there (the merge cannot tell it apart).
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "draft-conflict")
    assert data_of(core, name) == {"a": "mine", "b": "one"}
    expect(value_field(page, "b")).to_have_value("typed while saving")
    expect(dirty(page, "b")).to_be_visible()
    expect(value_field(page, "a")).to_have_value("mine, and more")
    entry(page, "a").get_by_role("button", name="Keep mine").click()
    expect(entry(page, "a").locator(".krm-conflict")).to_have_count(0)
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")
    assert data_of(core, name) == {"a": "mine, and more", "b": "typed while saving"}


def test_a_deleted_secret_offers_its_edits_but_never_its_values(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api, save_server: SaveServer
) -> None:
    import base64

    name = unique("secret")
    token = f"t0ken-{name}"
    body: dict[str, t.Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "labels": {"team": "a"}},
        "type": "Opaque",
        "data": {"token": base64.b64encode(token.encode()).decode()},
    }
    core.create_namespaced_secret(NAMESPACE, t.cast(t.Any, body))
    page = open_editor(signed_in, f"/secrets/{name}")
    edit(page, "team", "payments")
    core.delete_namespaced_secret(name, NAMESPACE)
    expect(removed_notice(page).locator(".krm-recovery-copy")).to_contain_text('"team": "payments"')
    traffic = save_server.traffic_bytes()
    assert f"/secrets/{name}".encode() in traffic and b"payments" in traffic
    for needle in (token, base64.b64encode(token.encode()).decode()):
        assert needle.encode() not in traffic
        assert needle not in page.content()


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
