"""PATCH content types beyond merge patch: JSON patch, strategic merge patch, and apply's options."""

from __future__ import annotations

from typing import Any

import kubernetes.client
import pytest

from .kube import configmap, request

JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
REJECTED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server rejected our request due to an error in our request",
    "reason": "Invalid",
    "details": {},
    "code": 422,
}


@pytest.fixture
def created(admin: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    reply = request(
        admin,
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        body=configmap("a", {"x": "1", "y": "2"}, labels={"app": "web"}),
    )
    assert reply.status == 201
    return reply.body  # type: ignore[no-any-return]


def _patch(admin: kubernetes.client.ApiClient, path: str, body: Any, content_type: str, **query: str) -> Any:
    return request(admin, "PATCH", path, body=body, content_type=content_type, query=query.items())


def _configmap(namespace: str, name: str = "a") -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps/{name}"


def _deployment(admin: kubernetes.client.ApiClient, namespace: str, pod_spec: dict[str, Any]) -> str:
    labels = {"app": "web"}
    body = {
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod_spec}},
    }
    reply = request(admin, "POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", body=body)
    assert reply.status == 201, reply.body
    return f"/apis/apps/v1/namespaces/{namespace}/deployments/web"


def _pod_spec(reply: Any) -> dict[str, Any]:
    assert reply.status == 200, reply.body
    return reply.body["spec"]["template"]["spec"]  # type: ignore[no-any-return]


# JSON patch (RFC 6902)


def test_json_patch_operations(admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]) -> None:
    operations = [
        {"op": "test", "path": "/data/x", "value": "1"},
        {"op": "add", "path": "/data/z", "value": "3"},
        {"op": "replace", "path": "/data/x", "value": "one"},
        {"op": "remove", "path": "/data/y"},
        {"op": "copy", "from": "/data/x", "path": "/data/copied"},
        {"op": "move", "from": "/data/z", "path": "/data/moved"},
        {"op": "add", "path": "/metadata/labels/tier", "value": "front"},
        {"op": "add", "path": "/metadata/annotations", "value": {"a/b": "c"}},
        {"op": "replace", "path": "/metadata/annotations/a~1b", "value": "escaped"},
    ]
    reply = _patch(admin, _configmap(namespace), operations, JSON_PATCH)
    assert reply.status == 200, reply.body
    assert reply.body["data"] == {"x": "one", "copied": "one", "moved": "3"}
    assert reply.body["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert reply.body["metadata"]["annotations"] == {"a/b": "escaped"}
    assert int(reply.body["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


def test_json_patch_array_indexes(admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]) -> None:
    path = _configmap(namespace)
    operations = [
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/b"]},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/d"},
        {"op": "add", "path": "/metadata/finalizers/0", "value": "example.com/a"},
        {"op": "add", "path": "/metadata/finalizers/-1", "value": "example.com/c"},
    ]
    reply = _patch(admin, path, operations, JSON_PATCH)
    assert reply.status == 200, reply.body
    assert reply.body["metadata"]["finalizers"] == ["example.com/a", "example.com/b", "example.com/d", "example.com/c"]
    out_of_range = _patch(admin, path, [{"op": "add", "path": "/metadata/finalizers/9", "value": "x"}], JSON_PATCH)
    assert (out_of_range.status, out_of_range.body) == (422, REJECTED)
    removed = _patch(
        admin,
        path,
        [
            {"op": "remove", "path": "/metadata/finalizers/-1"},
            {"op": "test", "path": "/metadata/finalizers/2", "value": "example.com/d"},
        ],
        JSON_PATCH,
    )
    assert removed.status == 200 and removed.body["metadata"]["finalizers"] == [
        "example.com/a",
        "example.com/b",
        "example.com/d",
    ]
    assert _patch(admin, path, [{"op": "remove", "path": "/metadata/finalizers"}], JSON_PATCH).status == 200


def test_a_failed_test_operation_changes_nothing(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    path = _configmap(namespace)
    operations = [
        {"op": "replace", "path": "/data/x", "value": "changed"},
        {"op": "test", "path": "/data/y", "value": "not 2"},
    ]
    reply = _patch(admin, path, operations, JSON_PATCH)
    assert (reply.status, reply.body) == (422, REJECTED)
    current = request(admin, "GET", path).body
    assert current["data"] == {"x": "1", "y": "2"}
    assert current["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "remove", "path": "/data/missing"},
        {"op": "replace", "path": "/missing/x", "value": "1"},
        {"op": "add", "path": "/data/x/deeper", "value": "1"},
        {"op": "move", "from": "/data/missing", "path": "/data/z"},
        {"op": "test", "path": "/data/x", "value": 1},
        {"op": "test", "path": "/data/x"},
        {"op": "frobnicate", "path": "/data/x"},
        {"op": "add", "path": "", "value": {}},
    ],
)
def test_json_patch_failures_are_all_alike(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any], operation: dict[str, Any]
) -> None:
    reply = _patch(admin, _configmap(namespace), [operation], JSON_PATCH)
    assert (reply.status, reply.body) == (422, REJECTED)


