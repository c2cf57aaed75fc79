"""``fieldValidation``: unknown fields warned about by default, ignored, or refused (400 on create and update, 422 on patch)."""

from __future__ import annotations

from typing import Any

import kubernetes.client
import pytest

from .kube import MERGE_PATCH, configmap, request

JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
DIRECTIVES = 'supported values: "", "Ignore", "Strict", "Warn"'


def _warnings(reply: Any) -> list[str]:
    return list(reply.headers.getlist("Warning"))


@pytest.mark.parametrize(
    ("method", "kind", "suffix"),
    [("POST", "CreateOptions", ""), ("PUT", "UpdateOptions", "/a"), ("PATCH", "PatchOptions", "/a")],
    ids=["create", "update", "patch"],
)
def test_unknown_directives_are_invalid(
    admin: kubernetes.client.ApiClient, namespace: str, method: str, kind: str, suffix: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    assert request(admin, "POST", path, body=configmap("a")).status == 201
    body: Any = {"data": {"k": "v"}} if method == "PATCH" else configmap("a", {"k": "v"})
    reply = request(
        admin,
        method,
        path + suffix,
        body=body,
        query=[("fieldValidation", "strict")],
        content_type=MERGE_PATCH if method == "PATCH" else "application/json",
    )
    assert reply.status == 422
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{kind}.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": {DIRECTIVES}',
        "reason": "Invalid",
        "details": {
            "group": "meta.k8s.io",
            "kind": kind,
            "causes": [
                {
                    "reason": "FieldValueNotSupported",
                    "message": f'Unsupported value: "strict": {DIRECTIVES}',
                    "field": "fieldValidation",
                }
            ],
        },
        "code": 422,
    }


def test_strict_create_and_update_are_bad_requests(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    body = {"metadata": {"name": "a", "colour": "blue"}, "data": {"k": "v"}, "extra": True}
    created = request(admin, "POST", path, body=body, query=[("fieldValidation", "Strict")])
    assert created.status == 400
    assert created.body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        'strict decoding error: unknown field "metadata.colour", unknown field "extra"'
    )
    assert request(admin, "GET", f"{path}/a").status == 404
    assert request(admin, "POST", path, body=configmap("a")).status == 201
    updated = request(
        admin, "PUT", f"{path}/a", body={"metadata": {"name": "a"}, "extra": 1}, query=[("fieldValidation", "Strict")]
    )
    assert updated.status == 400
    assert (
        updated.body["message"]
        == 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "extra"'
    )


def test_unknown_fields_are_dropped_with_a_warning_by_default(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    labels = {"app": "web"}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "colour": "blue"}]},
            },
        },
    }
    reply = request(admin, "POST", path, body=body)
    assert reply.status == 201
    assert _warnings(reply) == ['299 - "unknown field \\"spec.template.spec.containers[0].colour\\""']
    assert "colour" not in reply.body["spec"]["template"]["spec"]["containers"][0]
    ignored = request(
        admin, "POST", path, body={**body, "metadata": {"name": "quiet"}}, query=[("fieldValidation", "Ignore")]
    )
    assert ignored.status == 201 and _warnings(ignored) == []


@pytest.mark.parametrize(
    ("content_type", "patch", "shown"),
    [
        (MERGE_PATCH, {"extra": 1}, "json"),
        (JSON_PATCH, [{"op": "add", "path": "/extra", "value": 1}], "json"),
        (STRATEGIC_MERGE_PATCH, {"extra": 1}, "map[extra:1]"),
    ],
    ids=["merge", "json", "strategic"],
)
def test_strict_patch_is_invalid(
    admin: kubernetes.client.ApiClient, namespace: str, content_type: str, patch: Any, shown: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    assert request(admin, "POST", path, body=configmap("a", {"k": "v"})).status == 201
    reply = request(
        admin, "PATCH", f"{path}/a", body=patch, content_type=content_type, query=[("fieldValidation", "Strict")]
    )
    assert reply.status == 422
    assert reply.body["reason"] == "Invalid" and reply.body["details"]["causes"][0]["field"] == "patch"
    assert reply.body["message"].startswith(' "" is invalid: patch: Invalid value: "')
    assert reply.body["message"].endswith('": strict decoding error: unknown field "extra"')
    if shown != "json":
        assert (
            reply.body["details"]["causes"][0]["message"]
            == f'Invalid value: "{shown}": strict decoding error: unknown field "extra"'
        )
    warned = request(admin, "PATCH", f"{path}/a", body=patch, content_type=content_type)
    assert warned.status == 200 and _warnings(warned) == ['299 - "unknown field \\"extra\\""']


def test_custom_resources_check_their_top_level_and_metadata(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    path = f"/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders"
    body = {
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": "f"},
        "spec": {"kept": 1},
        "extra": 2,
    }
    strict = request(admin, "POST", path, body=body, query=[("fieldValidation", "Strict")])
    assert strict.status == 400
    assert strict.body["message"].endswith('strict decoding error: unknown field "extra"')
    warned = request(admin, "POST", path, body=body)
    assert warned.status == 201 and _warnings(warned) == ['299 - "unknown field \\"extra\\""']
    assert warned.body["spec"] == {"kept": 1} and "extra" not in warned.body
