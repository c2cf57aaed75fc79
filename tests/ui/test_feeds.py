"""Feeds keep a session's store current while something holds them (:mod:`flask_krm.ui.feeds`)."""

from __future__ import annotations

import typing as t


def test_a_feed_does_not_keep_its_store_alive() -> None:
    import gc
    import weakref

    from gevent.pool import Group

    from flask_krm.store import LiveResourceStore
    from flask_krm.ui.feeds import Feed

    feeds: weakref.WeakKeyDictionary[LiveResourceStore, Feed] = weakref.WeakKeyDictionary()
    store = LiveResourceStore()
    feeds[store] = Feed(store, opener=lambda: t.cast(t.Any, None), group=Group(), linger=0)
    del store
    gc.collect()
    assert len(feeds) == 0
