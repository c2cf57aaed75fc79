"""``metadata`` validation: names, keys and values by apimachinery's rules, counted in bytes, with one
cause per failed rule; what an update may not change."""

from __future__ import annotations

import typing as t

import pytest

from flask_krm.testing.simulator.object_meta import (
    config_map_key,
    dns1123_label,
    dns1123_subdomain,
    dns_subdomain_name,
    generated_name_prefix,
    kube_finalizers,
    label_value,
    object_meta,
    object_meta_update,
    path_segment_name,
    qualified_name,
    rbac_name,
    validate_annotations,
    validate_finalizers,
    validate_owner_references,
)


def fields(errors: list[t.Any]) -> list[tuple[str, str]]:
    return [(error.field, error.type) for error in errors]


@pytest.mark.parametrize("valid", ["a", "my-name", "123-abc", "a" * 63])
def test_valid_dns_labels(valid: str) -> None:
    assert dns1123_label(valid) == []


def test_a_subdomain_is_no_label_and_is_told_it_has_dots() -> None:
    assert dns1123_label("a.b") == ["must not contain dots"]
    (message,) = dns1123_label("A_b")
    assert (
        message.startswith("a lowercase RFC 1123 label must consist of")
        and "(e.g. 'my-name',  or '123-abc', " in message
    )
    assert dns1123_label("a" * 64) == ["must be no more than 63 characters"]


def test_go_anchors_a_trailing_newline_out() -> None:
    assert dns1123_subdomain("example.com\n") != [] and label_value("v\n") != [] and config_map_key("k\n") != []


def test_lengths_are_counted_in_bytes() -> None:
    assert label_value("é" * 32) == [
        "must be no more than 63 bytes",
        label_value("é")[0],  # and é is no label character
    ]
    assert len(dns1123_subdomain("a" * 254)) == 1 and dns1123_subdomain("a" * 253) == []


def test_label_keys_have_an_optional_subdomain_prefix() -> None:
    assert qualified_name("example.com/My_Name.1") == []
    assert qualified_name("/name") == ["prefix part must be non-empty"]
    assert qualified_name("example.com/") == ["name part must be non-empty", qualified_name("-")[0]]
    assert qualified_name("Example.com/name")[0].startswith("prefix part a lowercase RFC 1123 subdomain")
    assert qualified_name("x" * 64) == ["name part must be no more than 63 bytes"]
    (too_many,) = qualified_name("a/b/c")
    assert too_many.startswith("a valid label key must consist of") and too_many.endswith("(e.g. 'example.com/MyName')")


def test_label_values_may_be_empty() -> None:
    assert label_value("") == [] and label_value("My_value.1") == [] and label_value("-a") != []


@pytest.mark.parametrize(
    ("key", "complaint"), [(".", "must not be '.'"), ("..", "must not be '..'"), ("..data", "must not start with '..'")]
)
def test_config_keys_may_not_be_dot_paths(key: str, complaint: str) -> None:
    assert config_map_key(key) == [complaint]
    assert config_map_key(".hidden") == [] and config_map_key("KEY_name-1.txt") == []


def test_a_generate_name_may_end_in_a_dash() -> None:
    assert dns_subdomain_name("web-", True) == [] and dns_subdomain_name("web-", False) != []
    assert generated_name_prefix("p" * 70) == "p" * 58 and generated_name_prefix("web-") == "web-"


def test_path_segment_and_rbac_names() -> None:
    assert path_segment_name("a/b%c", False) == ["may not contain '/'", "may not contain '%'"]
    assert path_segment_name("..", False) == ["may not be '..'"] and path_segment_name("..", True) == []
    assert rbac_name("..", True) == ["may not be '..'"] and rbac_name("system:admin", False) == []


def test_object_meta_names_every_failure_in_order() -> None:
    metadata = {"generateName": "Bad_", "labels": {"ok": "-bad"}, "finalizers": ["orphan", "foregroundDeletion"]}
    assert fields(object_meta(metadata, True, dns_subdomain_name)) == [
        ("metadata.generateName", "FieldValueInvalid"),
        ("metadata.name", "FieldValueRequired"),
        ("metadata.namespace", "FieldValueRequired"),
        ("metadata.labels", "FieldValueInvalid"),
        ("metadata.finalizers", "FieldValueInvalid"),
    ]
    assert object_meta({"name": "a", "namespace": "ns"}, True, dns_subdomain_name) == []


def test_a_cluster_scoped_object_may_not_name_a_namespace_and_a_namespace_must_be_a_label() -> None:
    (forbidden,) = object_meta({"name": "a", "namespace": "ns"}, False, dns_subdomain_name)
    assert str(forbidden) == "metadata.namespace: Forbidden: not allowed on this type"
    (bad,) = object_meta({"name": "a", "namespace": "a.b"}, True, dns_subdomain_name)
    assert str(bad) == 'metadata.namespace: Invalid value: "a.b": must not contain dots'


def test_annotations_keys_in_any_case_and_their_total_size() -> None:
    assert validate_annotations({"Example.COM/Key": "v"}) == []
    assert fields(validate_annotations({"a/b/c": "v"})) == [("metadata.annotations", "FieldValueInvalid")]
    (too_long,) = validate_annotations({"k": "v" * (256 * 1024)})
    assert str(too_long) == "metadata.annotations: Too long: may not be more than 262144 bytes"
    assert validate_annotations({"k": "v" * (256 * 1024 - 1)}) == []


def test_owner_references() -> None:
    good = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u", "controller": True}
    assert validate_owner_references([good]) == []
    assert fields(validate_owner_references([{"apiVersion": "a/b/c"}])) == [
        ("metadata.ownerReferences[0].apiVersion", "FieldValueInvalid"),
        ("metadata.ownerReferences[0].kind", "FieldValueRequired"),
        ("metadata.ownerReferences[0].name", "FieldValueRequired"),
        ("metadata.ownerReferences[0].uid", "FieldValueRequired"),
    ]
    (event,) = validate_owner_references([{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}])
    assert event.detail == "/v1, Kind=Event is disallowed from being an owner"
    assert event.value == {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}
    (two,) = validate_owner_references([good, {**good, "name": "other"}])
    assert two.detail.endswith('Found "true" in references for Deployment/web and Deployment/other')


def test_finalizers() -> None:
    names = ["kubernetes", "custom", "example.com/x", "orphan"]
    assert fields(kube_finalizers(names)) == [("metadata.finalizers[1]", "FieldValueInvalid")]
    (both,) = validate_finalizers(["orphan", "foregroundDeletion"])
    assert both.detail == "finalizer orphan and foregroundDeletion cannot be both set"


def test_an_update_keeps_identity_and_adds_no_finalizer_while_deleting() -> None:
    old = {"uid": "u", "deletionTimestamp": "T", "finalizers": ["a/x"]}
    new = {"uid": "v", "deletionTimestamp": "T", "finalizers": ["a/x", "b/y", "a/z"]}
    errors = object_meta_update(new, old)
    assert [str(error) for error in errors] == [
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new "
        'finalizers []string{"a/z", "b/y"}',
        'metadata.uid: Invalid value: "v": field is immutable',
    ]
    assert object_meta_update({"uid": "u", "finalizers": ["b/y"]}, {"uid": "u"}) == []
