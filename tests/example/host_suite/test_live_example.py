"""The example's editors through the pytest plugin's live clients, against the simulator."""

from __future__ import annotations

import typing as t

from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api

from flask_krm.testing import KubeSimulator
from flask_krm.testing.pytest_plugin import LiveClient

NAMESPACE: t.Final = "demo"
MERGE_PATCH: t.Final = "application/merge-patch+json"


def admin(kube: KubeSimulator) -> ApiClient:
    return kube.api_client("admin")


def test_the_deployment_editor_stays_quiet_while_the_rollout_moves_its_status(
    krm_client: t.Callable[[str], LiveClient], kube_simulator: KubeSimulator
) -> None:
    page = krm_client("editor").live(f"/namespaces/{NAMESPACE}/deployments/web")
    editor = page.editor().wait_live()
    page.wait_until(lambda: "krm-stream" in page.list_body("Live status"), what="the status list")
    quiet_editor, status_before = editor.body, page.list_body("Live status")
    assert kube_simulator.demo is not None
    kube_simulator.call(kube_simulator.demo.step)  # the controller writes status only
    page.wait_until(lambda: page.list_body("Live status") != status_before, what="the status to move")
    assert editor.body == quiet_editor  # krm-spec/v1: nothing the person sees in the editor changed

    with admin(kube_simulator) as api:  # a spec change does reach the editor
        AppsV1Api(api).patch_namespaced_deployment(
            "web", NAMESPACE, {"spec": {"replicas": 5}}, _content_type=MERGE_PATCH
        )
    editor.wait_until(lambda e: 'value="5"' in e.body, what="the new replica count")


def test_a_conflict_is_shown_at_the_field_and_resolved_by_keeping_mine(
    krm_client: t.Callable[[str], LiveClient], kube_simulator: KubeSimulator
) -> None:
    editor = krm_client("editor").live(f"/namespaces/{NAMESPACE}/configmaps/app-config").editor()
    assert editor.set("/data/greeting", "mine").status_code == 200
    with admin(kube_simulator) as api:
        CoreV1Api(api).patch_namespaced_config_map(
            "app-config", NAMESPACE, {"data": {"greeting": "theirs"}}, _content_type=MERGE_PATCH
        )
    editor.wait_until(lambda e: e.has_conflict, what="the conflict")
    assert "Changed by someone else while you were editing" in editor.text and "theirs" in editor.text
    assert editor.save().kind == "draft-conflict"  # unresolved conflicts are never written

    assert editor.edit("keep_mine", "/data/greeting").status_code == 200
    editor.wait_until(lambda e: not e.has_conflict, what="the resolution")
    assert editor.save().kind == "saved"
    with admin(kube_simulator) as api:
        assert CoreV1Api(api).read_namespaced_config_map("app-config", NAMESPACE).data["greeting"] == "mine"


def test_the_secret_page_shows_keys_never_values_and_saves_labels(
    krm_client: t.Callable[[str], LiveClient], kube_simulator: KubeSimulator
) -> None:
    client = krm_client("editor")
    page = client.live(f"/namespaces/{NAMESPACE}/secrets/db-credentials")
    editor = page.editor().wait_live()
    assert "password" in editor.text and "username" in editor.text
    assert "correct-horse-battery-staple" not in page.html
    assert editor.edit("add_key", "/metadata/labels", key="team", value="payments").status_code == 200
    assert editor.edit("set", "/data/password", value="leaked").status_code == 403  # values are not editable
    assert editor.save().kind == "saved"
    with admin(kube_simulator) as api:
        secret = CoreV1Api(api).read_namespaced_secret("db-credentials", NAMESPACE)
    assert secret.metadata.labels == {"team": "payments"}
    assert "correct-horse-battery-staple" not in editor.body
    audit = client.get("/audit").get_data(as_text=True)
    assert "Secret demo/db-credentials" in audit and "correct-horse-battery-staple" not in audit


def test_the_save_hook_refusal_keeps_the_draft(krm_client: t.Callable[[str], LiveClient]) -> None:
    editor = krm_client("editor").live(f"/namespaces/{NAMESPACE}/deployments/worker").editor()
    editor.set("/spec/replicas", 11)
    refused = editor.save()
    assert (refused.kind, refused.status_code) == ("refused", 422)
    assert refused.detail == "spec.replicas: at most 10 replicas may be set from this application"
    editor.wait_until(lambda e: 'value="11"' in e.body and "CHANGED" in e.text.upper(), what="the draft kept")


def test_a_viewer_can_neither_edit_nor_save(
    krm_client: t.Callable[[str], LiveClient], kube_simulator: KubeSimulator
) -> None:
    page = krm_client("viewer").live(f"/namespaces/{NAMESPACE}/configmaps/app-config")
    editor = page.editor().wait_live()
    assert "Read-only: your account may not change this object." in page.html
    assert editor.set("/data/greeting", "viewer was here").status_code == 403
    denied = editor.save()
    assert (denied.kind, denied.status_code) == ("access-denied", 403)
    with admin(kube_simulator) as api:
        assert CoreV1Api(api).read_namespaced_config_map("app-config", NAMESPACE).data["greeting"] == "hello"


def test_a_draft_survives_a_reload_and_is_shared_by_the_sessions_tabs_only(
    krm_client: t.Callable[[str], LiveClient],
) -> None:
    path = f"/namespaces/{NAMESPACE}/configmaps/feature-flags"
    client = krm_client("editor")
    first = client.live(path).editor()
    assert first.set("/data/dark-mode", "false").status_code == 200
    second_tab = client.live(path).editor().wait_live()
    assert 'value="false"' in second_tab.body and "CHANGED" in second_tab.text.upper()
    first.wait_until(lambda e: 'value="false"' in e.body, what="the first tab to show the draft")
    other_session = krm_client("editor").live(path).editor().wait_live()
    assert 'value="true"' in other_session.body and "CHANGED" not in other_session.text.upper()
