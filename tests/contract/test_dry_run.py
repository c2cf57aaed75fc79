"""``dryRun=All``: writes are validated and answered as if done, and nothing is stored or watched."""

from __future__ import annotations

from typing import Any

import kubernetes.client
import pytest

from flask_krm.save.checks import CheckResult, CheckVerdict, classify_check, draft_key
from flask_krm.save.writer import KubeWriter
from flask_krm.scope import Scope
from flask_krm.upstream.authz import self_access_allowed
from flask_krm.upstream.clients import ActingApiClient, Impersonation

from .kube import MERGE_PATCH, configmap, request, watch

DRY = [("dryRun", "All")]


@pytest.fixture
def created(admin: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    reply = request(admin, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap("a", {"k": "v"}))
    assert reply.status == 201
    return reply.body  # type: ignore[no-any-return]


def _configmaps(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps"


def test_dry_run_create(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    reply = request(admin, "POST", _configmaps(namespace), query=DRY, body=configmap("dry", {"k": "v"}))
    assert reply.status == 201
    metadata = reply.body["metadata"]
    assert metadata["name"] == "dry" and metadata["namespace"] == namespace
    assert metadata["uid"] and metadata["creationTimestamp"]
    assert "resourceVersion" not in metadata
    assert reply.body["data"] == {"k": "v"}
    assert request(admin, "GET", f"{_configmaps(namespace)}/dry").status == 404
    generated = request(admin, "POST", _configmaps(namespace), query=DRY, body={"metadata": {"generateName": "dry-"}})
    assert generated.status == 201 and generated.body["metadata"]["name"].startswith("dry-")
    typed = kubernetes.client.CoreV1Api(admin).create_namespaced_config_map(
        namespace, configmap("typed"), dry_run="All"
    )
    assert typed.metadata.name == "typed" and typed.metadata.resource_version is None


def test_dry_run_create_is_validated(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    exists = request(admin, "POST", _configmaps(namespace), query=DRY, body=configmap("a"))
    assert exists.status == 409 and exists.body["reason"] == "AlreadyExists"
    bad_name = request(admin, "POST", _configmaps(namespace), query=DRY, body=configmap("Not_A_Name"))
    assert bad_name.status == 422 and bad_name.body["details"]["causes"][0]["field"] == "metadata.name"


def test_dry_run_patch_and_update(admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]) -> None:
    path = f"{_configmaps(namespace)}/a"
    version = created["metadata"]["resourceVersion"]
    patched = request(admin, "PATCH", path, query=DRY, body={"data": {"k": "patched"}}, content_type=MERGE_PATCH)
    assert patched.status == 200 and patched.body["data"] == {"k": "patched"}
    assert patched.body["metadata"]["resourceVersion"] == version
    replaced = request(admin, "PUT", path, query=DRY, body={**created, "data": {"only": "this"}})
    assert replaced.status == 200 and replaced.body["data"] == {"only": "this"}
    assert replaced.body["metadata"]["resourceVersion"] == version
    current = request(admin, "GET", path).body
    assert current["data"] == {"k": "v"} and current["metadata"]["resourceVersion"] == version


def test_dry_run_delete(admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]) -> None:
    path = f"{_configmaps(namespace)}/a"
    reply = request(admin, "DELETE", path, query=DRY)
    assert reply.status == 200
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "a", "kind": "configmaps", "uid": created["metadata"]["uid"]},
    }
    assert request(admin, "GET", path).status == 200
    in_body = request(admin, "DELETE", path, body={"apiVersion": "v1", "kind": "DeleteOptions", "dryRun": ["All"]})
    assert in_body.status == 200 and request(admin, "GET", path).status == 200


