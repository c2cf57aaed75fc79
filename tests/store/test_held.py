"""The state a store's parts share (``flask_krm.store.held``): prefixes, dirtiness, notifications."""

from __future__ import annotations

from flask_krm.store import LiveResourceStore
from flask_krm.store.held import prefix_of

from .objects import configmap, store_with


def test_prefix_of_is_the_path_or_an_ancestor() -> None:
    assert prefix_of((), ("data", "a")) and prefix_of(("data",), ("data", "a")) and prefix_of(("data",), ("data",))
    assert not prefix_of(("data", "a"), ("data",)) and not prefix_of(("spec",), ("data", "a"))


def test_notifications_collected_while_the_lock_is_held_are_sent_once_after() -> None:
    store = store_with(configmap(a="1", b="2"), store=LiveResourceStore())
    uid = store.uids()[0]
    heard: list[frozenset[str]] = []
    store.subscribe(heard.append)
    with store._collecting() as collected:
        store.set_value(uid, ("data", "a"), "x")
        store.set_value(uid, ("data", "b"), "y")
        assert heard == [] and collected == {uid}
    assert heard == []  # the caller notifies what was collected
    store.set_value(uid, ("data", "a"), "z")
    assert heard == [frozenset({uid})]


def test_dirtiness_is_read_at_a_field_and_under_a_container() -> None:
    store = store_with(configmap(a="1"), store=LiveResourceStore())
    uid = store.uids()[0]
    store.set_value(uid, ("data", "a"), "2")
    held = store._get(uid)
    assert store._dirty_at(held, ("data", "a")) and store._dirty_at(held, ("data",)) and store._dirty_at(held, ())
    store.set_value(uid, ("data", "a"), "1")
    assert not store._dirty_at(store._get(uid), ("data",))
