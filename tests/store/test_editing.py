"""Edit operations, their typed errors, conflict resolution and derived dirty state."""

from __future__ import annotations

from typing import Any

import pytest

from flask_krm.events import Redaction
from flask_krm.store import (
    Change,
    InvalidValueError,
    KeyExistsError,
    MalformedPathError,
    MissingKeyError,
    PathTypeError,
    ReadOnlyPathError,
    UnknownResourceError,
)

from .objects import CM_UID, added, configmap, deployment, modified, store_with, with_changes


def test_set_value_creates_missing_maps_and_is_dirty_at_the_new_path() -> None:
    store = store_with(deployment())
    store.set_value("deploy-1", ("spec", "strategy", "type"), "Recreate")
    assert store.draft("deploy-1")["spec"]["strategy"] == {"type": "Recreate"}
    assert store.dirty("deploy-1") == [("spec", "strategy")]
    assert store.changes("deploy-1") == [Change(("spec", "strategy"), "add", None, {"type": "Recreate"})]
    assert store.patch("deploy-1") == {"spec": {"strategy": {"type": "Recreate"}}}


def test_set_value_into_a_list_changes_the_whole_array() -> None:
    store = store_with(deployment())
    store.set_value("deploy-1", ("spec", "template", "spec", "containers", 0, "image"), "web:2")
    store.set_value("deploy-1", ("spec", "template", "spec", "containers", 2), {"name": "new", "image": "n:1"})
    containers = store.draft("deploy-1")["spec"]["template"]["spec"]["containers"]
    assert [c["image"] for c in containers] == ["web:2", "log:1", "n:1"]
    assert store.dirty("deploy-1") == [("spec", "template", "spec", "containers")]
    assert store.patch("deploy-1") == {"spec": {"template": {"spec": {"containers": containers}}}}


def test_set_value_creates_a_list_for_index_zero() -> None:
    store = store_with(deployment())
    store.set_value("deploy-1", ("spec", "args", 0), "--verbose")
    assert store.draft("deploy-1")["spec"]["args"] == ["--verbose"]


@pytest.mark.parametrize(
    ("path", "error"),
    [
        (("spec", "replicas", "deeper"), PathTypeError),  # indexing into a number
        (("spec", "template", "spec", "containers", 5), PathTypeError),  # past the end
        (("spec", "template", "spec", "containers", "web"), PathTypeError),  # a key into a list
        (("spec", "template", 0), PathTypeError),  # an index into a map
        (("spec", "args", 1), PathTypeError),  # a new list must start at index 0
        ("spec.replicas", MalformedPathError),  # a dotted string is not a path
        (("spec", -1), MalformedPathError),
        (("spec", True), MalformedPathError),
        (("spec", 1.5), MalformedPathError),
        ((), ReadOnlyPathError),
        (("status", "readyReplicas"), ReadOnlyPathError),
    ],
)
def test_set_value_refuses_bad_paths_with_typed_errors(path: Any, error: type[Exception]) -> None:
    store = store_with(deployment())
    before = store.draft("deploy-1")
    with pytest.raises(error):
        store.set_value("deploy-1", path, "x")
    assert store.draft("deploy-1") == before


def test_indexing_into_a_string_is_a_type_error() -> None:
    store = store_with(configmap())
    with pytest.raises(PathTypeError, match="string"):
        store.set_value(CM_UID, ("data", "level", "nested"), "x")


@pytest.mark.parametrize("value", [{"a": None}, b"bytes", "\udcff", float("nan"), {1: "x"}, object()])
def test_set_value_refuses_values_a_merge_patch_cannot_write(value: Any) -> None:
    store = store_with(configmap())
    with pytest.raises(InvalidValueError):
        store.set_value(CM_UID, ("data", "level"), value)
    with pytest.raises(InvalidValueError):
        store.set_value(CM_UID, ("data", "level"), None)  # null in a map: use remove_key
    store.set_value(CM_UID, ("spec", "list"), (None, 1))  # null inside an array is fine; a tuple is a list
    assert store.draft(CM_UID)["spec"]["list"] == [None, 1]


