"""What a resource editor relies on: fields a write may not change, preconditions in their every form,
the status subresource's rules, the checks an edited Deployment or typed Secret must pass, and
label selectors as a search box would send them."""

from __future__ import annotations

from typing import Any

import kubernetes.client
import pytest

from .kube import MERGE_PATCH, configmap, request

JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
STALE = "the object has been modified; please apply your changes to the latest version and try again"


@pytest.fixture
def created(admin: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    reply = request(
        admin,
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        body=configmap("a", {"k": "v"}, labels={"app": "x"}),
    )
    assert reply.status == 201
    return reply.body  # type: ignore[no-any-return]


def _path(created: dict[str, Any]) -> str:
    return f"/api/v1/namespaces/{created['metadata']['namespace']}/configmaps/a"


def _causes(reply: Any) -> list[tuple[str, str, str]]:
    return [(cause["reason"], cause["field"], cause["message"]) for cause in reply.body["details"]["causes"]]


def test_deletion_fields_cannot_be_set_by_a_write(admin: kubernetes.client.ApiClient, created: dict[str, Any]) -> None:
    """Only DELETE marks an object for deletion."""
    timestamp = request(
        admin,
        "PATCH",
        _path(created),
        body={"metadata": {"deletionTimestamp": "2001-01-01T00:00:00Z"}},
        content_type=MERGE_PATCH,
    )
    assert timestamp.status == 422
    assert timestamp.body["message"] == (
        'ConfigMap "a" is invalid: metadata.deletionTimestamp: Invalid value: "2001-01-01T00:00:00Z": field is immutable'
    )
    assert _causes(timestamp) == [
        ("FieldValueInvalid", "metadata.deletionTimestamp", 'Invalid value: "2001-01-01T00:00:00Z": field is immutable')
    ]
    grace = request(
        admin, "PATCH", _path(created), body={"metadata": {"deletionGracePeriodSeconds": 5}}, content_type=MERGE_PATCH
    )
    assert grace.status == 422
    assert _causes(grace) == [
        ("FieldValueInvalid", "metadata.deletionGracePeriodSeconds", "Invalid value: 5: field is immutable")
    ]
    assert "deletionTimestamp" not in request(admin, "GET", _path(created)).body["metadata"]


def test_server_set_metadata_is_kept_silently(admin: kubernetes.client.ApiClient, created: dict[str, Any]) -> None:
    reply = request(
        admin,
        "PATCH",
        _path(created),
        content_type=MERGE_PATCH,
        body={
            "metadata": {"creationTimestamp": "2001-01-01T00:00:00Z", "generation": 7},
            "data": {"k": "w"},
        },
    )
    assert reply.status == 200
    metadata = reply.body["metadata"]
    assert metadata["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    assert "generation" not in metadata  # ConfigMaps have none


def test_a_rename_is_a_bad_request(admin: kubernetes.client.ApiClient, created: dict[str, Any]) -> None:
    renamed = request(admin, "PATCH", _path(created), body={"metadata": {"name": "b"}}, content_type=MERGE_PATCH)
    assert (
        renamed.status == 400
        and renamed.body["message"] == "the name of the object (b) does not match the name on the URL (a)"
    )
    moved = request(
        admin, "PATCH", _path(created), body={"metadata": {"namespace": "elsewhere"}}, content_type=MERGE_PATCH
    )
    assert moved.status == 400
    assert (
        moved.body["message"] == "the namespace of the provided object does not match the namespace sent on the request"
    )


def test_update_validation_reports_each_cause_once(admin: kubernetes.client.ApiClient, created: dict[str, Any]) -> None:
    """Several checks see a bad label or finalizer on update (common, update, the kind's own); each cause is reported once."""
    label = request(
        admin, "PATCH", _path(created), body={"metadata": {"labels": {"app": "bad value"}}}, content_type=MERGE_PATCH
    )
    assert label.status == 422
    assert [cause[:2] for cause in _causes(label)] == [("FieldValueInvalid", "metadata.labels")]
    finalizer = request(
        admin, "PATCH", _path(created), body={"metadata": {"finalizers": ["bad name!"]}}, content_type=MERGE_PATCH
    )
    assert finalizer.status == 422
    assert [cause[1] for cause in _causes(finalizer)] == ["metadata.finalizers", "metadata.finalizers[0]"]
    assert (
        _causes(finalizer)[1][2]
        == 'Invalid value: "bad name!": name is neither a standard finalizer name nor is it fully qualified'
    )


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [
        (MERGE_PATCH, {"metadata": {"resourceVersion": "{stale}"}, "data": {"k": "mine"}}),
        (STRATEGIC_MERGE_PATCH, {"metadata": {"resourceVersion": "{stale}"}, "data": {"k": "mine"}}),
        (
            JSON_PATCH,
            [
                {"op": "replace", "path": "/metadata/resourceVersion", "value": "{stale}"},
                {"op": "replace", "path": "/data/k", "value": "m"},
            ],
        ),
    ],
    ids=["merge", "strategic", "json-replace"],
)
def test_a_stale_resource_version_in_any_patch_is_a_conflict(
    admin: kubernetes.client.ApiClient, created: dict[str, Any], content_type: str, patch: Any
) -> None:
    stale = created["metadata"]["resourceVersion"]
    assert (
        request(admin, "PATCH", _path(created), body={"data": {"k": "theirs"}}, content_type=MERGE_PATCH).status == 200
    )
    body = _with_version(patch, stale)
    reply = request(admin, "PATCH", _path(created), body=body, content_type=content_type)
    assert reply.status == 409 and reply.body["message"] == f'Operation cannot be fulfilled on configmaps "a": {STALE}'


def _with_version(patch: Any, version: str) -> Any:
    if isinstance(patch, dict):
        return {key: _with_version(value, version) for key, value in patch.items()}
    if isinstance(patch, list):
        return [_with_version(item, version) for item in patch]
    return version if patch == "{stale}" else patch


def test_a_json_patch_test_of_the_version_fails_without_a_reason(
    admin: kubernetes.client.ApiClient, created: dict[str, Any]
) -> None:
    stale = created["metadata"]["resourceVersion"]
    request(admin, "PATCH", _path(created), body={"data": {"k": "theirs"}}, content_type=MERGE_PATCH)
    reply = request(
        admin,
        "PATCH",
        _path(created),
        content_type=JSON_PATCH,
        body=[{"op": "test", "path": "/metadata/resourceVersion", "value": stale}],
    )
    assert reply.status == 422 and reply.body["details"] == {}


def test_put_without_a_version_is_unconditional_and_with_one_is_checked(
    admin: kubernetes.client.ApiClient, created: dict[str, Any]
) -> None:
    stale = created["metadata"]["resourceVersion"]
    unconditional = request(admin, "PUT", _path(created), body=configmap("a", {"k": "put"}))
    assert unconditional.status == 200 and unconditional.body["data"] == {"k": "put"}
    for version in (stale, "99999999"):
        reply = request(
            admin,
            "PUT",
            _path(created),
            body={**configmap("a", {"k": "again"}), "metadata": {"name": "a", "resourceVersion": version}},
        )
        assert (
            reply.status == 409 and reply.body["message"] == f'Operation cannot be fulfilled on configmaps "a": {STALE}'
        )


def test_delete_preconditions_are_checked_together(admin: kubernetes.client.ApiClient, created: dict[str, Any]) -> None:
    uid, stale = created["metadata"]["uid"], created["metadata"]["resourceVersion"]
    current = request(admin, "PATCH", _path(created), body={"data": {"k": "w"}}, content_type=MERGE_PATCH).body[
        "metadata"
    ]["resourceVersion"]
    reply = request(admin, "DELETE", _path(created), body={"preconditions": {"uid": uid, "resourceVersion": stale}})
    assert reply.status == 409
    assert reply.body["message"] == (
        f'Operation cannot be fulfilled on ConfigMap "a": the ResourceVersion in the precondition ({stale}) does not match '
        f"the ResourceVersion in record ({current}). The object might have been modified"
    )
    gone = request(admin, "DELETE", _path(created), body={"preconditions": {"uid": uid, "resourceVersion": current}})
    assert gone.status == 200 and gone.body["details"]["uid"] == uid


@pytest.fixture
def deployment(admin: kubernetes.client.ApiClient, namespace: str) -> str:
    labels = {"app": "web"}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "registry.k8s.io/pause:3.10", "ports": [{"containerPort": 8080}]}
                    ]
                },
            },
        },
    }
    created = request(admin, "POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", body=body)
    assert created.status == 201
    assert created.body["spec"]["template"]["spec"]["containers"][0]["ports"] == [
        {"containerPort": 8080, "protocol": "TCP"}
    ]
    return f"/apis/apps/v1/namespaces/{namespace}/deployments/web"