def test_json_patch_lenient_corners(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    """Kept from the JSON patch library kube-apiserver uses: replacing a missing key adds it; a missing key tests as null."""
    reply = _patch(
        admin,
        _configmap(namespace),
        [
            {"op": "replace", "path": "/data/new", "value": "added"},
            {"op": "test", "path": "/data/nothing", "value": None},
        ],
        JSON_PATCH,
    )
    assert reply.status == 200 and reply.body["data"] == {"x": "1", "y": "2", "new": "added"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([1], "error decoding patch: json: cannot unmarshal number into Go value of type handlers.jsonPatchOp"),
        (
            [{"op": 1, "path": "/data/x"}],
            "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string",
        ),
        (
            [{"op": "add", "path": ["data"]}],
            "error decoding patch: json: cannot unmarshal array into Go struct field jsonPatchOp.path of type string",
        ),
    ],
)
def test_undecodable_json_patches(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any], body: Any, message: str
) -> None:
    reply = _patch(admin, _configmap(namespace), body, JSON_PATCH)
    assert reply.status == 400
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "BadRequest",
        "code": 400,
    }


def test_json_patch_results_are_decoded_as_the_kind(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    reply = _patch(admin, _configmap(namespace), [{"op": "add", "path": "/data/n", "value": 5}], JSON_PATCH)
    assert reply.status == 422 and reply.body["reason"] == "Invalid"
    [cause] = reply.body["details"]["causes"]
    assert cause["field"] == "patch" and cause["reason"] == "FieldValueInvalid"
    assert cause["message"].endswith(
        '": json: cannot unmarshal number into Go struct field ConfigMap.data of type string'
    )


def test_json_patch_with_a_stale_resource_version(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    path = _configmap(namespace)
    assert _patch(admin, path, [{"op": "replace", "path": "/data/x", "value": "theirs"}], JSON_PATCH).status == 200
    stale = [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": created["metadata"]["resourceVersion"]},
        {"op": "replace", "path": "/data/x", "value": "mine"},
    ]
    reply = _patch(admin, path, stale, JSON_PATCH)
    assert reply.status == 409 and reply.body["reason"] == "Conflict"


def test_json_patch_of_a_custom_resource(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = f"/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders"
    body = {
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": "f"},
        "spec": {"ports": [{"name": "http", "port": 80}]},
    }
    assert request(admin, "POST", path, body=body).status == 201
    operations = [
        {"op": "add", "path": "/spec/reference", "value": "ref"},
        {"op": "replace", "path": "/spec/ports/0/port", "value": 8080},
    ]
    reply = _patch(admin, f"{path}/f", operations, JSON_PATCH)
    assert reply.status == 200, reply.body
    assert reply.body["spec"] == {"ports": [{"name": "http", "port": 8080}], "reference": "ref"}
    failed = _patch(admin, f"{path}/f", [{"op": "test", "path": "/spec/reference", "value": "other"}], JSON_PATCH)
    assert (failed.status, failed.body) == (422, REJECTED)


# strategic merge patch


def test_strategic_merge_of_maps(admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]) -> None:
    reply = _patch(
        admin,
        _configmap(namespace),
        {"data": {"x": None, "z": "3"}, "metadata": {"labels": {"tier": "back"}}},
        STRATEGIC,
    )
    assert reply.status == 200, reply.body
    assert reply.body["data"] == {"y": "2", "z": "3"}
    assert reply.body["metadata"]["labels"] == {"app": "web", "tier": "back"}


def test_strategic_merge_directives_on_maps(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    path = _configmap(namespace)
    replaced = _patch(admin, path, {"data": {"$patch": "replace", "only": "this"}}, STRATEGIC)
    assert replaced.status == 200 and replaced.body["data"] == {"only": "this"}
    deleted = _patch(admin, path, {"data": {"$patch": "delete"}}, STRATEGIC)
    assert deleted.status == 200 and "data" not in deleted.body
    assert deleted.body["metadata"]["labels"] == {"app": "web"}


def test_strategic_merge_of_containers_env_ports_and_volumes(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    path = _deployment(
        admin,
        namespace,
        {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.9",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "ports": [{"containerPort": 80, "name": "http"}],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                },
                {"name": "d", "image": "registry.k8s.io/pause:3.9"},
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    )
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/pause:3.10",
                            "env": [{"name": "B", "value": "two"}, {"name": "C", "value": "3"}],
                            "ports": [{"containerPort": 443, "name": "https"}],
                        },
                        {"name": "e", "image": "registry.k8s.io/pause:3.10"},
                    ],
                    "volumes": [{"name": "cache", "emptyDir": {}}],
                }
            }
        }
    }
    spec = _pod_spec(_patch(admin, path, patch, STRATEGIC))
    assert [container["name"] for container in spec["containers"]] == ["c", "e", "d"]
    first = spec["containers"][0]
    assert first["image"] == "registry.k8s.io/pause:3.10"
    assert first["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "two"}, {"name": "C", "value": "3"}]
    assert [port["containerPort"] for port in first["ports"]] == [443, 80]
    assert first["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
    assert [volume["name"] for volume in spec["volumes"]] == ["cache", "data"]


def test_strategic_merge_list_directives(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = _deployment(
        admin,
        namespace,
        {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.9",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                },
                {"name": "d", "image": "registry.k8s.io/pause:3.9"},
            ]
        },
    )
    deleted = _pod_spec(
        _patch(
            admin,
            path,
            {"spec": {"template": {"spec": {"containers": [{"name": "d", "$patch": "delete"}]}}}},
            STRATEGIC,
        )
    )
    assert [container["name"] for container in deleted["containers"]] == ["c"]
    replace_env = {"containers": [{"name": "c", "env": [{"$patch": "replace"}, {"name": "Z", "value": "26"}]}]}
    replaced = _pod_spec(_patch(admin, path, {"spec": {"template": {"spec": replace_env}}}, STRATEGIC))
    assert replaced["containers"][0]["env"] == [{"name": "Z", "value": "26"}]
    without_env = _pod_spec(
        _patch(
            admin,
            path,
            {
                "spec": {
                    "template": {"spec": {"containers": [{"name": "c", "env": [{"name": "Z", "$patch": "delete"}]}]}}
                }
            },
            STRATEGIC,
        )
    )
    assert "env" not in without_env["containers"][0]


def test_patch_items_keep_their_order_among_the_servers(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = _deployment(
        admin, namespace, {"containers": [{"name": name, "image": "registry.k8s.io/pause:3.9"} for name in "abcd"]}
    )
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "d"}, {"name": "x", "image": "registry.k8s.io/pause:3.9"}, {"name": "b"}]
                }
            }
        }
    }
    spec = _pod_spec(_patch(admin, path, patch, STRATEGIC))
    assert [container["name"] for container in spec["containers"]] == ["a", "c", "d", "x", "b"]


