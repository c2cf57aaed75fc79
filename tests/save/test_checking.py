"""Save over Flask with the cluster's check of the draft (``dryRun=All``) first, counted at the simulator.

Every PATCH the simulator admits for the object is counted, dry runs apart (:mod:`.counting`): a
dry run never changes the stored object, and every Save sends its write once at most.
"""

from __future__ import annotations

import html
import typing as t

from flask import Flask

from flask_krm.save.audit import AuditRecord
from flask_krm.save.audit_events import audit_event
from flask_krm.save.checking import CHECK_REFUSED_REASON, REFUSED_BEFORE_SAVE
from flask_krm.save.publish import write_attempted
from flask_krm.testing.simulator import KubeSimulator, WriteRequest
from flask_krm.testing.simulator.errors import bad_request
from tests.ui.conftest import field_id

from .conftest import unconditional_patch
from .counting import counting_patches
from .test_editor import app as app  # noqa: PLC0414 - the fixture, by its name
from .test_editor import client_for, kube_object, open_editor, outcome_kind, post_save
from .test_editor import configmap as configmap  # noqa: PLC0414

BAD_LABEL = "not valid!"
WEBHOOK_DENIED = 'admission webhook "policy.example.com" denied the request'
WEBHOOK_RULE = '"a" may not be "forbidden"'


def _version(kube: KubeSimulator, namespace: str) -> str:
    return str(kube_object(kube, namespace, "app")["metadata"]["resourceVersion"])


def test_a_save_the_cluster_refuses_writes_nothing_until_the_draft_is_fixed(
    app: Flask, kube: KubeSimulator, namespace: str, upstream: t.Any, configmap: dict[str, t.Any]
) -> None:
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
    cid = page.component_ids[0]
    before = _version(kube, namespace)
    with counting_patches(kube, "app") as patches:
        added = page.edit(cid, op="add_key", path='["metadata", "labels"]', key="tier", value=BAD_LABEL)
        assert added.status_code == 200
        refused = post_save(page)
        body = refused.get_data(as_text=True)
        assert refused.status_code == 422 and outcome_kind(refused) == "invalid"
        assert REFUSED_BEFORE_SAVE in body
        assert "consist of alphanumeric characters" in body  # Kubernetes' own words, at the field
        assert f'hx-target="#{field_id(cid, ("metadata", "labels"), "-error")}"' in body
        assert patches.counts == (1, 0)
        again = post_save(page)  # the same draft: the kept check answers, nothing is sent
        assert again.status_code == 422 and patches.counts == (1, 0)
        assert _version(kube, namespace) == before
        assert page.edit(cid, op="set", path='["metadata", "labels", "tier"]', value="web").status_code == 200
        saved = post_save(page)
        assert saved.status_code == 200 and outcome_kind(saved) == "saved-pending"
        assert patches.counts == (2, 1)  # one check of the new draft, then its one write
    assert kube_object(kube, namespace, "app")["metadata"]["labels"] == {"tier": "web"}


def test_a_conflict_in_the_check_is_no_refusal_and_the_save_flow_recovers(
    app: Flask, kube: KubeSimulator, namespace: str, upstream: t.Any, configmap: dict[str, t.Any]
) -> None:
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
    cid = page.component_ids[0]
    assert page.edit(cid, op="set", path='["data", "a"]', value="mine").status_code == 200
    unconditional_patch(kube, f"/api/v1/namespaces/{namespace}/configmaps/app", {"data": {"b": "colleague"}})
    with counting_patches(kube, "app") as patches:
        stale = post_save(page)
        assert stale.status_code == 409 and outcome_kind(stale) == "version-stale"
        assert REFUSED_BEFORE_SAVE not in stale.get_data(as_text=True)
        assert patches.counts == (1, 1)  # the check saw 409; the Save's one write saw it too, then read
        saved = post_save(page)
        assert outcome_kind(saved) == "saved-pending"
        assert patches.counts == (2, 2)  # the new base is checked once and written once
    assert kube_object(kube, namespace, "app")["data"] == {"a": "mine", "b": "colleague"}


