"""Per-kind write rules: decoding checks, defaults, the server's field order, generation, subresource
resets and the kinds' own validation."""

from __future__ import annotations

import copy
import typing as t

import pytest

from flask_krm.testing.simulator import strategies
from flask_krm.testing.simulator.catalog import CONFIGMAPS, DEPLOYMENTS, FLUNDERS, NAMESPACES, ROLE_BINDINGS, SECRETS
from flask_krm.testing.simulator.strategies import DecodeError

Object = dict[str, t.Any]


def deployment(**spec: t.Any) -> Object:
    base: Object = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]},
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": base | spec,
    }


def errors(resource: t.Any, obj: Object) -> list[str]:
    return [str(error) for error in strategies.validate(resource, obj)]


def test_decode_errors_worded_as_the_unstructured_converter_words_them() -> None:
    assert DecodeError("m", "map", "x").converter_message() == "cannot restore map from string"
    assert DecodeError("m", "struct", [1]).converter_message() == "cannot restore struct from: slice"
    assert DecodeError("m", "int32", 1.5).converter_message() == "cannot convert float64 to int32"
    assert DecodeError("m", "string", 3).converter_message() == "cannot convert int64 to string"
    assert DecodeError("m", "int32", "x").converter_message() == "unrecognized type: int32"
    assert DecodeError("plain").converter_message() == "plain"


