"""Edit records of a store (``flask_krm.store.records``): what the person did, restored elsewhere."""

from __future__ import annotations

from flask_krm.store import LiveResourceStore

from .objects import configmap, modified, store_with


def test_a_record_restores_the_draft_on_another_store() -> None:
    first = store_with(configmap(a="1"), store=LiveResourceStore())
    uid = first.uids()[0]
    first.set_value(uid, ("data", "a"), "2")
    record = first.edit_record(uid)
    assert record is not None and record.sequence == 1
    second = store_with(configmap(a="1"), store=LiveResourceStore())
    second.restore(record)
    assert second.patch(uid) == {"data": {"a": "2"}} and second.edit_sequence(uid) == 1


def test_a_record_older_than_the_draft_changes_nothing_and_a_moved_base_conflicts() -> None:
    first = store_with(configmap(a="1"), store=LiveResourceStore())
    uid = first.uids()[0]
    first.set_value(uid, ("data", "a"), "2")
    old = first.edit_record(uid)
    first.set_value(uid, ("data", "a"), "3")
    assert old is not None
    first.restore(old)
    assert first.draft(uid)["data"]["a"] == "3"  # type: ignore[index]
    other = store_with(configmap(a="1"), store=LiveResourceStore())
    other.apply(modified(configmap("2", a="9")))
    other.restore(old)
    assert [c.path for c in other.conflicts(uid)] == [("data", "a")]
