"""The three projections, Secret redaction and its revisions, and the visible-content key."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flask_krm.events import Redaction, Upsert, encode_body
from flask_krm.projection import (
    DEFAULT_PROJECTION,
    LAST_APPLIED_ANNOTATION,
    PROJECTIONS,
    Projected,
    RedactionRevisions,
    UnknownProjection,
    check_projection,
    escape_pointer_segment,
    holds_object_copy,
    is_secret,
    is_secret_object,
    pointer,
    project,
    visible_key,
)
from tests.corpus import body

RAW, FULL, SPEC = PROJECTIONS


def deployment(**extra: Any) -> dict[str, Any]:
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "uid": "u1",
            "name": "web",
            "namespace": "app",
            "resourceVersion": "7",
            "labels": {"app": "web"},
            "annotations": {"note": "keep", LAST_APPLIED_ANNOTATION: '{"spec":{}}'},
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {"replicas": 2},
        "status": {"readyReplicas": 1},
    }
    obj.update(extra)
    return obj


def secret(data: Any = None, **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"uid": "s1", "name": "creds", "namespace": "app", "resourceVersion": "1"},
        "type": "Opaque",
    }
    if data is not None:
        obj["data"] = data
    obj.update(extra)
    return obj


# ---------------------------------------------------------------------------- projections --


def test_the_projection_names() -> None:
    assert PROJECTIONS == ("krm-raw/v1", "krm-full/v1", "krm-spec/v1")
    assert DEFAULT_PROJECTION == "krm-full/v1"
    for name in PROJECTIONS:
        assert check_projection(name) == name


@pytest.mark.parametrize("name", ["krm-full", "krm-full/v2", "KRM-FULL/V1", "", None, 1])
def test_an_unknown_projection_is_a_typed_error(name: Any) -> None:
    with pytest.raises(UnknownProjection) as caught:
        check_projection(name)
    assert isinstance(caught.value, ValueError)
    with pytest.raises(UnknownProjection):
        project(deployment(), name)


@pytest.mark.parametrize("name", PROJECTIONS)
def test_machinery_is_removed_and_nothing_else(name: str) -> None:
    projected = project(deployment(), name)
    expected = deployment()
    del expected["metadata"]["managedFields"]
    del expected["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
    if name == SPEC:
        del expected["status"]
    assert projected.object == expected
    assert projected.redacted_paths == ()


@pytest.mark.parametrize("name", PROJECTIONS)
def test_an_annotations_map_the_projection_emptied_is_removed(name: str) -> None:
    obj = deployment()
    obj["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: "{}"}
    assert "annotations" not in project(obj, name).object["metadata"]


@pytest.mark.parametrize("name", PROJECTIONS)
def test_containers_the_server_sent_empty_are_kept(name: str) -> None:
    obj = deployment(status={})
    obj["metadata"]["annotations"] = {}
    obj["metadata"]["managedFields"] = []
    projected = project(obj, name).object
    assert projected["metadata"]["annotations"] == {}
    assert "managedFields" not in projected["metadata"]
    assert ("status" in projected) == (name != SPEC)


def test_status_is_removed_only_by_the_spec_projection() -> None:
    assert project(deployment(), RAW).object["status"] == {"readyReplicas": 1}
    assert project(deployment(), FULL).object["status"] == {"readyReplicas": 1}
    assert "status" not in project(deployment(), SPEC).object


def test_the_corpus_bodies_project_to_their_wire_forms() -> None:
    assert project(body("secret-token.v1"), FULL).object == body("secret-token.v1-wire")
    assert project(body("deploy-web.v1"), SPEC).object == body("deploy-web.v1-spec")


@pytest.mark.parametrize("name", PROJECTIONS)
def test_the_input_is_never_mutated_and_nothing_is_shared(name: str) -> None:
    for raw in (deployment(), secret({"a": "b"}, stringData={"c": "d"}), body("deploy-web.v1")):
        before = copy.deepcopy(raw)
        projected = project(raw, name).object
        assert raw == before
        projected["metadata"]["labels"] = "changed"
        if "spec" in projected:
            projected["spec"]["replicas"] = 99
        assert raw == before


@pytest.mark.parametrize("name", PROJECTIONS)
def test_a_shared_projection_is_the_same_projection_reusing_the_kept_values(name: str) -> None:
    for raw in (deployment(), secret({"a": "b"}, stringData={"c": "d"}), body("deploy-web.v1")):
        before = copy.deepcopy(raw)
        shared, copied = project(raw, name, share=True), project(raw, name)
        assert raw == before
        assert shared == copied and shared.hidden == copied.hidden
        assert shared.object is not raw and shared.object["metadata"] is not raw["metadata"]
        for key, value in shared.object.items():
            if key != "metadata" and isinstance(value, (dict, list)):
                assert value is raw[key], f"{key} is kept as it is: not copied"
        assert "managedFields" not in shared.object["metadata"]
        annotations = shared.object["metadata"].get("annotations")
        assert annotations is None or LAST_APPLIED_ANNOTATION not in annotations


def test_a_mapping_is_required() -> None:
    with pytest.raises(TypeError):
        project(["not", "an", "object"], FULL)  # type: ignore[arg-type]


def test_malformed_metadata_is_kept_verbatim() -> None:
    obj = deployment()
    obj["metadata"] = "not a map"
    assert project(obj, FULL).object["metadata"] == "not a map"
    obj = deployment()
    obj["metadata"]["annotations"] = ["a", LAST_APPLIED_ANNOTATION]
    assert project(obj, FULL).object["metadata"]["annotations"] == ["a", LAST_APPLIED_ANNOTATION]


# ------------------------------------------------------------------------------ redaction --


@pytest.mark.parametrize("name", [FULL, SPEC])
def test_secret_values_are_withheld_keys_disclosed(name: str) -> None:
    raw = secret({"username": "Ym9i", "token": "aHVudGVyMg=="}, stringData={"extra": "plain"})
    projected = project(raw, name)
    assert "data" not in projected.object and "stringData" not in projected.object
    assert projected.redacted_paths == ("/data/token", "/data/username", "/stringData/extra")
    text = json.dumps(projected.object) + repr(projected)
    for value in ("Ym9i", "aHVudGVyMg==", "plain"):
        assert value not in text


def test_the_raw_projection_redacts_nothing() -> None:
    raw = secret({"token": "aHVudGVyMg=="})
    projected = project(raw, RAW)
    assert projected.object["data"] == {"token": "aHVudGVyMg=="}
    assert projected.redacted_paths == ()


def test_a_data_map_the_server_sent_empty_is_kept() -> None:
    projected = project(secret({}, stringData={}), FULL)
    assert projected.object["data"] == {} and projected.object["stringData"] == {}
    assert projected.redacted_paths == ()
    with_null = secret()
    with_null["data"] = None
    assert project(with_null, FULL).object["data"] is None


def test_redaction_is_decided_by_kind_never_by_a_values_look() -> None:
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"uid": "c"},
        "data": {"k": "**REDACTED**"},
    }
    assert project(configmap, FULL).object["data"] == {"k": "**REDACTED**"}
    custom = secret({"k": "v"}, apiVersion="example.com/v1")
    assert project(custom, FULL).object["data"] == {"k": "v"}
    other_kind = secret({"k": "v"}, kind="SealedSecret")
    assert project(other_kind, FULL).object["data"] == {"k": "v"}


def test_redacted_paths_are_escaped_and_sorted() -> None:
    projected = project(secret({"user~name": "1", "a/b": "2", "b": "3", "~/": "4"}), FULL)
    assert projected.redacted_paths == ("/data/a~1b", "/data/b", "/data/user~0name", "/data/~0~1")
    assert escape_pointer_segment("~1") == "~01"
    assert pointer("data", "a/b", "~") == "/data/a~1b/~0"


def test_a_data_field_that_is_not_a_map_is_withheld_whole() -> None:
    projected = project(secret("c2VjcmV0"), FULL)
    assert "data" not in projected.object
    assert projected.redacted_paths == ("/data",)


def test_the_last_applied_copy_of_a_secret_is_removed_everywhere() -> None:
    raw = secret({"token": "aHVudGVyMg=="})
    raw["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: json.dumps(raw)}
    for name in PROJECTIONS:
        assert "annotations" not in project(raw, name).object["metadata"]


KAPP_ORIGINAL = "kapp.k14s.io/original"


def secret_with_copies(token: str = "aHVudGVyMg==") -> dict[str, Any]:
    raw = secret({"token": token})
    copy_of_it = json.dumps(raw)
    raw["metadata"]["annotations"] = {
        KAPP_ORIGINAL: copy_of_it,
        "example.com/backup": json.dumps({"stringData": {"password": "hunter2"}}),
        "example.com/spaced": "  " + json.dumps({"data": {"token": token}}),
        "note": "keep me",
        "example.com/config": '{"replicas": 2}',
        "example.com/broken": '{"data": ',
    }
    return raw


@pytest.mark.parametrize("name", [FULL, SPEC])
def test_annotations_holding_a_copy_of_a_secret_are_withheld_like_its_values(name: str) -> None:
    projected = project(secret_with_copies(), name)
    assert projected.object["metadata"]["annotations"] == {
        "note": "keep me",
        "example.com/config": '{"replicas": 2}',
        "example.com/broken": '{"data": ',
    }
    assert projected.redacted_paths == (
        "/data/token",
        "/metadata/annotations/example.com~1backup",
        "/metadata/annotations/example.com~1spaced",
        "/metadata/annotations/kapp.k14s.io~1original",
    )
    text = json.dumps(projected.object)
    assert "hunter2" not in text and "aHVudGVyMg==" not in text


def test_only_a_json_object_with_secret_fields_counts_as_a_copy() -> None:
    assert holds_object_copy("kapp.k14s.io/original", "not even JSON")
    assert holds_object_copy("x", '{"data": null}') and holds_object_copy("x", '\n {"stringData": {}}')
    for value in ('[{"data": {}}]', '{"spec": {"data": 1}}', '"{\\"data\\": 1}"', "{" * 5000, "{data}", None, 7):
        assert not holds_object_copy("x", value), value


def test_object_copies_are_withheld_in_shared_projections_too() -> None:
    raw = secret_with_copies()
    assert project(raw, FULL, share=True) == project(raw, FULL)


def test_an_annotations_map_of_copies_only_is_removed_when_withheld() -> None:
    raw = secret({"token": "a"})
    raw["metadata"]["annotations"] = {KAPP_ORIGINAL: json.dumps(raw)}
    projected = project(raw, FULL)
    assert "annotations" not in projected.object["metadata"]
    assert projected.redacted_paths == ("/data/token", "/metadata/annotations/kapp.k14s.io~1original")


def test_object_copies_stay_on_other_kinds_and_under_the_raw_projection() -> None:
    raw = secret_with_copies()
    assert project(raw, RAW).object["metadata"]["annotations"] == raw["metadata"]["annotations"]
    configmap = {**secret_with_copies(), "kind": "ConfigMap"}
    assert project(configmap, FULL).object["metadata"]["annotations"] == raw["metadata"]["annotations"]
    assert project(configmap, FULL).redacted_paths == ()


def test_a_withheld_copy_bumps_its_revision_when_the_copy_changes() -> None:
    revisions = RedactionRevisions()
    first, rotated = project(secret_with_copies("a"), FULL), project(secret_with_copies("b"), FULL)
    path = "/metadata/annotations/kapp.k14s.io~1original"
    assert dict((r.path, r.rev) for r in revisions.revise("s1", first))[path] == 1
    assert dict((r.path, r.rev) for r in revisions.revise("s1", first))[path] == 1
    assert dict((r.path, r.rev) for r in revisions.revise("s1", rotated))[path] == 2


# ------------------------------------------------------------------------------ revisions --


def test_revisions_start_at_1_and_bump_when_the_hidden_value_changes() -> None:
    revisions = RedactionRevisions()
    v1 = project(secret({"token": "a", "user": "u"}), FULL)
    v2 = project(secret({"token": "b", "user": "u"}), FULL)
    assert revisions.revise("s1", v1) == (Redaction("/data/token", 1), Redaction("/data/user", 1))
    assert revisions.revise("s1", v1) == (Redaction("/data/token", 1), Redaction("/data/user", 1))
    assert revisions.revise("s1", v2) == (Redaction("/data/token", 2), Redaction("/data/user", 1))
    assert revisions.revise("s1", v1) == (Redaction("/data/token", 3), Redaction("/data/user", 1))


def test_a_path_no_longer_withheld_is_forgotten() -> None:
    revisions = RedactionRevisions()
    revisions.revise("s1", project(secret({"token": "a"}), FULL))
    revisions.revise("s1", project(secret({"token": "b"}), FULL))
    assert revisions.revise("s1", project(secret({"other": "x"}), FULL)) == (Redaction("/data/other", 1),)
    assert revisions.revise("s1", project(secret({"token": "b"}), FULL)) == (Redaction("/data/token", 1),)
    assert revisions.revise("s1", project(secret({}), FULL)) == ()
    assert "s1" not in revisions


def test_forget_and_retain() -> None:
    revisions = RedactionRevisions()
    for uid in ("a", "b", "c"):
        revisions.revise(uid, project(secret({"token": "x"}), FULL))
        revisions.revise(uid, project(secret({"token": "y"}), FULL))
    revisions.forget("a")
    revisions.retain({"b"})
    assert len(revisions) == 1 and "b" in revisions
    assert revisions.revise("c", project(secret({"token": "y"}), FULL)) == (Redaction("/data/token", 1),)
    assert revisions.revise("b", project(secret({"token": "y"}), FULL)) == (Redaction("/data/token", 2),)


def test_hidden_values_are_kept_only_as_keyed_digests() -> None:
    projected = project(secret({"token": "aHVudGVyMg=="}), FULL)
    ((path, digest),) = projected.hidden
    assert path == "/data/token" and isinstance(digest, bytes) and b"aHVudGVyMg" not in digest
    assert "hidden" not in repr(projected)
    assert projected == Projected(projected.object, projected.redacted_paths)


# ---------------------------------------------------------------------------- visible key --


def test_the_visible_key_ignores_the_resource_version_only() -> None:
    a = project(deployment(), FULL)
    newer = deployment()
    newer["metadata"]["resourceVersion"] = "8"
    newer["metadata"]["managedFields"] = []
    assert visible_key(a) == visible_key(project(newer, FULL))
    assert visible_key(a) != visible_key(project(deployment(spec={"replicas": 3}), FULL))
    assert visible_key(a) != visible_key(project(deployment(status={"readyReplicas": 2}), FULL))
    assert visible_key(project(deployment(), SPEC)) == visible_key(
        project(deployment(status={"readyReplicas": 2}), SPEC)
    )


def test_the_visible_key_includes_the_redaction_records() -> None:
    projected = project(secret({"token": "a"}), FULL)
    assert visible_key(projected, [Redaction("/data/token", 1)]) != visible_key(
        projected, [Redaction("/data/token", 2)]
    )
    assert visible_key(projected, ()) != visible_key(projected, [Redaction("/data/token", 1)])
    assert visible_key(projected.object, ()) == visible_key(projected, ())


def test_the_visible_key_does_not_mutate() -> None:
    projected = project(deployment(), FULL)
    before = copy.deepcopy(projected.object)
    visible_key(projected)
    assert projected.object == before


# ------------------------------------------------------------------------------ properties --

json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
json_values = st.recursive(
    json_scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=12,
)
keys = st.text(min_size=1, max_size=10).filter(lambda k: "SECRET" not in k)
secret_values = st.text(max_size=12).map(lambda v: "SECRET-" + v)
plain = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-./", max_size=12)


@st.composite
def any_object(draw: st.DrawFn) -> dict[str, Any]:
    metadata: dict[str, Any] = draw(st.dictionaries(st.sampled_from(["uid", "name", "resourceVersion"]), plain))
    if draw(st.booleans()):
        metadata["managedFields"] = draw(json_values)
    if draw(st.booleans()):
        annotations = draw(st.dictionaries(keys, st.text(max_size=5), max_size=3))
        if draw(st.booleans()):
            annotations[LAST_APPLIED_ANNOTATION] = draw(st.text(max_size=10))
        metadata["annotations"] = annotations
    obj: dict[str, Any] = draw(
        st.dictionaries(st.sampled_from(["spec", "status", "data", "stringData", "type"]), json_values)
    )
    obj["apiVersion"] = draw(st.sampled_from(["v1", "apps/v1", "example.com/v1"]))
    obj["kind"] = draw(st.sampled_from(["Secret", "ConfigMap", "Deployment"]))
    obj["metadata"] = metadata
    return obj


@st.composite
def any_secret(draw: st.DrawFn) -> dict[str, Any]:
    raw = secret(draw(st.dictionaries(keys, secret_values, max_size=4)))
    if draw(st.booleans()):
        raw["stringData"] = draw(st.dictionaries(keys, secret_values, max_size=3))
    raw["metadata"]["labels"] = draw(st.dictionaries(plain, plain, max_size=2))
    if draw(st.booleans()):  # as kubectl apply leaves it: a full copy, values included
        raw["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: json.dumps(raw)}
    return raw


@given(any_secret(), st.sampled_from([FULL, SPEC]))
def test_no_secret_value_survives_full_or_spec(raw: dict[str, Any], name: str) -> None:
    projected = project(raw, name)
    revisions = RedactionRevisions()
    event = Upsert("added", projected.object, revisions.revise("s1", projected))
    wire = encode_body(event) + repr(projected).encode() + repr(event).encode()
    assert b"SECRET-" not in wire
    expected = sorted(
        f"/{field}/{escape_pointer_segment(k)}" for field in ("data", "stringData") for k in raw.get(field) or {}
    )
    assert list(projected.redacted_paths) == expected


@given(any_object(), st.sampled_from(PROJECTIONS))
def test_projecting_a_projected_object_changes_nothing(raw: dict[str, Any], name: str) -> None:
    once = project(raw, name).object
    assert project(once, name).object == once


@given(any_object(), st.sampled_from(PROJECTIONS))
def test_projection_never_mutates_its_input(raw: dict[str, Any], name: str) -> None:
    before = copy.deepcopy(raw)
    project(raw, name)
    assert raw == before


@pytest.mark.parametrize(
    ("group", "resource", "expected"),
    [("", "secrets", True), ("", "configmaps", False), ("example.com", "secrets", False), ("", "Secret", False)],
)
def test_a_secret_is_the_core_groups_secrets_resource(group: str, resource: str, expected: bool) -> None:
    assert is_secret(group, resource) is expected


@pytest.mark.parametrize(
    ("api_version", "kind", "expected"),
    [
        ("v1", "Secret", True),
        ("v1", "ConfigMap", False),
        ("example.com/v1", "Secret", False),  # a custom resource of the same kind is not one
        ("v2", "Secret", False),
        (None, "Secret", False),
    ],
)
def test_an_object_is_a_secret_by_its_group_and_kind(api_version: str | None, kind: str, expected: bool) -> None:
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "s"}, "data": {"k": "dmFsdWU="}}
    assert is_secret_object(obj) is expected
    assert bool(project(obj).redacted_paths) is expected
