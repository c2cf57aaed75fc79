"""Create, get and delete: server-set metadata, generateName, Status bodies of the usual failures."""

from __future__ import annotations

import re
from typing import Any

import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

from .kube import configmap, request, status_of, unique_name

FLUNDERS = ("wardle.example.com", "v1alpha1", "flunders")


def _deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


def test_create_sets_identity_version_and_timestamp(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    reply = request(admin, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body=configmap("a", {"k": "v"}))
    assert reply.status == 201
    created = reply.body
    assert created["kind"] == "ConfigMap" and created["apiVersion"] == "v1"
    metadata = created["metadata"]
    assert re.fullmatch(r"[0-9a-f-]{36}", metadata["uid"])
    assert re.fullmatch(r"[1-9][0-9]*", metadata["resourceVersion"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", metadata["creationTimestamp"])
    assert metadata["namespace"] == namespace
    assert "generation" not in metadata  # ConfigMaps have no generation
    fetched = request(admin, "GET", f"/api/v1/namespaces/{namespace}/configmaps/a").body
    assert fetched == created


def test_generation_starts_at_one_for_deployments_and_custom_resources(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    deployment = request(
        admin, "POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", body=_deployment("web")
    ).body
    assert deployment["metadata"]["generation"] == 1
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"]["type"] == "RollingUpdate"
    flunder = kubernetes.client.CustomObjectsApi(admin).create_namespaced_custom_object(
        *FLUNDERS[:2],
        namespace,
        FLUNDERS[2],
        {
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": "f"},
            "spec": {"reference": "x"},
        },
    )
    assert flunder["metadata"]["generation"] == 1
    assert flunder["spec"] == {"reference": "x"}


def test_generate_name(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(admin)
    first = core.create_namespaced_config_map(namespace, {"metadata": {"generateName": "gen-"}})
    second = core.create_namespaced_config_map(namespace, {"metadata": {"generateName": "gen-"}})
    assert re.fullmatch(r"gen-[a-z0-9]{5}", first.metadata.name)
    assert first.metadata.generate_name == "gen-"
    assert first.metadata.name != second.metadata.name


def test_missing_name_is_invalid(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    reply = request(admin, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body={"metadata": {}})
    assert reply.status == 422
    assert reply.body["reason"] == "Invalid"
    assert reply.body["details"]["causes"][0]["field"] == "metadata.name"


def test_not_found_status(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    with pytest.raises(ApiException) as caught:
        kubernetes.client.CoreV1Api(admin).read_namespaced_config_map("missing", namespace)
    status = status_of(caught.value)
    assert caught.value.status == 404
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "missing" not found',
        "reason": "NotFound",
        "details": {"name": "missing", "kind": "configmaps"},
        "code": 404,
    }
    reply = request(admin, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/missing")
    assert reply.body["message"] == 'deployments.apps "missing" not found'
    assert reply.body["details"] == {"name": "missing", "group": "apps", "kind": "deployments"}


def test_already_exists(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    core = kubernetes.client.CoreV1Api(admin)
    core.create_namespaced_config_map(namespace, configmap("dup"))
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map(namespace, configmap("dup"))
    status = status_of(caught.value)
    assert caught.value.status == 409 and status["reason"] == "AlreadyExists"
    assert status["message"] == 'configmaps "dup" already exists'


def test_create_in_a_missing_namespace(admin: kubernetes.client.ApiClient) -> None:
    missing = unique_name("nowhere")
    reply = request(admin, "POST", f"/api/v1/namespaces/{missing}/configmaps", body=configmap("a"))
    assert reply.status == 404
    assert reply.body["message"] == f'namespaces "{missing}" not found'


def test_delete_returns_success_status_and_the_object_is_gone(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(admin)
    created = core.create_namespaced_config_map(namespace, configmap("doomed"))
    result = core.delete_namespaced_config_map("doomed", namespace)
    assert result["kind"] == "Status" and result["status"] == "Success"
    assert result["details"] == {"name": "doomed", "kind": "configmaps", "uid": created.metadata.uid}
    assert request(admin, "GET", f"/api/v1/namespaces/{namespace}/configmaps/doomed").status == 404


def test_secret_string_data_is_folded_into_data(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    secret = request(
        admin,
        "POST",
        f"/api/v1/namespaces/{namespace}/secrets",
        body={"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}},
    ).body
    assert secret["data"] == {"password": "aHVudGVyMg=="}
    assert secret["type"] == "Opaque"
    assert "stringData" not in secret


def test_custom_resource_crud(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    custom = kubernetes.client.CustomObjectsApi(admin)
    body = {
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": "f"},
        "spec": {"reference": "a"},
    }
    custom.create_namespaced_custom_object(*FLUNDERS[:2], namespace, FLUNDERS[2], body)
    patched = custom.patch_namespaced_custom_object(
        *FLUNDERS[:2], namespace, FLUNDERS[2], "f", {"spec": {"reference": "b"}}
    )
    assert patched["spec"]["reference"] == "b" and patched["metadata"]["generation"] == 2
    listed = custom.list_namespaced_custom_object(*FLUNDERS[:2], namespace, FLUNDERS[2])
    assert listed["kind"] == "FlunderList"
    assert [item["kind"] for item in listed["items"]] == ["Flunder"]  # custom resources keep kind in lists
    deleted = custom.delete_namespaced_custom_object(*FLUNDERS[:2], namespace, FLUNDERS[2], "f")
    assert deleted["status"] == "Success"
