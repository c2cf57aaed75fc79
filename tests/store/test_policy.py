"""Edit policies and effective editability: roots, machinery, status, redactions, opaque values."""

from __future__ import annotations

from typing import Any

import pytest

from flask_krm.events import Redaction
from flask_krm.store import (
    DEFAULT_POLICY,
    READ_ONLY_POLICY,
    EditPolicy,
    LiveResourceStore,
    ReadOnlyPathError,
)

from .objects import CM_UID, added, configmap, deployment, store_with

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def native_configmap() -> dict[str, Any]:
    obj = configmap()
    obj["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    obj["metadata"]["annotations"][LAST_APPLIED] = "{}"
    obj["binaryData"] = {"blob": "AAEC"}
    obj["status"] = {"phase": "ok"}
    return obj


@pytest.mark.parametrize(
    "path",
    [
        ("spec", "replicas"),
        ("metadata", "labels", "tier"),
        ("metadata", "annotations", "note"),
        ("data", "x"),
        ("stringData", "x"),
        ("spec", "template", "spec", "containers", 0, "image"),
    ],
)
def test_the_default_policy_edits_spec_labels_annotations_data_and_string_data(path: tuple[Any, ...]) -> None:
    store = store_with(deployment())
    assert not store.is_read_only("deploy-1", path)


@pytest.mark.parametrize(
    "path",
    [
        (),
        ("metadata",),
        ("metadata", "name"),
        ("metadata", "uid"),
        ("metadata", "resourceVersion"),
        ("status",),
        ("status", "readyReplicas"),
        ("kind",),
        ("apiVersion",),
        ("metadata", "annotations"),
        ("metadata", "managedFields"),
        ("metadata", "annotations", LAST_APPLIED),
        ("binaryData", "blob"),
    ],
)
def test_everything_else_is_read_only_under_the_default_policy(path: tuple[Any, ...]) -> None:
    store = store_with(native_configmap())
    assert store.is_read_only(CM_UID, path)
    with pytest.raises(ReadOnlyPathError):
        store.set_value(CM_UID, path, "x")


@pytest.mark.parametrize(
    "policy",
    [DEFAULT_POLICY, EditPolicy.only(("metadata",)), EditPolicy.only(("metadata", "annotations")), EditPolicy.only(())],
)
def test_machinery_is_read_only_under_every_policy(policy: EditPolicy) -> None:
    store = store_with(native_configmap(), store=LiveResourceStore(policy))
    for path in [
        ("metadata", "managedFields"),
        ("metadata", "managedFields", 0, "manager"),
        ("metadata", "annotations", LAST_APPLIED),
    ]:
        assert store.is_read_only(CM_UID, path)
        with pytest.raises(ReadOnlyPathError):
            store.remove_key(CM_UID, path)
    # A parent of machinery is never editable whole (removing it would remove the machinery)
    with pytest.raises(ReadOnlyPathError):
        store.remove_key(CM_UID, ("metadata", "annotations"))
    assert store.patch(CM_UID) is None


def test_status_and_binary_data_can_never_be_made_editable() -> None:
    for root in [("status",), ("status", "phase"), ("binaryData",), ("metadata", "managedFields")]:
        with pytest.raises(ValueError, match="read-only under every policy"):
            EditPolicy.only(root)
    with pytest.raises(ValueError, match="map keys"):
        EditPolicy.only(("spec", 0))  # type: ignore[arg-type]
    store = store_with(native_configmap(), store=LiveResourceStore(EditPolicy.only(())))
    assert store.is_read_only(CM_UID, ("status", "phase"))
    assert not store.is_read_only(CM_UID, ("metadata", "name"))  # the host asked for everything else


def test_the_read_only_policy_refuses_every_edit() -> None:
    store = store_with(deployment(), store=LiveResourceStore(READ_ONLY_POLICY))
    with pytest.raises(ReadOnlyPathError):
        store.set_value("deploy-1", ("spec", "replicas"), 3)
    assert store.is_read_only("deploy-1", ("spec", "replicas"))


def test_a_narrowed_policy_allows_only_its_roots() -> None:
    store = store_with(configmap(), store=LiveResourceStore(EditPolicy.only(("data",), ("metadata", "labels"))))
    store.set_value(CM_UID, ("data", "level"), "debug")
    store.set_value(CM_UID, ("metadata", "labels", "tier"), "web")
    with pytest.raises(ReadOnlyPathError):
        store.set_value(CM_UID, ("metadata", "annotations", "note"), "changed")
    assert store.patch(CM_UID) == {"data": {"level": "debug"}, "metadata": {"labels": {"tier": "web"}}}


def test_redacted_values_and_their_parents_are_read_only_but_siblings_are_editable() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"uid": "s-1", "resourceVersion": "1"}}
    store = LiveResourceStore()
    store.apply(added(secret, Redaction("/data/token", 1), Redaction("/data/a~1b", 1)))
    assert store.is_read_only("s-1", ("data", "token"))
    assert store.is_read_only("s-1", ("data", "a/b"))
    assert store.is_read_only("s-1", ("data", "token", "deeper"))
    with pytest.raises(ReadOnlyPathError):
        store.remove_key("s-1", ("data",))  # data: null would delete the hidden values
    store.set_value("s-1", ("data", "fresh"), "dmFsdWU=")
    assert store.patch("s-1") == {"data": {"fresh": "dmFsdWU="}}