@pytest.mark.parametrize(
    ("resource", "obj", "message"),
    [
        (
            CONFIGMAPS,
            {"metadata": []},
            "json: cannot unmarshal array into Go struct field ConfigMap.metadata of type v1.ObjectMeta",
        ),
        (
            CONFIGMAPS,
            {"metadata": {"uid": 1}},
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.uid of type types.UID",
        ),
        (
            CONFIGMAPS,
            {"metadata": {"labels": {"a": True}}},
            "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            CONFIGMAPS,
            {"metadata": {}, "data": []},
            "json: cannot unmarshal array into Go struct field ConfigMap.data of type map[string]string",
        ),
        (
            CONFIGMAPS,
            {"metadata": {"finalizers": [1]}},
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.finalizers of type string",
        ),
        (
            CONFIGMAPS,
            {"metadata": {"ownerReferences": [{"controller": "yes"}]}},
            "json: cannot unmarshal string into Go struct field OwnerReference.metadata.ownerReferences.controller "
            "of type bool",
        ),
        (
            SECRETS,
            {"metadata": {}, "stringData": {"k": 1}},
            "json: cannot unmarshal number into Go struct field Secret.stringData of type string",
        ),
        (
            DEPLOYMENTS,
            {"metadata": {}, "spec": {"replicas": "3"}},
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            DEPLOYMENTS,
            {"metadata": {}, "spec": {"replicas": True}},
            "json: cannot unmarshal bool into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
    ],
)
def test_check_types_refuses_what_the_go_decoder_would(resource: t.Any, obj: Object, message: str) -> None:
    with pytest.raises(DecodeError) as refused:
        strategies.check_types(resource, obj)
    assert str(refused.value) == message


@pytest.mark.parametrize(
    ("amount", "fine"),
    [("100m", True), ("1.5Gi", True), (2, True), ("1e3", True), ("1..5", False), ("5XB", False), ("abc", False)],
)
def test_container_quantities_are_parsed(amount: t.Any, fine: bool) -> None:
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": amount}}
    if fine:
        strategies.check_types(DEPLOYMENTS, obj)
    else:
        with pytest.raises(DecodeError, match="quantit"):
            strategies.check_types(DEPLOYMENTS, obj)


def test_bad_base64_in_a_secret_is_a_decode_error_and_good_base64_is_normalized() -> None:
    with pytest.raises(DecodeError):
        strategies.check_types(SECRETS, {"metadata": {}, "data": {"k": "not base64!"}})
    secret = {"metadata": {}, "data": {"k": "aGk=\n"}}
    strategies.normalize_bytes(SECRETS, secret)
    assert secret["data"] == {"k": "aGk="}


def test_canonical_orders_fields_drops_unknown_ones_and_empty_omitempty_maps() -> None:
    obj = {
        "data": {"b": "1", "a": "2"},
        "binaryData": {},
        "surprise": 1,
        "metadata": {"labels": {}, "uid": "u", "name": "n", "bogus": 1},
        "apiVersion": "v1",
        "kind": "ConfigMap",
    }
    shown = strategies.canonical(CONFIGMAPS, obj)
    assert list(shown) == ["kind", "apiVersion", "metadata", "data"]
    assert list(shown["metadata"]) == ["name", "uid"] and list(shown["data"]) == ["a", "b"]


def test_canonical_writes_a_deployment_in_struct_order_with_null_condition_times() -> None:
    obj = deployment(paused=False, replicas=2)
    obj["status"] = {"conditions": [{"reason": "r", "type": "Available", "status": "True"}], "replicas": 2}
    obj["spec"]["template"]["spec"]["volumes"] = []
    shown = strategies.canonical(DEPLOYMENTS, obj)
    assert list(shown["spec"]) == ["replicas", "selector", "template", "paused"]
    assert "volumes" not in shown["spec"]["template"]["spec"], "empty omitempty lists are left out"
    assert shown["status"]["conditions"] == [
        {"type": "Available", "status": "True", "lastUpdateTime": None, "lastTransitionTime": None, "reason": "r"}
    ]
    role = strategies.canonical(ROLE_BINDINGS, {"metadata": {"name": "x"}, "subjects": [], "roleRef": {}})
    assert "subjects" not in role
    assert strategies.canonical(FLUNDERS, {"spec": {"b": 1, "a": [{"d": 1, "c": 2}]}, "metadata": {"name": "f"}}) == {
        "metadata": {"name": "f"},
        "spec": {"a": [{"c": 2, "d": 1}], "b": 1},
    }


def test_create_defaults() -> None:
    namespace = {"metadata": {"name": "team"}, "status": {"phase": "Terminating"}}
    strategies.prepare_for_create(NAMESPACES, namespace)
    assert namespace["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}
    assert namespace["spec"] == {"finalizers": ["kubernetes"]} and namespace["status"] == {"phase": "Active"}
    secret = {"metadata": {"name": "s"}, "data": {"a": "YQ=="}, "stringData": {"b": "bee"}}
    strategies.prepare_for_create(SECRETS, secret)
    assert secret == {"metadata": {"name": "s"}, "data": {"a": "YQ==", "b": "YmVl"}, "type": "Opaque"}
    flunder = {"metadata": {"name": "f"}, "status": {"x": 1}}
    strategies.prepare_for_create(FLUNDERS, flunder)
    assert flunder == {"metadata": {"name": "f", "generation": 1}}


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.27", "IfNotPresent"),
        ("registry:5000/app", "Always"),
        ("app@sha256:ab", "IfNotPresent"),
    ],
)
def test_deployment_defaults(image: str, policy: str) -> None:
    obj = deployment()
    container = obj["spec"]["template"]["spec"]["containers"][0]
    container.update(image=image, ports=[{"containerPort": 80}])
    strategies.prepare_for_create(DEPLOYMENTS, obj)
    spec = obj["spec"]
    assert (spec["replicas"], spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (1, 10, 600)
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    made = spec["template"]["spec"]["containers"][0]
    assert made["imagePullPolicy"] == policy and made["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert (
        spec["template"]["spec"]["restartPolicy"] == "Always"
        and obj["status"] == {}
        and obj["metadata"]["generation"] == 1
    )


def test_a_recreate_deployment_gets_no_rolling_update() -> None:
    obj = deployment(strategy={"type": "Recreate"})
    strategies.prepare_for_create(DEPLOYMENTS, obj)
    assert obj["spec"]["strategy"] == {"type": "Recreate"}


def created(resource: t.Any, obj: Object) -> Object:
    strategies.prepare_for_create(resource, obj)
    return obj


def test_generation_moves_with_the_spec_not_with_metadata_or_status() -> None:
    old = created(DEPLOYMENTS, deployment())
    relabelled = copy.deepcopy(old)
    relabelled["metadata"]["labels"] = {"x": "y"}
    relabelled["status"] = {"replicas": 5}
    strategies.prepare_for_update(DEPLOYMENTS, relabelled, old, "")
    assert relabelled["metadata"]["generation"] == 1 and relabelled["status"] == {}, (
        "status is kept from the old object"
    )
    scaled = copy.deepcopy(old)
    scaled["spec"]["replicas"] = 3
    strategies.prepare_for_update(DEPLOYMENTS, scaled, old, "")
    assert scaled["metadata"]["generation"] == 2


def test_a_status_write_keeps_the_spec_and_labels() -> None:
    old = created(DEPLOYMENTS, deployment())
    old["metadata"]["labels"] = {"a": "b"}
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 9
    new["metadata"]["labels"] = {"c": "d"}
    new["status"] = {"replicas": 1}
    strategies.prepare_for_update(DEPLOYMENTS, new, old, "status")
    assert new["spec"] == old["spec"] and new["metadata"]["labels"] == {"a": "b"} and new["status"] == {"replicas": 1}
    flunder_old = {"metadata": {"name": "f", "generation": 1}, "spec": {"a": 1}, "status": {"s": 1}}
    flunder_new = {"metadata": {"name": "f"}, "spec": {"a": 2}, "status": {"s": 2}}
    strategies.prepare_for_update(FLUNDERS, flunder_new, flunder_old, "status")
    assert flunder_new == {"metadata": {"name": "f", "generation": 1}, "spec": {"a": 1}, "status": {"s": 2}}


def test_a_custom_resource_s_generation_ignores_its_status() -> None:
    old = {"metadata": {"name": "f", "generation": 4}, "spec": {"a": 1}, "status": {"s": 1}}
    new = {"metadata": {"name": "f"}, "spec": {"a": 1}, "status": {"s": 2}}
    strategies.prepare_for_update(FLUNDERS, new, old, "")
    assert new["metadata"]["generation"] == 4 and new["status"] == {"s": 1}
    new = {"metadata": {"name": "f"}, "spec": {"a": 2}}
    strategies.prepare_for_update(FLUNDERS, new, old, "")
    assert new["metadata"]["generation"] == 5


def test_deployment_validation() -> None:
    obj = created(DEPLOYMENTS, deployment(replicas=-1, minReadySeconds=700))
    obj["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    obj["spec"]["template"]["spec"]["containers"] += [
        {"name": "web", "ports": [{"containerPort": 70000, "protocol": "TCP"}]}
    ]
    assert errors(DEPLOYMENTS, obj) == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        'spec.template.metadata.labels: Invalid value: {"app":"other"}: `selector` does not match template `labels`',
        "spec.template.spec.containers[1].image: Required value",
        "spec.template.spec.containers[1].ports[0].containerPort: Invalid value: 70000: "
        "must be between 1 and 65535, inclusive",
        'spec.template.spec.containers[1].name: Duplicate value: "web"',
        "spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds",
    ]
    assert errors(DEPLOYMENTS, created(DEPLOYMENTS, deployment())) == []