def test_status_writes_keep_spec_and_labels_but_take_annotations(
    admin: kubernetes.client.ApiClient, deployment: str
) -> None:
    reply = request(
        admin,
        "PATCH",
        f"{deployment}/status",
        content_type=MERGE_PATCH,
        body={
            "status": {"replicas": 3, "observedGeneration": 1},
            "spec": {"replicas": 9},
            "metadata": {"labels": {"x": "y"}, "annotations": {"a": "b"}},
        },
    )
    assert reply.status == 200
    assert reply.body["status"]["replicas"] == 3 and reply.body["spec"]["replicas"] == 1
    assert "labels" not in reply.body["metadata"] and reply.body["metadata"]["annotations"] == {"a": "b"}
    assert reply.body["metadata"]["generation"] == 1


def test_no_status_subresource_on_config_maps(admin: kubernetes.client.ApiClient, created: dict[str, Any]) -> None:
    reply = request(admin, "PUT", f"{_path(created)}/status", body=configmap("a"))
    assert reply.status == 404


@pytest.mark.parametrize(
    ("container", "causes"),
    [
        (
            {"name": "Web_1", "image": "x"},
            [
                (
                    "FieldValueInvalid",
                    "spec.template.spec.containers[0].name",
                    "Invalid value: \"Web_1\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
                    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                )
            ],
        ),
        (
            {"name": "c", "image": "x", "ports": [{"containerPort": 70000}]},
            [
                (
                    "FieldValueInvalid",
                    "spec.template.spec.containers[0].ports[0].containerPort",
                    "Invalid value: 70000: must be between 1 and 65535, inclusive",
                )
            ],
        ),
        (
            {"name": "c", "image": ""},
            [("FieldValueRequired", "spec.template.spec.containers[0].image", "Required value")],
        ),
    ],
    ids=["name", "port", "image"],
)
def test_edited_containers_are_validated(
    admin: kubernetes.client.ApiClient, deployment: str, container: dict[str, Any], causes: list[tuple[str, str, str]]
) -> None:
    reply = request(
        admin,
        "PATCH",
        deployment,
        body={"spec": {"template": {"spec": {"containers": [container]}}}},
        content_type=MERGE_PATCH,
    )
    assert reply.status == 422
    assert _causes(reply) == causes