def test_opaque_values_are_read_only() -> None:
    obj = configmap()
    obj["data"]["broken"] = "\udcff"  # not UTF-8
    obj["data"]["raw"] = b"bytes"
    obj["spec"] = {"items": ["ok", b"bytes"]}
    store = store_with(obj)
    assert store.is_read_only(CM_UID, ("data", "broken"))
    assert store.is_read_only(CM_UID, ("data", "raw"))
    assert store.is_read_only(CM_UID, ("spec", "items"))  # a list holding an opaque value is opaque whole
    assert store.is_read_only(CM_UID, ("spec", "items", 0))
    assert not store.is_read_only(CM_UID, ("data", "level"))
    store.set_value(CM_UID, ("data", "level"), "debug")
    assert store.patch(CM_UID) == {"data": {"level": "debug"}}


def test_a_policy_within_fields_is_exactly_those_fields_and_what_is_under_them() -> None:
    shown = (("metadata", "labels"), ("spec", "replicas"), ("spec", "template", "spec", "containers"))
    narrowed = DEFAULT_POLICY.within(shown)
    assert narrowed.roots == shown
    assert narrowed.covers(("spec", "template", "spec", "containers", "0", "image"))
    for outside in (
        ("spec", "template", "spec", "serviceAccountName"),
        ("spec",),
        ("metadata", "annotations"),
        ("data",),
    ):
        assert not narrowed.covers(outside), outside


def test_a_field_leading_to_editable_regions_keeps_only_those() -> None:
    assert DEFAULT_POLICY.within([("metadata",)]).roots == (("metadata", "labels"), ("metadata", "annotations"))


def test_fields_the_policy_never_allows_stay_read_only() -> None:
    narrowed = DEFAULT_POLICY.within(
        [("metadata", "name"), ("status",), ("type",), ("binaryData",), ("metadata", "annotations", LAST_APPLIED)]
    )
    assert narrowed.roots == ()
    assert EditPolicy.only(("data",)).within([("spec",), ("data", "a")]).roots == (("data", "a"),)


def test_nested_and_repeated_fields_collapse_to_the_outermost() -> None:
    assert DEFAULT_POLICY.within([("spec", "replicas"), ("spec",), ("spec",)]).roots == (("spec",),)


def test_a_field_naming_a_list_item_cannot_be_a_root() -> None:
    with pytest.raises(ValueError, match="list item"):
        DEFAULT_POLICY.within([("spec", "containers", 0)])
