"""Feeds keep a session's store current while something holds them (:mod:`flask_krm.ui.feeds`).

Each feed here pumps a real plugged subscription (:class:`~flask_krm.subscriptions.PluggedSubscription`
over a :class:`~flask_krm.stream.StreamEngine`) of the hand-driven upstream into a real store.
"""

from __future__ import annotations

import gc
import typing as t
import weakref
from pathlib import Path

import gevent
from gevent.pool import Group

from flask_krm.runtime import runtime
from flask_krm.store import LiveResourceStore
from flask_krm.ui.feeds import Feed
from tests.ui.conftest import CONFIGMAPS, Upstream, configmap, make_app, open_page
from tests.ui.test_rendering import editor_url


def test_a_feed_does_not_keep_its_store_alive() -> None:
    feeds: weakref.WeakKeyDictionary[LiveResourceStore, Feed] = weakref.WeakKeyDictionary()
    store = LiveResourceStore()
    feeds[store] = Feed(store, opener=lambda: t.cast(t.Any, None), group=Group(), linger=0)
    del store
    gc.collect()
    assert len(feeds) == 0


def test_shutdown_closes_the_feed_of_a_session_that_ended_while_its_page_was_held(
    tmp_path: Path, upstream: Upstream
) -> None:
    app, krm = make_app(tmp_path, upstream, KRM_SHUTDOWN_TIMEOUT=3600.0)
    upstream.snapshot(CONFIGMAPS, configmap("demo", {"a": "1"}))
    client = app.test_client()
    client.get("/login/editor")
    open_page(client, editor_url())
    client.get("/logout")
    gc.collect()
    assert not runtime(app).feeds, "the session's store is gone"
    assert upstream.connections, "its feed still runs, held for the page's channel"
    with gevent.Timeout(10):
        krm.shutdown(app)
    assert not upstream.connections
