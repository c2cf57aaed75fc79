"""Create and delete: pending entries, one review list, one Save, Kubernetes categories kept."""

from __future__ import annotations

import html
import json
import re
import typing as t
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from flask import Flask, render_template_string

from flask_krm import KrmStream
from flask_krm.principal import Principal
from flask_krm.save.flow import SaveFlow
from flask_krm.save.outcomes import OutcomeKind
from flask_krm.save.perform import EditorTarget, save_review
from flask_krm.save.review import ReviewViews
from flask_krm.save.staging import CreatePolicy, Staging
from flask_krm.save.writer import KubeWriter, default_save
from flask_krm.scope import Scope
from flask_krm.testing.simulator import KubeSimulator
from tests.ui.conftest import PageHandle, Upstream, open_page

from .conftest import admin_delete, new_store, signing_in_app
from .test_perform import create_configmap

LIST_PAGE = (
    '{% import "krm/_macros.html" as krm %}<html><head>{{ krm_script() }}</head><body>'
    '{{ krm.list(scope, row_actions=[("Delete", "krm_review.delete")]) }}</body></html>'
)
CONFIGMAP_POLICY = CreatePolicy("v1", "ConfigMap", allowed=(("metadata", "name"), ("metadata", "labels"), ("data",)))


@pytest.fixture
def app(tmp_path: Path, kube: KubeSimulator, upstream: Upstream) -> Iterator[Flask]:
    app = signing_in_app(tmp_path, "review test secret")

    @app.get("/list")
    def listing() -> str:
        from flask import request

        return render_template_string(LIST_PAGE, scope=request.args["scope"])

    krm = KrmStream(
        app,
        authorizer=lambda principal, scope, projection, verb: (
            verb == "watch" or (principal.name != "viewer" and verb not in app.config.get("WITHDRAWN_VERBS", ()))
        ),
        client_loader=lambda target, principal: kube.api_client(principal.name),
    )
    krm.plug_source("dev", upstream.source, app)
    app.register_blueprint(ReviewViews(policies={("", "configmaps"): CONFIGMAP_POLICY}).blueprint())
    yield app
    krm.shutdown(app)


def open_list(app: Flask, upstream: Upstream, kube: KubeSimulator, namespace: str, user: str = "editor") -> PageHandle:
    client = app.test_client()
    client.get(f"/login/{user}")
    query = f"target=dev&version=v1&resource=configmaps&namespace={namespace}"
    listing = KubeWriter(kube.api_client("admin")).request("GET", f"/api/v1/namespaces/{namespace}/configmaps").body
    assert listing is not None
    upstream.snapshot(query, *[{"apiVersion": "v1", "kind": "ConfigMap", **item} for item in listing["items"]])
    return open_page(client, f"/list?scope={quote(query)}")


def post(page: PageHandle, action: str, **form: str) -> t.Any:
    return page.client.post(f"/krm/review/{page.component_ids[0]}/{action}", data=form, headers=page.headers)


def kube_names(kube: KubeSimulator, namespace: str) -> dict[str, str]:
    listing = KubeWriter(kube.api_client("admin")).request("GET", f"/api/v1/namespaces/{namespace}/configmaps").body
    assert listing is not None
    return {item["metadata"]["name"]: item["metadata"]["uid"] for item in listing["items"]}


def review_kinds(response: t.Any) -> list[str]:
    return re.findall(r'data-krm-review-kind="([a-z]+)"', response.get_data(as_text=True))


def test_a_create_is_staged_under_a_draft_id_then_saved_and_cleared(app, kube, namespace, upstream) -> None:
    page = open_list(app, upstream, kube, namespace)
    body = {"metadata": {"name": "fresh", "labels": {"team": "a"}}, "data": {"k": "v"}}
    staged = post(page, "create", body=json.dumps(body))
    assert staged.status_code == 200 and review_kinds(staged) == ["create"]
    draft_id = re.search(r'hx-vals=\'\{"key": "(draft-[^"]+)"\}\'', staged.get_data(as_text=True))
    assert draft_id, staged.get_data(as_text=True)
    assert "fresh" not in kube_names(kube, namespace)
    saved = post(page, "save")
    assert saved.status_code == 200 and review_kinds(saved) == []
    assert "fresh" in kube_names(kube, namespace)
    uid = kube_names(kube, namespace)["fresh"]
    assert uid != draft_id.group(1)