def test_a_deployment_s_strategy() -> None:
    recreate = created(DEPLOYMENTS, deployment(strategy={"type": "Recreate"}))
    recreate["spec"]["strategy"]["rollingUpdate"] = {}
    assert errors(DEPLOYMENTS, recreate) == [
        "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"
    ]
    odd = created(DEPLOYMENTS, deployment(strategy={"type": "Blue"}))
    assert errors(DEPLOYMENTS, odd) == [
        'spec.strategy: Unsupported value: {"Type":"Blue","RollingUpdate":null}: '
        'supported values: "Recreate", "RollingUpdate"'
    ]


def test_config_map_data_keys_and_size() -> None:
    assert errors(
        CONFIGMAPS, {"metadata": {"name": "c", "namespace": "d"}, "data": {"a": "1"}, "binaryData": {"a": "MQ=="}}
    ) == ['data[a]: Invalid value: "a": duplicate of key present in binaryData']
    big = {"metadata": {"name": "c", "namespace": "d"}, "data": {"a": "x" * (1024 * 1024 + 1)}}
    assert errors(CONFIGMAPS, big) == ["[]: Too long: may not be more than 1048576 bytes"]
    assert errors(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "d"}, "data": {"..a": ""}}) == [
        "data[..a]: Invalid value: \"..a\": must not start with '..'"
    ]