def test_every_edit_refuses_an_unknown_uid() -> None:
    store = store_with(configmap())
    for call in [
        lambda: store.set_value("nope", ("data", "x"), "y"),
        lambda: store.add_key("nope", ("data", "x")),
        lambda: store.remove_key("nope", ("data", "x")),
        lambda: store.rename_key("nope", ("data", "level"), "lvl"),
        lambda: store.revert("nope"),
        lambda: store.take_theirs("nope", ("data", "x")),
        lambda: store.keep_mine("nope", ("data", "x")),
        lambda: store.is_read_only("nope", ("data", "x")),
        lambda: store.patch("nope"),
        lambda: store.capture_save("nope"),
        lambda: store.capture_reconciliation("nope"),
    ]:
        with pytest.raises(UnknownResourceError):
            call()


def test_remove_key_removes_and_the_removal_survives_unrelated_server_changes() -> None:
    store = store_with(configmap())
    store.remove_key(CM_UID, ("data", "replicas"))
    store.remove_key(CM_UID, ("data", "absent"))  # a no-op
    store.apply(modified(with_changes(configmap(), "2", {("data", "level"): "warn"})))
    assert store.draft(CM_UID)["data"] == {"level": "warn"}
    assert store.patch(CM_UID) == {"data": {"replicas": None}}
    with pytest.raises(PathTypeError):
        store.remove_key(CM_UID, ("data", "level", "x"))


def test_remove_key_removes_map_keys_only() -> None:
    store = store_with(deployment())
    with pytest.raises(PathTypeError, match="map key"):
        store.remove_key("deploy-1", ("spec", "template", "spec", "containers", 0))


def test_add_key_adds_and_refuses_an_existing_key() -> None:
    store = store_with(configmap())
    store.add_key(CM_UID, ("data", "new"))
    store.add_key(CM_UID, ("metadata", "labels", "app.kubernetes.io/part-of"), "shop")
    assert store.draft(CM_UID)["data"]["new"] == ""
    with pytest.raises(KeyExistsError):
        store.add_key(CM_UID, ("data", "level"), "x")
    with pytest.raises(PathTypeError):
        store.add_key(CM_UID, ("data", "level", 0), "x")
    assert store.patch(CM_UID) == {
        "data": {"new": ""},
        "metadata": {"labels": {"app.kubernetes.io/part-of": "shop"}},
    }


def test_rename_key_keeps_the_position_and_patches_old_null_and_new_value() -> None:
    store = store_with(configmap())
    store.rename_key(CM_UID, ("data", "level"), "log.level/v2")
    assert list(store.draft(CM_UID)["data"]) == ["log.level/v2", "replicas"]
    assert store.patch(CM_UID) == {"data": {"level": None, "log.level/v2": "info"}}
    with pytest.raises(MissingKeyError):
        store.rename_key(CM_UID, ("data", "level"), "other")
    with pytest.raises(MissingKeyError):
        store.rename_key(CM_UID, ("data", "missing", "deeper"), "other")
    with pytest.raises(KeyExistsError):
        store.rename_key(CM_UID, ("data", "replicas"), "log.level/v2")
    with pytest.raises(MalformedPathError):
        store.rename_key(CM_UID, ("data", "replicas"), 7)  # type: ignore[arg-type]


def test_rename_key_needs_both_keys_editable() -> None:
    store = store_with(configmap())
    with pytest.raises(ReadOnlyPathError):
        store.rename_key(CM_UID, ("metadata", "name"), "title")
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"uid": "s-1", "resourceVersion": "1"}, "data": {}}
    store.apply(added(secret, Redaction("/data/token", 1)))
    store.set_value("s-1", ("data", "plain"), "eA==")
    with pytest.raises(ReadOnlyPathError):
        store.rename_key("s-1", ("data", "plain"), "token")


def test_revert_a_path_a_container_and_the_whole_object() -> None:
    store = store_with(configmap())
    store.set_value(CM_UID, ("data", "level"), "debug")
    store.set_value(CM_UID, ("data", "extra"), "1")
    store.set_value(CM_UID, ("metadata", "labels", "tier"), "web")
    store.revert(CM_UID, ("data", "extra"))
    assert "extra" not in store.draft(CM_UID)["data"]
    store.revert(CM_UID, ("metadata",))  # a container: every change beneath it
    assert store.dirty(CM_UID) == [("data", "level")]
    store.revert(CM_UID)
    assert store.draft(CM_UID) == store.server(CM_UID)
    with pytest.raises(ReadOnlyPathError):
        store.revert(CM_UID, ("metadata", "name"))