def test_set_element_order(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = _deployment(
        admin,
        namespace,
        {"containers": [{"name": name, "image": "registry.k8s.io/pause:3.9"} for name in ("a", "b", "c")]},
    )
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
                    "containers": [{"name": "a", "image": "registry.k8s.io/pause:3.10"}],
                }
            }
        }
    }
    spec = _pod_spec(_patch(admin, path, patch, STRATEGIC))
    assert [(container["name"], container["image"]) for container in spec["containers"]] == [
        ("c", "registry.k8s.io/pause:3.9"),
        ("a", "registry.k8s.io/pause:3.10"),
        ("b", "registry.k8s.io/pause:3.9"),
    ]


def test_retain_keys(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = _deployment(admin, namespace, {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]})
    reply = _patch(admin, path, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}, STRATEGIC)
    assert reply.status == 200, reply.body
    assert reply.body["spec"]["strategy"] == {"type": "Recreate"}
    malformed = _patch(
        admin, path, {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 1}}}}, STRATEGIC
    )
    assert malformed.status == 400 and malformed.body["message"] == "invalid patch format of retainKeys"


def test_finalizers_merge_as_a_set(admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]) -> None:
    path = _configmap(namespace)
    first = _patch(admin, path, {"metadata": {"finalizers": ["example.com/a", "example.com/b"]}}, STRATEGIC)
    assert first.body["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]
    merged = _patch(admin, path, {"metadata": {"finalizers": ["example.com/c", "example.com/a"]}}, STRATEGIC)
    assert merged.body["metadata"]["finalizers"] == ["example.com/c", "example.com/a", "example.com/b"]
    removed = _patch(
        admin,
        path,
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a", "example.com/c"]}},
        STRATEGIC,
    )
    assert removed.body["metadata"]["finalizers"] == ["example.com/b"]
    assert _patch(admin, path, {"metadata": {"finalizers": None}}, STRATEGIC).status == 200


@pytest.mark.parametrize(
    ("patch", "status", "message"),
    [
        ({"data": {"$patch": "bogus"}}, 500, "unknown patch type: bogus in map: map[$patch:bogus]"),
        ({"metadata": {"$deleteFromPrimitiveList": ["a"]}}, 400, "invalid patch format of primitive list"),
        ({"metadata": {"$setElementOrder": ["a"]}}, 400, "invalid patch format of setElementOrder list"),
        ({"data": {"$retainKeys": "x"}}, 400, "invalid patch format of retainKeys"),
    ],
)
def test_strategic_merge_refusals(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any], patch: Any, status: int, message: str
) -> None:
    reply = _patch(admin, _configmap(namespace), patch, STRATEGIC)
    assert (reply.status, reply.body["message"]) == (status, message)
    assert reply.body.get("reason") == {400: "BadRequest", 500: None}[status]