def test_an_admission_webhooks_refusal_is_shown_and_only_dry_runs_see_it(
    app: Flask, kube: KubeSimulator, namespace: str, upstream: t.Any, configmap: dict[str, t.Any]
) -> None:
    seen: list[bool] = []

    def webhook(request: WriteRequest) -> None:
        if request.name == "app" and request.verb == "patch":
            seen.append(request.dry_run)
            if (request.new.get("data") or {}).get("a") == "forbidden":
                raise bad_request(f"{WEBHOOK_DENIED}: {WEBHOOK_RULE}")

    assert kube.faults is not None
    remove = kube.faults.mutate_writes(webhook)
    try:
        page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
        assert page.edit(page.component_ids[0], op="set", path='["data", "a"]', value="forbidden").status_code == 200
        refused = post_save(page)
        assert refused.status_code == 422
        body = html.unescape(refused.get_data(as_text=True))
        assert f"{WEBHOOK_DENIED}: {WEBHOOK_RULE}" in body
    finally:
        remove()
    assert seen == [True]
    assert kube_object(kube, namespace, "app")["data"]["a"] == "1"


def test_with_the_check_turned_off_no_dry_run_is_sent(
    app: Flask, kube: KubeSimulator, namespace: str, upstream: t.Any, configmap: dict[str, t.Any]
) -> None:
    app.config["KRM_DRY_RUN"] = False
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
    cid = page.component_ids[0]
    with counting_patches(kube, "app") as patches:
        added = page.edit(cid, op="add_key", path='["metadata", "labels"]', key="tier", value=BAD_LABEL)
        assert added.status_code == 200
        refused = post_save(page)
        assert refused.status_code == 422 and REFUSED_BEFORE_SAVE not in refused.get_data(as_text=True)
        assert patches.counts == (0, 1)  # Kubernetes refused the write itself


def test_a_person_who_may_not_patch_gets_no_check_and_a_forged_save_is_403(
    app: Flask, kube: KubeSimulator, namespace: str, upstream: t.Any, configmap: dict[str, t.Any]
) -> None:
    page = open_editor(client_for(app, "viewer"), upstream, kube, namespace, "app")
    with counting_patches(kube, "app") as patches:
        forged = post_save(page)
        assert forged.status_code == 403 and outcome_kind(forged) == "access-denied"
        assert patches.counts == (0, 0)


def test_a_save_the_check_refuses_is_audited_like_a_hooks_refusal(
    app: Flask, kube: KubeSimulator, namespace: str, upstream: t.Any, configmap: dict[str, t.Any]
) -> None:
    page = open_editor(client_for(app, "editor"), upstream, kube, namespace, "app")
    cid = page.component_ids[0]
    added = page.edit(cid, op="add_key", path='["metadata", "labels"]', key="tier", value=BAD_LABEL)
    assert added.status_code == 200
    records: list[AuditRecord] = []
    with write_attempted.connected_to(lambda sender, **kw: records.append(kw["record"])):
        refused = post_save(page)
        assert refused.status_code == 422
        assert post_save(page).status_code == 422  # the kept check refuses again: audited again
    assert len(records) == 2
    record = records[0]
    assert (record.principal, record.operation, record.outcome) == ("editor", "patch", "invalid")
    assert record.identity.uid == configmap["metadata"]["uid"] and record.identity.name == "app"
    assert record.fields == ("/metadata/labels",) and record.call is None and record.resource_version is None
    assert record.reason is not None and record.reason.startswith(CHECK_REFUSED_REASON)
    assert "metadata.labels: " in record.reason and "consist of alphanumeric characters" in record.reason
    event = audit_event(record, now=0.0)
    assert event["responseStatus"] == {"metadata": {}, "code": 0, "status": "Failure", "reason": "invalid"}