def test_container_names_are_unique(admin: kubernetes.client.ApiClient, deployment: str) -> None:
    twins = [{"name": "c", "image": "x"}, {"name": "c", "image": "y"}]
    reply = request(
        admin,
        "PATCH",
        deployment,
        body={"spec": {"template": {"spec": {"containers": twins}}}},
        content_type=MERGE_PATCH,
    )
    assert reply.status == 422
    assert _causes(reply) == [("FieldValueDuplicate", "spec.template.spec.containers[1].name", 'Duplicate value: "c"')]


def test_recreate_takes_no_rolling_update(admin: kubernetes.client.ApiClient, deployment: str) -> None:
    """The defaulted ``rollingUpdate`` stays under a strategic merge patch to ``Recreate``: the edit must remove it."""
    kept = request(
        admin,
        "PATCH",
        deployment,
        body={"spec": {"strategy": {"type": "Recreate"}}},
        content_type=STRATEGIC_MERGE_PATCH,
    )
    assert kept.status == 422
    assert _causes(kept) == [
        (
            "FieldValueForbidden",
            "spec.strategy.rollingUpdate",
            "Forbidden: may not be specified when strategy `type` is 'Recreate'",
        )
    ]
    removed = request(
        admin,
        "PATCH",
        deployment,
        content_type=STRATEGIC_MERGE_PATCH,
        body={"spec": {"strategy": {"type": "Recreate", "rollingUpdate": None}}},
    )
    assert removed.status == 200 and removed.body["spec"]["strategy"] == {"type": "Recreate"}