@pytest.mark.parametrize(
    ("secret_type", "data", "missing"),
    [
        ("kubernetes.io/tls", {"tls.crt": "eA=="}, ["data[tls.key]"]),
        ("kubernetes.io/basic-auth", {}, ["data[username]", "data[password]"]),
        ("kubernetes.io/basic-auth", {"password": "eA=="}, []),
        ("kubernetes.io/ssh-auth", {"ssh-privatekey": ""}, ["data[ssh-privatekey]"]),
        ("kubernetes.io/service-account-token", {}, ["metadata.annotations[kubernetes.io/service-account.name]"]),
        ("Opaque", {}, []),
    ],
)
def test_a_secret_type_needs_its_keys(secret_type: str, data: dict[str, str], missing: list[str]) -> None:
    secret = {"metadata": {"name": "s", "namespace": "d"}, "type": secret_type, "data": data}
    assert errors(SECRETS, secret) == [f"{field}: Required value" for field in missing]


def test_updates_keep_a_secret_s_type_and_an_immutable_map_s_data() -> None:
    old = {
        "metadata": {"name": "s", "namespace": "d", "uid": "u"},
        "type": "Opaque",
        "immutable": True,
        "data": {"a": "eA=="},
    }
    new = {**old, "type": "kubernetes.io/basic-auth", "immutable": False, "data": {"password": "eQ=="}}
    assert [str(error) for error in strategies.validate_update(SECRETS, new, old)] == [
        'type: Invalid value: "kubernetes.io/basic-auth": field is immutable',
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set",
    ]


def test_update_validation_reports_a_cause_once_and_a_selector_is_immutable() -> None:
    old = created(DEPLOYMENTS, deployment())
    old["metadata"]["uid"] = "u"
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"bad key!": "v"}
    new["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "x"}}
    new["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    shown = [str(error) for error in strategies.validate_update(DEPLOYMENTS, new, old)]
    assert len([line for line in shown if line.startswith("metadata.labels")]) == 1
    assert shown[-1] == 'spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"x"}}: field is immutable'
    assert (
        strategies.validate_update(DEPLOYMENTS, new, old, "status")
        == strategies.validate_update(DEPLOYMENTS, new, old)[:1]
    )


def test_a_binding_needs_a_role_ref() -> None:
    binding = {"metadata": {"name": "b", "namespace": "d"}, "roleRef": {"kind": "User"}}
    assert errors(ROLE_BINDINGS, binding) == [
        'roleRef.kind: Unsupported value: "User": supported values: "ClusterRole", "Role"',
        "roleRef.name: Required value",
    ]


def test_field_values_per_kind() -> None:
    assert strategies.field_values(SECRETS, {"metadata": {"name": "s", "namespace": "d"}, "type": "t"}) == {
        "metadata.name": "s",
        "metadata.namespace": "d",
        "type": "t",
    }
    assert strategies.field_values(NAMESPACES, {"metadata": {"name": "n"}, "status": {"phase": "Active"}}) == {
        "metadata.name": "n",
        "status.phase": "Active",
    }
    assert strategies.tracks_generation(DEPLOYMENTS) and strategies.tracks_generation(FLUNDERS)
    assert not strategies.tracks_generation(CONFIGMAPS)