def test_revert_inside_an_array_restores_that_element() -> None:
    store = store_with(deployment())
    image = ("spec", "template", "spec", "containers", 1, "image")
    store.set_value("deploy-1", ("spec", "template", "spec", "containers", 0, "image"), "web:2")
    store.set_value("deploy-1", image, "log:2")
    store.revert("deploy-1", image)
    assert [c["image"] for c in store.draft("deploy-1")["spec"]["template"]["spec"]["containers"]] == ["web:2", "log:1"]


def test_revert_widens_to_the_array_when_the_element_cannot_be_placed() -> None:
    store = store_with(deployment())
    containers = ("spec", "template", "spec", "containers")
    store.set_value("deploy-1", containers, [])
    store.revert("deploy-1", containers + (1, "image"))
    assert store.draft("deploy-1") == store.server("deploy-1")


def conflicted() -> Any:
    store = store_with(configmap())
    store.set_value(CM_UID, ("data", "level"), "debug")
    store.apply(modified(with_changes(configmap(), "2", {("data", "level"): "warn"})))
    return store


def test_take_theirs_resolves_a_conflict_with_the_servers_value() -> None:
    store = conflicted()
    assert [(c.path, c.theirs) for c in store.conflicts(CM_UID)] == [(("data", "level"), "warn")]
    store.take_theirs(CM_UID, ("data", "level"))
    assert store.conflicts(CM_UID) == []
    assert store.draft(CM_UID)["data"]["level"] == "warn"
    assert store.patch(CM_UID) is None


def test_keep_mine_resolves_a_conflict_and_the_edit_is_saved_next() -> None:
    store = conflicted()
    calls: list[frozenset[str]] = []
    store.subscribe(calls.append)
    store.keep_mine(CM_UID, ("data", "level"))
    store.keep_mine(CM_UID, ("data", "level"))  # nothing left to resolve: no notification
    assert calls == [frozenset({CM_UID})]
    assert store.conflicts(CM_UID) == []
    assert store.patch(CM_UID) == {"data": {"level": "debug"}}
    store.apply(modified(with_changes(configmap(), "3", {("data", "level"): "warn", ("data", "replicas"): "4"})))
    assert store.conflicts(CM_UID) == []  # the server did not move again: it stays resolved
    assert store.draft(CM_UID)["data"] == {"level": "debug", "replicas": "4"}
    with pytest.raises(ReadOnlyPathError):
        store.keep_mine(CM_UID, ("metadata", "name"))


def test_typing_the_servers_value_settles_the_conflict_and_other_values_keep_it() -> None:
    store = conflicted()
    store.set_value(CM_UID, ("data", "level"), "trace")
    assert [c.path for c in store.conflicts(CM_UID)] == [("data", "level")]
    store.set_value(CM_UID, ("data", "level"), "warn")
    assert store.conflicts(CM_UID) == []
    assert store.dirty(CM_UID) == []


def test_dirty_is_derived_and_setting_the_server_value_back_is_clean() -> None:
    store = store_with(configmap())
    store.set_value(CM_UID, ("data", "level"), "debug")
    assert store.is_dirty(CM_UID, ("data", "level"))
    assert store.is_dirty(CM_UID, ("data",))
    assert store.is_dirty(CM_UID)
    assert not store.is_dirty(CM_UID, ("data", "replicas"))
    assert not store.is_dirty(CM_UID, ("metadata", "name"))
    store.set_value(CM_UID, ("data", "level"), "info")
    assert store.dirty(CM_UID) == [] and store.patch(CM_UID) is None
    assert not store.is_dirty(CM_UID)


def test_edits_notify_and_no_op_edits_do_not() -> None:
    store = store_with(configmap())
    calls: list[frozenset[str]] = []
    store.subscribe(calls.append)
    store.set_value(CM_UID, ("data", "level"), "debug")
    store.remove_key(CM_UID, ("data", "absent"))
    assert calls == [frozenset({CM_UID})]
