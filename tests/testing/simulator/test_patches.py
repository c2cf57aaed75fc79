"""Patches by content type: a null patch of each kind, and apply's refusal of CBOR."""

from __future__ import annotations

from collections.abc import Iterator

import kubernetes.client
import pytest

from flask_krm.testing.simulator import KubeSimulator
from flask_krm.testing.simulator.catalog import CONFIGMAPS
from flask_krm.testing.simulator.errors import ApiError
from flask_krm.testing.simulator.patches import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, patched_object
from tests.contract.kube import configmap, request


def test_a_null_patch() -> None:
    """As kube-apiserver answers ``null``: nothing to do for JSON and strategic merge patches, 400 for a merge patch."""
    existing = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"}, "data": {"k": "v"}}
    assert patched_object(CONFIGMAPS, existing, JSON_PATCH, None) == existing
    assert patched_object(CONFIGMAPS, existing, STRATEGIC_MERGE_PATCH, None) == existing
    with pytest.raises(ApiError) as refused:
        patched_object(CONFIGMAPS, existing, MERGE_PATCH, None)
    assert (refused.value.code, refused.value.message) == (400, "Invalid JSON Patch")


@pytest.fixture(scope="module")
def admin() -> Iterator[kubernetes.client.ApiClient]:
    with KubeSimulator() as kube, kube.api_client() as client:
        request(client, "POST", "/api/v1/namespaces", body={"metadata": {"name": "p"}})
        request(client, "POST", "/api/v1/namespaces/p/configmaps", body=configmap("a", {"k": "v"}))
        yield client


def test_cbor_apply_is_refused_after_its_options_are_checked(admin: kubernetes.client.ApiClient) -> None:
    """The simulator applies YAML (and JSON) configurations only: a CBOR one is go-restful's 415."""
    reply = request(
        admin,
        "PATCH",
        "/api/v1/namespaces/p/configmaps/a",
        query=[("fieldManager", "me")],
        body=b"\xa0",
        content_type="application/apply-patch+cbor",
    )
    assert reply.status == 415 and reply.body["reason"] == "UnsupportedMediaType"
    assert reply.body["message"] == "415: Unsupported Media Type"
    assert request(admin, "GET", "/api/v1/namespaces/p/configmaps/a").body["data"] == {"k": "v"}
