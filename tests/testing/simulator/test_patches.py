"""The simulator's patch engines directly (the contract suite checks them against kube-apiserver),
and apply's refusal."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import kubernetes.client
import pytest

from flask_krm.testing.simulator import KubeSimulator
from flask_krm.testing.simulator.catalog import CONFIGMAPS
from flask_krm.testing.simulator.errors import ApiError
from flask_krm.testing.simulator.json_patch import PatchFailed, apply_json_patch
from flask_krm.testing.simulator.patch_meta import patch_meta
from flask_krm.testing.simulator.patches import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, patched_object
from flask_krm.testing.simulator.strategic_merge_patch import StrategicMergeError, strategic_merge
from tests.contract.kube import configmap, request

DEPLOYMENT = patch_meta("Deployment")


def _pod(containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": containers}}}}


def _names(result: dict[str, Any]) -> list[str]:
    return [container["name"] for container in result["spec"]["template"]["spec"]["containers"]]


def test_strategic_merge_leaves_its_inputs_alone() -> None:
    original = _pod([{"name": "a", "image": "1"}])
    patch = _pod([{"name": "a", "image": "2"}, {"name": "b", "image": "3"}])
    merged = strategic_merge(original, patch, DEPLOYMENT)
    assert _names(merged) == ["a", "b"] and merged["spec"]["template"]["spec"]["containers"][0]["image"] == "2"
    assert original == _pod([{"name": "a", "image": "1"}]) and len(patch["spec"]["template"]["spec"]["containers"]) == 2


def test_patch_items_keep_their_order_among_server_items() -> None:
    original = _pod([{"name": name} for name in "abcd"])
    merged = strategic_merge(original, _pod([{"name": "d"}, {"name": "x"}, {"name": "b"}]), DEPLOYMENT)
    assert _names(merged) == ["a", "c", "d", "x", "b"]  # as kube-apiserver v1.37 orders them


def test_lists_without_a_merge_strategy_are_replaced() -> None:
    original = {"metadata": {"name": "r"}, "rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]}
    assert strategic_merge(original, {"rules": [{"verbs": ["watch"]}]}, patch_meta("Role"))["rules"] == [
        {"verbs": ["watch"]}
    ]


def test_set_element_order_must_agree_with_the_patch() -> None:
    original = _pod([{"name": "a"}, {"name": "b"}])
    patch = {
        "spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "a"}], "containers": [{"name": "b"}]}}}
    }
    with pytest.raises(StrategicMergeError) as refused:
        strategic_merge(original, patch, DEPLOYMENT)
    assert refused.value.code == 500 and "doesn't match $setElementOrder list" in refused.value.message


def test_lists_of_lists_and_mixed_lists_are_refused() -> None:
    with pytest.raises(StrategicMergeError) as nested:
        strategic_merge({"metadata": {"finalizers": [["a"]]}}, {"metadata": {"finalizers": [["b"]]}}, DEPLOYMENT)
    assert (nested.value.code, nested.value.message) == (422, "lists of lists are not supported")
    with pytest.raises(StrategicMergeError) as mixed:
        strategic_merge({"metadata": {"finalizers": ["a"]}}, {"metadata": {"finalizers": [1]}}, DEPLOYMENT)
    assert mixed.value.code == 500 and mixed.value.message.startswith("list element types are not identical: ")


def test_merge_directive_in_a_list_is_refused() -> None:
    with pytest.raises(StrategicMergeError) as refused:
        strategic_merge(_pod([{"name": "a"}]), _pod([{"$patch": "merge"}]), DEPLOYMENT)
    assert refused.value.message == "merging lists cannot yet be specified in the patch"


def test_json_patch_leaves_its_input_alone_and_stops_at_the_first_failure() -> None:
    document = {"data": {"a": "1"}}
    with pytest.raises(PatchFailed):
        apply_json_patch(
            document, [{"op": "add", "path": "/data/b", "value": "2"}, {"op": "remove", "path": "/data/c"}]
        )
    assert document == {"data": {"a": "1"}}
    assert apply_json_patch(document, [{"op": "replace", "path": "", "value": {"other": True}}]) == {"other": True}


def test_json_patch_tells_numbers_from_booleans() -> None:
    with pytest.raises(PatchFailed):
        apply_json_patch({"spec": {"n": 1}}, [{"op": "test", "path": "/spec/n", "value": True}])
    with pytest.raises(PatchFailed):
        apply_json_patch({"spec": {"n": 1}}, [{"op": "test", "path": "/spec/n", "value": 1.0}])
    assert apply_json_patch({"spec": {"n": 1}}, [{"op": "test", "path": "/spec/n", "value": 1}]) == {"spec": {"n": 1}}


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