def test_a_create_outside_the_allowed_fields_is_refused_at_staging(app, kube, namespace, upstream) -> None:
    page = open_list(app, upstream, kube, namespace)
    refused = post(page, "create", body=json.dumps({"metadata": {"name": "x"}, "spec": {"replicas": 3}}))
    assert refused.status_code == 422 and review_kinds(refused) == []
    assert "spec/replicas: is not a field this form may set" in refused.get_data(as_text=True)
    assert post(page, "create", body="{not json").status_code == 400


def test_a_create_that_already_exists_keeps_its_409_and_stays_pending(app, kube, namespace, upstream) -> None:
    create_configmap(kube, namespace, "taken", {"a": "1"})
    page = open_list(app, upstream, kube, namespace)
    post(page, "create", body=json.dumps({"metadata": {"name": "taken"}}))
    saved = post(page, "save")
    assert saved.status_code == 409 and review_kinds(saved) == ["create"]
    assert 'data-krm-outcome="rejected"' in saved.get_data(as_text=True)


def test_a_delete_is_bound_to_the_selected_uid(app, kube, namespace, upstream) -> None:
    old_uid = create_configmap(kube, namespace, "app", {"a": "1"})["metadata"]["uid"]
    gone_uid = create_configmap(kube, namespace, "gone", {"a": "1"})["metadata"]["uid"]
    page = open_list(app, upstream, kube, namespace)
    assert post(page, "delete", uid="not-a-listed-uid").status_code == 404
    assert review_kinds(post(page, "delete", uid=old_uid)) == ["delete"]
    assert review_kinds(post(page, "delete", uid=gone_uid)) == ["delete", "delete"]
    assert admin_delete(kube, f"/api/v1/namespaces/{namespace}/configmaps/app")
    replacement = create_configmap(kube, namespace, "app", {"a": "replacement"})
    saved = post(page, "save")
    assert saved.status_code == 409
    names = kube_names(kube, namespace)
    assert names == {"app": replacement["metadata"]["uid"]}  # the replacement survived, "gone" was deleted
    assert review_kinds(saved) == ["delete"] and 'data-krm-outcome="unavailable"' in saved.get_data(as_text=True)
    discarded = post(page, "discard", key=old_uid)
    assert discarded.status_code == 200 and review_kinds(discarded) == []


def test_a_rows_delete_button_stages_the_delete_of_that_rows_object(app, kube, namespace, upstream) -> None:
    uids = {name: create_configmap(kube, namespace, name, {"a": "1"})["metadata"]["uid"] for name in ("keep", "drop")}
    page = open_list(app, upstream, kube, namespace)
    row = re.search(rf'<tr [^>]*data-krm-uid="{uids["drop"]}">.*?</tr>', page.html, re.S)
    assert row, page.html
    button = re.search(
        r"""<button [^>]*hx-post="([^"]+)"[^>]*hx-vals='([^']+)'[^>]*aria-label="Delete drop">Delete</button>""",
        row.group(0),
    )
    assert button, row.group(0)
    assert button.group(1) == f"/krm/review/{page.component_ids[0]}/delete"
    staged = page.client.post(button.group(1), data=json.loads(html.unescape(button.group(2))), headers=page.headers)
    assert staged.status_code == 200 and review_kinds(staged) == ["delete"]
    assert "drop" in staged.get_data(as_text=True) and "keep" not in staged.get_data(as_text=True)
    post(page, "save")
    assert kube_names(kube, namespace) == {"keep": uids["keep"]}


def test_the_review_links_to_the_blueprint_it_is_served_by(app, kube, namespace, upstream) -> None:
    views = ReviewViews(url_prefix="/other")
    app.register_blueprint(views.blueprint("other_review"))
    app.register_blueprint(views.blueprint("third_review"), url_prefix="/third")
    uid = create_configmap(kube, namespace, "cm", {"a": "1"})["metadata"]["uid"]
    page = open_list(app, upstream, kube, namespace)
    cid = page.component_ids[0]
    for prefix in ("/other", "/third"):
        body = page.client.post(f"{prefix}/{cid}/delete", data={"uid": uid}, headers=page.headers).get_data(
            as_text=True
        )
        assert f'hx-post="{prefix}/{cid}/save"' in body and f'hx-post="{prefix}/{cid}/discard"' in body