def test_strategic_merge_of_a_list_item_without_its_merge_key(
    admin: kubernetes.client.ApiClient, namespace: str
) -> None:
    path = _deployment(admin, namespace, {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]})
    reply = _patch(admin, path, {"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}, STRATEGIC)
    assert reply.status == 500 and "reason" not in reply.body
    assert reply.body["message"] == "map: map[image:x] does not contain declared merge key: name"


def test_strategic_merge_results_are_decoded_as_the_kind(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    reply = _patch(admin, _configmap(namespace), {"data": {"n": 5}}, STRATEGIC)
    assert reply.status == 422
    assert (
        reply.body["message"]
        == ' "" is invalid: patch: Invalid value: "map[data:map[n:5]]": cannot convert int64 to string'
    )
    not_a_map = _patch(admin, _configmap(namespace), {"data": ["x"]}, STRATEGIC)
    assert not_a_map.status == 422 and not_a_map.body["message"].endswith(": cannot restore map from slice")
    array = _patch(admin, _configmap(namespace), ["x"], STRATEGIC)
    assert (
        array.status == 400
        and array.body["message"] == "json: cannot unmarshal array into Go value of type map[string]interface {}"
    )


def test_the_typed_helpers_send_dicts_as_strategic_merge_and_lists_as_json_patch(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    """The official client picks ``application/json-patch+json`` for PATCH and switches to strategic merge for a non-list body."""
    core = kubernetes.client.CoreV1Api(admin)
    merged = core.patch_namespaced_config_map("a", namespace, {"data": {"x": None, "z": "3"}})
    assert merged.data == {"y": "2", "z": "3"}
    operated = core.patch_namespaced_config_map("a", namespace, [{"op": "replace", "path": "/data/y", "value": "two"}])
    assert operated.data == {"y": "two", "z": "3"}


@pytest.mark.parametrize("content_type", [JSON_PATCH, "application/merge-patch+json", STRATEGIC])
def test_an_empty_patch_body(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any], content_type: str
) -> None:
    reply = request(admin, "PATCH", _configmap(namespace), headers=[("Content-Type", content_type)])
    assert reply.status == 400
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "invalid JSON patch",
        "reason": "BadRequest",
        "code": 400,
    }


def test_unknown_patch_content_types_of_built_in_kinds(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    reply = _patch(admin, _configmap(namespace), {"data": {}}, "application/json")
    assert reply.status == 415
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "415: Unsupported Media Type",
        "reason": "UnsupportedMediaType",
        "details": {},
        "code": 415,
    }


# server-side apply: the options every server checks before applying


def test_apply_needs_a_field_manager(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    reply = _patch(
        admin, _configmap(namespace), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}, APPLY
    )
    assert reply.status == 422
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
        "reason": "Invalid",
        "details": {
            "group": "meta.k8s.io",
            "kind": "PatchOptions",
            "causes": [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value: is required for apply patch",
                    "field": "fieldManager",
                }
            ],
        },
        "code": 422,
    }


def test_force_is_only_for_apply(admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]) -> None:
    reply = _patch(admin, _configmap(namespace), {"data": {"x": "2"}}, "application/merge-patch+json", force="true")
    assert reply.status == 422
    assert (
        reply.body["message"]
        == 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch'
    )
    assert reply.body["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: may not be specified for non-apply patch",
            "field": "force",
        }
    ]


def test_field_managers_are_validated(
    admin: kubernetes.client.ApiClient, namespace: str, created: dict[str, Any]
) -> None:
    long = _patch(admin, _configmap(namespace), {"data": {}}, "application/merge-patch+json", fieldManager="m" * 129)
    assert long.status == 422
    assert (
        long.body["message"]
        == 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes'
    )
    assert long.body["details"]["causes"] == [
        {"reason": "FieldValueTooLong", "message": "Too long: may not be more than 128 bytes", "field": "fieldManager"}
    ]
    control = request(
        admin,
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        body=configmap("b"),
        query=[("fieldManager", "a\tb")],
    )
    assert control.status == 422
    assert (
        control.body["message"]
        == 'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: "a\\tb": invalid character U+0009 (at position 1)'
    )
