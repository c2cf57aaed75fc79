"""Feeds keep a session's store current while something holds them (:mod:`flask_krm.ui.feeds`).

Each feed here pumps a real plugged subscription (:class:`~flask_krm.subscriptions.PluggedSubscription`
over a :class:`~flask_krm.stream.StreamEngine`) of the hand-driven upstream into a real store.
"""

from __future__ import annotations

import gc
import logging
import typing as t
import weakref
from collections.abc import Iterator
from pathlib import Path

import gevent
import pytest
from gevent.pool import Group

from flask_krm import Principal, Scope
from flask_krm.events import StreamError
from flask_krm.runtime import runtime
from flask_krm.store import LiveResourceStore
from flask_krm.stream import StreamEngine
from flask_krm.subscriptions import PluggedSubscription
from flask_krm.ui.feeds import RETRYING_REASON, TERMINAL_REASONS, Feed, terminal_reason
from tests.ui.conftest import CONFIGMAPS, Upstream, configmap, make_app, open_page
from tests.ui.test_rendering import editor_url

SCOPE: t.Final = Scope.from_query(CONFIGMAPS)


@pytest.fixture
def group() -> Iterator[Group]:
    group = Group()
    yield group
    group.kill(block=True, timeout=1)


def feed_of(store: LiveResourceStore, upstream: Upstream, group: Group, linger: float = 0.0) -> Feed:
    def opener() -> PluggedSubscription:
        return PluggedSubscription(
            StreamEngine(SCOPE, "krm-full/v1"),
            Principal("editor"),
            upstream.source,
            group=group,
            track=lambda stream: lambda: None,
            heartbeat=30.0,
            queue_depth=16,
        )

    return Feed(store, opener, group, linger)


def feed_of_configmap_a(upstream: Upstream, group: Group, linger: float = 0.0) -> tuple[LiveResourceStore, Feed]:
    """A store and its feed over a scope holding ConfigMap ``a``; keep the store: a feed holds it weakly."""
    upstream.snapshot(CONFIGMAPS, configmap("a", {}))
    store = LiveResourceStore()
    return store, feed_of(store, upstream, group, linger)


def wait_stopped(feed: Feed) -> None:
    with gevent.Timeout(2):
        while feed.running:
            gevent.sleep(0.02)


def names(store: LiveResourceStore) -> list[str]:
    return sorted(t.cast(dict[str, t.Any], store.server(uid))["metadata"]["name"] for uid in store.uids())


def settle() -> None:
    gevent.sleep(0.02)


def test_a_held_feed_fills_its_store_and_goes_live(upstream: Upstream, group: Group) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("a", {}), configmap("b", {}))
    store = LiveResourceStore()
    feed = feed_of(store, upstream, group)
    told: list[str] = []
    feed.on_status(lambda: told.append(feed.status.state))
    assert feed.status.state != "live" and not feed.running
    feed.acquire()
    assert feed.wait_live(2.0)
    assert feed.running and feed.status.writable
    assert names(store) == ["a", "b"]
    assert told[-1] == "live" and "syncing" in told
    upstream.added(configmap("c", {}))
    assert names(store) == ["a", "b", "c"], "live changes follow"


def test_the_last_release_stops_the_subscription_and_the_next_holder_starts_a_fresh_one(
    upstream: Upstream, group: Group
) -> None:
    store, feed = feed_of_configmap_a(upstream, group)
    feed.acquire()
    feed.acquire()
    assert feed.wait_live(2.0)
    feed.release()
    settle()
    assert feed.running and len(upstream.connections) == 1, "one holder is left"
    feed.release()
    settle()
    assert not feed.running and not upstream.connections
    upstream.snapshot(CONFIGMAPS, configmap("b", {}))
    feed.acquire()
    assert feed.wait_live(2.0)
    assert len(upstream.opened) == 2 and names(store) == ["b"], "a new subscription begins with a fresh snapshot"


def test_a_holder_coming_back_within_the_linger_keeps_the_subscription(upstream: Upstream, group: Group) -> None:
    store, feed = feed_of_configmap_a(upstream, group, linger=0.2)
    feed.acquire()
    assert feed.wait_live(2.0)
    feed.release()
    settle()
    assert feed.running, "lingering"
    feed.acquire()
    gevent.sleep(0.3)
    assert feed.running and len(upstream.opened) == 1
    feed.release()
    wait_stopped(feed)
    assert not upstream.connections


def test_a_hold_for_a_while_lets_go_by_itself(upstream: Upstream, group: Group) -> None:
    store, feed = feed_of_configmap_a(upstream, group)
    feed.hold_for(0.05)
    assert feed.wait_live(2.0)
    wait_stopped(feed)
    assert not upstream.connections


def test_close_stops_the_subscription_and_every_pending_hold(upstream: Upstream, group: Group) -> None:
    store, feed = feed_of_configmap_a(upstream, group)
    feed.hold_for(3600.0)
    assert feed.wait_live(2.0)
    feed.close()
    settle()
    assert not feed.running and not upstream.connections
    assert not [g for g in group if not g.dead], "no timer left waiting"


def test_a_feed_killed_while_live_ends_quietly(
    upstream: Upstream, group: Group, caplog: pytest.LogCaptureFixture
) -> None:
    store, feed = feed_of_configmap_a(upstream, group)
    feed.acquire()
    assert feed.wait_live(2.0)
    feed.stop()  # kills the pump with GreenletExit
    with gevent.Timeout(2):
        group.join()
    assert not feed.running and not upstream.connections, "the subscription is closed"
    assert feed.status.state == "live", "a kill is no failure: the status is left as it was"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "nothing logged as an error"


def test_a_terminal_error_ends_the_feed_with_what_the_person_is_told(upstream: Upstream, group: Group) -> None:
    store, feed = feed_of_configmap_a(upstream, group)
    feed.acquire()
    assert feed.wait_live(2.0)
    upstream.fail(CONFIGMAPS, "FORBIDDEN", "no", terminal=True)
    assert not feed.wait_live(2.0)
    assert feed.status.state == "terminal" and feed.status.reason == TERMINAL_REASONS["FORBIDDEN"]
    assert not feed.status.writable


def test_an_unavailable_upstream_is_retrying_until_it_is_live_again(upstream: Upstream, group: Group) -> None:
    store, feed = feed_of_configmap_a(upstream, group)
    feed.acquire()
    assert feed.wait_live(2.0)
    upstream.fail(CONFIGMAPS, "UPSTREAM_UNAVAILABLE", "down", terminal=False)
    assert (feed.status.state, feed.status.reason) == ("retrying", RETRYING_REASON)
    upstream.snapshot(CONFIGMAPS, configmap("a", {}))
    assert feed.wait_live(2.0)


def test_every_terminal_code_has_words_and_an_unknown_one_a_general_reason() -> None:
    for code, reason in TERMINAL_REASONS.items():
        assert terminal_reason(StreamError(t.cast(t.Any, code), "detail", True)) == reason
    unknown = terminal_reason(StreamError(t.cast(t.Any, "SOMETHING_NEW"), "detail", True))
    assert unknown not in TERMINAL_REASONS.values() and "reload the page" in unknown


def test_a_feed_whose_store_is_gone_ends_at_its_next_event(upstream: Upstream, group: Group) -> None:
    store, feed = feed_of_configmap_a(upstream, group)
    feed.acquire()
    assert feed.wait_live(2.0)
    del store
    gc.collect()
    upstream.added(configmap("b", {}))
    settle()
    assert not feed.running and not upstream.connections


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