def test_a_viewer_cannot_stage_a_delete_or_a_create(app, kube, namespace, upstream) -> None:
    uid = create_configmap(kube, namespace, "app", {"a": "1"})["metadata"]["uid"]
    page = open_list(app, upstream, kube, namespace, user="viewer")
    deleting = post(page, "delete", uid=uid)
    assert deleting.status_code == 403 and review_kinds(deleting) == []
    assert "You do not have permission to make this change." in deleting.get_data(as_text=True)
    assert "You may not delete app." in deleting.get_data(as_text=True)
    creating = post(page, "create", body=json.dumps({"metadata": {"name": "fresh"}, "data": {"k": "v"}}))
    assert creating.status_code == 403 and review_kinds(creating) == []
    assert f"You may not create configmaps in {namespace}." in creating.get_data(as_text=True)
    assert review_kinds(page.client.get(f"/krm/review/{page.component_ids[0]}", headers=page.headers)) == []
    assert kube_names(kube, namespace) == {"app": uid}


def test_a_permission_withdrawn_after_staging_is_refused_at_save(app, kube, namespace, upstream) -> None:
    uid = create_configmap(kube, namespace, "app", {"a": "1"})["metadata"]["uid"]
    page = open_list(app, upstream, kube, namespace)
    assert post(page, "delete", uid=uid).status_code == 200
    app.config["WITHDRAWN_VERBS"] = ("delete",)
    denied = post(page, "save")
    assert denied.status_code == 403 and 'data-krm-outcome="access-denied"' in denied.get_data(as_text=True)
    assert kube_names(kube, namespace) == {"app": uid}


def test_writes_need_csrf_and_the_page(app, kube, namespace, upstream) -> None:
    page = open_list(app, upstream, kube, namespace)
    no_csrf = page.client.post(
        f"/krm/review/{page.component_ids[0]}/save", headers={k: v for k, v in page.headers.items() if "CSRF" not in k}
    )
    assert no_csrf.status_code == 400
    no_page = page.client.post(
        f"/krm/review/{page.component_ids[0]}/save", headers={k: v for k, v in page.headers.items() if "Page" not in k}
    )
    assert no_page.status_code == 404


def test_one_save_writes_deletes_creates_and_edits(kube, namespace, feeds) -> None:
    keep = create_configmap(kube, namespace, "keep", {"a": "1"})["metadata"]["uid"]
    drop = create_configmap(kube, namespace, "drop", {"a": "1"})["metadata"]["uid"]
    scope = Scope(target="dev", version="v1", resource="configmaps", namespace=namespace)
    store = new_store()
    feed = feeds(store, scope, kube.api_client("editor"))
    store.set_value(keep, ("data", "a"), "edited")
    store.set_value(drop, ("data", "a"), "edited-but-deleted")
    staging = Staging()
    staging.stage_create({"metadata": {"name": "new"}, "data": {"x": "y"}}, CONFIGMAP_POLICY, namespace=namespace)
    staging.stage_delete(drop, name="drop", namespace=namespace)
    flows: dict[str, SaveFlow] = {}
    target = EditorTarget(Principal("editor"), scope, "krm-full/v1", kube.api_client("editor"), default_save)
    results = save_review(
        target, store, staging, lambda uid: flows.setdefault(uid, SaveFlow(uid)), kind="ConfigMap", live=feed.live
    )
    assert [(r.item.kind, r.item.key) for r in results][::2] == [("delete", drop), ("edit", keep)]
    assert [r.outcome.kind for r in results][:2] == [OutcomeKind.DELETED, OutcomeKind.CREATED]
    assert results[2].outcome.kind in (OutcomeKind.SAVED_PENDING, OutcomeKind.SAVED)  # SAVED when the echo won
    assert staging.creates() == [] and staging.deletes() == []
    names = kube_names(kube, namespace)
    assert set(names) == {"keep", "new"}
    current = (
        KubeWriter(kube.api_client("admin")).request("GET", f"/api/v1/namespaces/{namespace}/configmaps/keep").body
    )
    assert current is not None and current["data"] == {"a": "edited"}
    not_live = save_review(
        target, store, staging, lambda uid: flows.setdefault(uid, SaveFlow(uid)), kind="ConfigMap", live=False
    )
    assert all(r.outcome.kind is OutcomeKind.RECONNECTING for r in not_live)
