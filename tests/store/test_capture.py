"""Save capture (``flask_krm.store.capture``): save intents, adopted results, optimistic removal."""

from __future__ import annotations

import pytest

from flask_krm.store import LiveResourceStore, UnversionedResourceError

from .objects import configmap, store_with


def test_a_save_intent_holds_the_uid_the_version_and_the_patch() -> None:
    store = store_with(configmap("5", a="1"), store=LiveResourceStore())
    uid = store.uids()[0]
    assert store.capture_save(uid) is None  # clean: nothing to send
    store.set_value(uid, ("data", "a"), "2")
    intent = store.capture_save(uid)
    assert intent is not None and (intent.uid, intent.resource_version, intent.patch) == (
        uid,
        "5",
        {"data": {"a": "2"}},
    )


def test_an_object_without_a_version_has_no_conditional_save() -> None:
    obj = configmap("1", a="1")
    del obj["metadata"]["resourceVersion"]
    store = store_with(obj, store=LiveResourceStore())
    uid = store.uids()[0]
    store.set_value(uid, ("data", "a"), "2")
    with pytest.raises(UnversionedResourceError):
        store.capture_save(uid)


def test_an_adopted_save_result_keeps_later_edits_and_a_removal_hides_the_object() -> None:
    store = store_with(configmap("1", a="1", b="1"), store=LiveResourceStore())
    uid = store.uids()[0]
    store.set_value(uid, ("data", "a"), "2")
    store.set_value(uid, ("data", "b"), "3")  # typed after the Save left
    store.adopt_saved(configmap("2", a="2", b="1"))
    assert store.patch(uid) == {"data": {"b": "3"}}
    assert store.remove_resource(uid) and store.uids() == [] and not store.remove_resource(uid)
