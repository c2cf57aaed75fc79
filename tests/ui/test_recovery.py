"""Copy-out of unsaved drafts (:mod:`flask_krm.ui.recovery`), from a real store (no Flask)."""

from __future__ import annotations

import json

from flask_krm.store import LiveResourceStore, RecoveryCopies
from flask_krm.store.operations import RemoveKey, SetField
from flask_krm.ui.recovery import SERVER_ASSIGNED, copy_out, named_recovery_copy, recovery_copy
from tests.store.objects import CM_UID, added, configmap, deleted, store_with


def edited(recovery: RecoveryCopies | None = None) -> LiveResourceStore:
    store = store_with(configmap(), store=LiveResourceStore(recovery=recovery))
    store.perform(CM_UID, SetField(("data", "level"), "debug"))
    return store


def test_a_held_object_offers_its_draft_only_while_it_has_changes() -> None:
    assert recovery_copy(store_with(configmap()), CM_UID) is None
    store = edited()
    copy = recovery_copy(store, CM_UID)
    assert copy is not None
    assert copy.identity.name == "app" and copy.draft["data"]["level"] == "debug"
    assert copy.patch == {"data": {"level": "debug"}}
    assert recovery_copy(store, "no-such-uid") is None


def test_a_deleted_object_offers_its_recovery_copy_by_uid_and_by_name() -> None:
    store = edited(RecoveryCopies(60.0))
    store.apply(deleted(configmap()))
    by_uid = recovery_copy(store, CM_UID)
    assert by_uid is not None and by_uid.draft["data"]["level"] == "debug"
    by_name = named_recovery_copy(store, "app", "demo")
    assert by_name is not None and by_name.identity.uid == CM_UID
    assert named_recovery_copy(store, "app", None) is not None, "an empty namespace finds any"
    assert named_recovery_copy(store, "app", "elsewhere") is None
    assert named_recovery_copy(store, "other", "demo") is None


def test_without_recovery_copies_a_deleted_object_offers_nothing() -> None:
    store = edited()
    store.apply(deleted(configmap()))
    assert recovery_copy(store, CM_UID) is None
    assert named_recovery_copy(store, "app", "demo") is None


def test_a_clean_object_deleted_leaves_no_copy_and_a_recreated_one_is_not_offered_by_name() -> None:
    store = store_with(configmap(), store=LiveResourceStore(recovery=RecoveryCopies(60.0)))
    store.apply(deleted(configmap()))
    assert recovery_copy(store, CM_UID) is None
    assert named_recovery_copy(store, "app", "demo") is None
    store.apply(added(configmap(uid="cm-2")))
    store.perform("cm-2", SetField(("data", "level"), "warn"))
    assert named_recovery_copy(store, "app", "demo") is None, "a copy of an object still held is not offered by name"


def test_the_copy_out_text_leaves_out_status_and_what_kubernetes_assigns() -> None:
    store = edited()
    store.perform(CM_UID, RemoveKey(("data", "replicas")))
    copy = recovery_copy(store, CM_UID)
    assert copy is not None
    draft = {**copy.draft, "status": {"phase": "x"}}
    draft["metadata"] = {**draft["metadata"], "generation": 3, "creationTimestamp": "2026-01-01T00:00:00Z"}
    shown = copy_out(type(copy)(copy.identity, draft, copy.patch))
    text = json.loads(shown.text)
    assert "status" not in text
    assert not SERVER_ASSIGNED & text["metadata"].keys()
    assert text["metadata"]["name"] == "app" and text["metadata"]["labels"] == {"app.kubernetes.io/name": "shop"}
    assert text["data"] == {"level": "debug"}
    assert shown.changed == ("/data/level", "/data/replicas (removed)")


def test_changed_pointers_are_escaped_and_nested_and_non_ascii_text_is_kept() -> None:
    store = store_with(configmap(), store=LiveResourceStore())
    store.perform(CM_UID, SetField(("metadata", "labels", "a/b~c"), "é"))
    copy = recovery_copy(store, CM_UID)
    assert copy is not None
    shown = copy_out(copy)
    assert shown.changed == ("/metadata/labels/a~1b~0c",)
    assert '"a/b~c": "é"' in shown.text
