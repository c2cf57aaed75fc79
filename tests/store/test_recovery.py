"""Recovery copies: detached drafts kept for a host-defined time after their object disappears."""

from __future__ import annotations

import pytest

from flask_krm.events import Synced
from flask_krm.store import LiveResourceStore, RecoveryCopies, identity_of

from .objects import CM_UID, added, configmap, deleted, reset, store_with


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def recovering(lifetime: float = 60) -> tuple[LiveResourceStore, FakeClock]:
    clock = FakeClock()
    store = store_with(configmap(), store=LiveResourceStore(recovery=RecoveryCopies(lifetime, clock)))
    return store, clock


def test_a_copy_is_kept_per_edit_and_survives_deletion_for_its_lifetime() -> None:
    store, clock = recovering()
    identity = identity_of(configmap())
    store.set_value(CM_UID, ("data", "level"), "debug")
    store.set_value(CM_UID, ("data", "level"), "trace")
    copy = store.recovery.get(identity)
    assert copy is not None and copy.draft["data"]["level"] == "trace" and copy.removed_at is None
    clock.now += 10_000  # no lifetime runs while the object lives
    store.apply(deleted(configmap()))
    copy = store.recovery.get(identity)
    assert copy.removed_at == clock.now
    assert copy.patch == {"data": {"level": "trace"}}
    clock.now += 59
    assert store.recovery.for_uid(CM_UID) is not None
    clock.now += 1
    assert store.recovery.get(identity) is None
    assert len(store.recovery) == 0


def test_a_pruned_object_keeps_its_copy_too() -> None:
    store, _ = recovering()
    store.set_value(CM_UID, ("data", "level"), "debug")
    store.apply(reset())
    store.apply(Synced())
    assert store.uids() == []
    assert store.recovery.for_uid(CM_UID).draft["data"]["level"] == "debug"


def test_a_clean_draft_keeps_no_copy_and_copies_are_detached() -> None:
    store, _ = recovering()
    identity = identity_of(configmap())
    store.set_value(CM_UID, ("data", "level"), "debug")
    store.recovery.get(identity).draft["data"]["level"] = "mutated by the caller"
    assert store.recovery.get(identity).draft["data"]["level"] == "debug"
    store.revert(CM_UID)
    assert store.recovery.get(identity) is None
    store.remove_resource(CM_UID)
    assert len(store.recovery) == 0


def test_copies_are_per_identity_and_uid() -> None:
    store, _ = recovering()
    store.set_value(CM_UID, ("data", "level"), "debug")
    store.apply(deleted(configmap()))
    store.apply(added(configmap(uid="cm-replacement")))  # same name, another object
    replacement = identity_of(configmap(uid="cm-replacement"))
    assert store.recovery.get(replacement) is None
    assert store.recovery.for_uid(CM_UID) is not None
    store.recovery.discard(identity_of(configmap()))
    assert store.recovery.for_uid(CM_UID) is None


def test_the_copy_by_name_is_the_most_recently_removed_objects_in_its_namespace() -> None:
    store, clock = recovering()
    store.set_value(CM_UID, ("data", "level"), "first")
    assert store.recovery.for_name("app") is None  # its object is still held
    store.apply(deleted(configmap()))
    clock.now += 5
    store.apply(added(configmap(uid="cm-second")))
    store.set_value("cm-second", ("data", "level"), "second")
    store.apply(deleted(configmap(uid="cm-second")))
    newest = store.recovery.for_name("app", "demo")
    assert newest is not None and newest.identity.uid == "cm-second" and newest.draft["data"]["level"] == "second"
    assert store.recovery.for_name("app") == newest  # any namespace
    assert store.recovery.for_name("app", "elsewhere") is None
    assert store.recovery.for_name("other") is None
    clock.now += 60
    assert store.recovery.for_name("app") is None  # both lifetimes ended


def test_a_lifetime_must_be_positive() -> None:
    with pytest.raises(ValueError):
        RecoveryCopies(0)