def test_dry_run_delete_of_an_object_with_finalizers(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    held = request(admin, "POST", _configmaps(namespace), body=configmap("held", finalizers=["example.com/hold"])).body
    path = f"{_configmaps(namespace)}/held"
    reply = request(admin, "DELETE", path, query=DRY)
    assert reply.status == 200
    assert reply.body["metadata"]["deletionTimestamp"] and reply.body["metadata"]["deletionGracePeriodSeconds"] == 0
    assert reply.body["metadata"]["resourceVersion"] == held["metadata"]["resourceVersion"]
    assert "deletionTimestamp" not in request(admin, "GET", path).body["metadata"]
    assert (
        request(admin, "PATCH", path, body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH).status == 200
    )


def test_dry_run_delete_of_a_namespace(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    reply = request(admin, "DELETE", f"/api/v1/namespaces/{namespace}", query=DRY)
    assert reply.status == 200
    assert reply.body["status"] == {"phase": "Terminating"} and reply.body["metadata"]["deletionTimestamp"]
    assert request(admin, "GET", f"/api/v1/namespaces/{namespace}").body["status"] == {"phase": "Active"}


def test_dry_runs_emit_no_events(admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]) -> None:
    path = _configmaps(namespace)
    with watch(admin, path, resourceVersion=created["metadata"]["resourceVersion"]) as events:
        assert request(admin, "POST", path, query=DRY, body=configmap("dry")).status == 201
        assert (
            request(
                admin, "PATCH", f"{path}/a", query=DRY, body={"data": {"k": "dry"}}, content_type=MERGE_PATCH
            ).status
            == 200
        )
        assert request(admin, "DELETE", f"{path}/a", query=DRY).status == 200
        real = request(admin, "PATCH", f"{path}/a", body={"data": {"k": "real"}}, content_type=MERGE_PATCH).body
        event = events.next()
    assert event["type"] == "MODIFIED" and event["object"]["data"] == {"k": "real"}
    assert event["object"]["metadata"]["resourceVersion"] == real["metadata"]["resourceVersion"]


@pytest.mark.parametrize(
    ("method", "kind", "value"),
    [
        ("POST", "CreateOptions", "Bogus"),
        ("POST", "CreateOptions", ""),
        ("PATCH", "PatchOptions", "Bogus"),
        ("PUT", "UpdateOptions", "all"),
        ("DELETE", "DeleteOptions", "Bogus"),
    ],
)
def test_unsupported_dry_run_values(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any], method: str, kind: str, value: str
) -> None:
    path = _configmaps(namespace) if method == "POST" else f"{_configmaps(namespace)}/a"
    body = {"PATCH": {"data": {"k": "x"}}, "POST": configmap("b"), "PUT": created, "DELETE": None}[method]
    reply = request(
        admin,
        method,
        path,
        query=[("dryRun", value)],
        body=body,
        content_type=MERGE_PATCH if method == "PATCH" else "application/json",
    )
    assert reply.status == 422
    detail = f'Unsupported value: ["{value}"]: supported values: "All"'
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{kind}.meta.k8s.io "" is invalid: dryRun: {detail}',
        "reason": "Invalid",
        "details": {
            "group": "meta.k8s.io",
            "kind": kind,
            "causes": [{"reason": "FieldValueNotSupported", "message": detail, "field": "dryRun"}],
        },
        "code": 422,
    }
    assert (
        request(admin, "GET", f"{_configmaps(namespace)}/a").body["metadata"]["resourceVersion"]
        == created["metadata"]["resourceVersion"]
    )


# ---- a draft's check by the cluster, as flask-krm sends it (flask_krm.save.checks) ----------


def _deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


def test_a_drafts_check_names_the_fields_kubernetes_refuses_and_stores_nothing(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    created = request(admin, "POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", body=_deployment("web"))
    assert created.status == 201, created.body
    metadata = created.body["metadata"]
    uid, version = metadata["uid"], metadata["resourceVersion"]
    scope = Scope(target="t", group="apps", version="v1", resource="deployments", namespace=namespace, name="web")
    writer = KubeWriter(admin)

    def check(patch: dict[str, Any], resource_version: str = version) -> CheckResult:
        answer = writer.patch(scope, patch, uid=uid, resource_version=resource_version, dry_run=True)
        return classify_check(draft_key(uid, patch), resource_version, answer.code, answer.status)

    negative = check({"spec": {"replicas": -1}})
    assert negative.verdict is CheckVerdict.REFUSED
    assert [(c.field, c.path) for c in negative.causes] == [("spec.replicas", ("spec", "replicas"))]
    assert "must be greater than or equal to 0" in (negative.causes[0].message or "")
    label = check({"metadata": {"labels": {"app": "not valid!"}}})
    assert label.verdict is CheckVerdict.REFUSED
    assert {c.field for c in label.causes} >= {"metadata.labels"}
    assert any("a valid label must be" in (c.message or "") for c in label.causes)
    assert check({"spec": {"replicas": 3}}).verdict is CheckVerdict.PASSED
    assert check({"spec": {"replicas": 3}}, resource_version="1").verdict is CheckVerdict.STALE
    stored = request(admin, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web").body
    assert stored["metadata"]["resourceVersion"] == version and stored["spec"]["replicas"] == 1


def test_a_self_subject_access_review_through_impersonation_answers_for_that_user(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    scope = Scope(target="t", version="v1", resource="configmaps", namespace=namespace, name="a")
    as_viewer = ActingApiClient(admin, Impersonation("viewer"))
    assert self_access_allowed(as_viewer, scope, "get")
    assert not self_access_allowed(as_viewer, scope, "patch")
    assert self_access_allowed(
        ActingApiClient(admin, Impersonation("admin", groups=("system:masters",))), scope, "patch"
    )