def test_progress_deadline_after_min_ready(admin: kubernetes.client.ApiClient, deployment: str) -> None:
    reply = request(
        admin,
        "PATCH",
        deployment,
        body={"spec": {"minReadySeconds": 30, "progressDeadlineSeconds": 30}},
        content_type=MERGE_PATCH,
    )
    assert reply.status == 422
    assert _causes(reply) == [
        ("FieldValueInvalid", "spec.progressDeadlineSeconds", "Invalid value: 30: must be greater than minReadySeconds")
    ]


@pytest.mark.parametrize(
    ("secret_type", "data", "missing"),
    [
        ("kubernetes.io/tls", {"tls.crt": "Yw=="}, ["data[tls.key]"]),
        ("kubernetes.io/basic-auth", {}, ["data[username]", "data[password]"]),
        ("kubernetes.io/ssh-auth", {}, ["data[ssh-privatekey]"]),
        ("kubernetes.io/dockerconfigjson", {}, ["data[.dockerconfigjson]"]),
    ],
    ids=["tls", "basic-auth", "ssh-auth", "dockerconfigjson"],
)
def test_typed_secrets_need_their_keys(
    admin: kubernetes.client.ApiClient, namespace: str, secret_type: str, data: dict[str, str], missing: list[str]
) -> None:
    reply = request(
        admin,
        "POST",
        f"/api/v1/namespaces/{namespace}/secrets",
        body={"metadata": {"name": "typed"}, "type": secret_type, "data": data},
    )
    assert reply.status == 422
    assert _causes(reply) == [("FieldValueRequired", field, "Required value") for field in missing]


def test_a_secret_keeps_its_type(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/secrets"
    request(admin, "POST", path, body={"metadata": {"name": "s"}, "stringData": {"tls.crt": "c", "tls.key": "k"}})
    reply = request(admin, "PATCH", f"{path}/s", body={"type": "kubernetes.io/tls"}, content_type=MERGE_PATCH)
    assert reply.status == 422
    assert _causes(reply) == [("FieldValueInvalid", "type", 'Invalid value: "kubernetes.io/tls": field is immutable')]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("!app", ["plain"]),
        ("app notin (y)", ["blank", "plain", "x"]),
        ("app!=", ["plain", "x"]),
        (" app = x ", ["x"]),
        ("app in (x,y),app", ["x"]),
        ("example.com/app=x", []),
        ("app=", ["blank"]),
    ],
    ids=["absent", "notin-includes-absent", "not-empty", "spaces", "in-and-exists", "prefixed", "empty-value"],
)
def test_label_selector_edges(
    admin: kubernetes.client.ApiClient, namespace: str, selector: str, expected: list[str]
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name, labels in (("x", {"app": "x"}), ("plain", {}), ("blank", {"app": ""})):
        request(admin, "POST", path, body=configmap(name, labels=labels))
    reply = request(admin, "GET", path, query=[("labelSelector", selector)])
    assert reply.status == 200, reply.body
    assert sorted(item["metadata"]["name"] for item in reply.body["items"]) == sorted(expected)


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("app=x,", "found '', expected: identifier after ','"),
        ("app in (x", "unable to parse requirement: found '', expected: ',' or ')'"),
        (
            "app=" + "v" * 64,
            f'unable to parse requirement: values[0][app]: Invalid value: "{"v" * 64}": must be no more than 63 bytes',
        ),
        ("app in (b,Bad Value)", "unable to parse requirement: found 'Value', expected: ',' or ')'"),
        (
            "app>x",
            "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        ("app=x y", "found 'y', expected: ',' or 'end of string'"),
    ],
    ids=["trailing-comma", "unclosed", "long-value", "space-in-set", "gt-not-a-number", "space-in-value"],
)
def test_bad_label_selectors(admin: kubernetes.client.ApiClient, namespace: str, selector: str, message: str) -> None:
    reply = request(admin, "GET", f"/api/v1/namespaces/{namespace}/configmaps", query=[("labelSelector", selector)])
    assert reply.status == 400
    assert reply.body["message"] == message
