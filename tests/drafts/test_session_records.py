"""A session's records in Redis: kept while the session is used, bounded however many pages it loads.

- Expiry follows use: an open page (its channel's first read and its heartbeats) keeps the
  session's drafts past their lifetime without a write; once nothing uses them they expire.
- Page records are capped per session (least recently used dropped first) and kept apart from the
  person's records, so a session that loaded many pages edits as fast as a fresh one.
  ``KRM_PAGE_LOADS`` sets the page loads (default 80; 10000 as the full run).
"""

from __future__ import annotations

import os
import statistics
import time
import typing as t
from collections.abc import Iterator

import gevent
import pytest
from flask import Flask
from flask_login import logout_user

from flask_krm.drafts.backend import MAX_PAGE_RECORDS
from flask_krm.testing.simulator import KubeSimulator
from tests.drafts.test_workers import NAMESPACE, Cluster, Roaming, edit, editor_url, new_configmap, records
from tests.redis_server import RedisServer
from tests.security.hosts import STREAM_URL, Recorder, make_host, make_namespace, scope_query

LIFETIME: t.Final = 3.0
PAGE_LOADS: t.Final = int(os.environ.get("KRM_PAGE_LOADS", "80"))


@pytest.fixture(scope="module")
def kube() -> Iterator[KubeSimulator]:
    with KubeSimulator(demo=True, demo_tick=None) as simulator:
        make_namespace(simulator, NAMESPACE)
        yield simulator


class ShortLived(Cluster):
    """Workers whose sessions live :data:`LIFETIME` seconds unused, with half-second heartbeats."""

    def _worker(self) -> Flask:
        app = make_host(
            self.kube,
            Recorder(),
            SECRET_KEY=self.secret_key,
            KRM_DRAFTS_URL=self.redis.url,
            PERMANENT_SESSION_LIFETIME=LIFETIME,
            KRM_HEARTBEAT_INTERVAL=0.5,
        )
        app.add_url_rule("/logout", "logout", lambda: (logout_user(), "signed out")[1])
        return app


@pytest.fixture
def short_lived(kube: KubeSimulator, clean_redis: RedisServer) -> Iterator[Cluster]:
    found = ShortLived(kube, clean_redis)
    yield found
    found.stop()


@pytest.fixture
def cluster(kube: KubeSimulator, clean_redis: RedisServer) -> Iterator[Cluster]:
    found = Cluster(kube, clean_redis)
    yield found
    found.stop()


def edit_records(redis: RedisServer) -> list[str]:
    return [name for name in records(redis) if name.startswith("edit:")]


def test_a_session_read_but_not_written_for_longer_than_its_lifetime_keeps_its_draft(
    short_lived: Cluster, kube: KubeSimulator
) -> None:
    cluster = short_lived
    name = new_configmap(kube)
    roaming = Roaming(cluster)
    page = roaming.open(0, editor_url(name))
    assert edit(roaming, 0, page, "level", "kept-by-reading") == 200
    assert edit_records(cluster.redis)
    channel = roaming.on(1).stream(t.cast(str, page.channel_url))  # reads the page from Redis, then beats
    channel.until_text(": connected")
    gevent.sleep(LIFETIME * 1.5)  # no write meanwhile: only the open page uses the session
    assert edit_records(cluster.redis), "the draft of a session in use expired"
    channel.close()
    gevent.sleep(LIFETIME + 1.5)  # nothing uses it now
    assert edit_records(cluster.redis) == [], "an unused session's drafts never expire: the test proves nothing"
    roaming.close()


def test_page_loads_keep_at_most_the_capped_page_records_and_leave_edits_as_fast_as_a_fresh_sessions(
    cluster: Cluster, kube: KubeSimulator
) -> None:
    name = new_configmap(kube, a="", b="")
    busy = Roaming(cluster)
    for index in range(PAGE_LOADS):
        page = busy.open(index % 2, editor_url(name))
    client = cluster.redis.client()
    pages = [key for key in client.scan_iter(match="krm:*:pages")]
    assert len(pages) == 1 and client.hlen(pages[0]) == MAX_PAGE_RECORDS
    assert client.zcard(pages[0].decode() + "-used") == MAX_PAGE_RECORDS
    assert not [field for field in records(cluster.redis) if field.startswith("page:")]
    fresh = Roaming(cluster)
    fresh_page = fresh.open(0, editor_url(name))

    def timed(roaming: Roaming, page: t.Any) -> float:
        samples = []
        for n in range(15):
            started = time.perf_counter()
            assert edit(roaming, n % 2, page, "a", f"v{n}") == 200
            samples.append(time.perf_counter() - started)
        return statistics.median(samples)

    timed(fresh, fresh_page)  # both warm
    loaded, baseline = timed(busy, page), timed(fresh, fresh_page)
    assert loaded < 2 * baseline, (
        f"an edit took {loaded * 1000:.1f} ms after {PAGE_LOADS} page loads, {baseline * 1000:.1f} ms fresh"
    )
    busy.close()
    fresh.close()


def test_an_open_page_is_told_while_drafts_are_unavailable_and_when_they_are_back(
    cluster: Cluster, kube: KubeSimulator
) -> None:
    name = new_configmap(kube)
    roaming = Roaming(cluster)
    page = roaming.open(0, editor_url(name))
    channels = [roaming.on(index).stream(t.cast(str, page.channel_url)) for index in (0, 1)]
    for channel in channels:
        channel.until_text(": connected")
    assert "krm-drafts" not in channels[0].text
    cluster.redis.stop()
    try:
        for channel in channels:  # each worker's subscription breaks at once
            channel.until_text("event: krm-drafts\ndata: unavailable", timeout=5.0)
        assert edit(roaming, 0, page, "level", "typed-while-down") == 200  # kept on the worker
    finally:
        cluster.redis.start()
    for channel in channels:
        channel.until_text("event: krm-drafts\ndata: available", timeout=10.0)
    with gevent.Timeout(10, AssertionError("the edit made while Redis was down was never written")):
        while "typed-while-down" not in str(records(cluster.redis)):
            gevent.sleep(0.1)
    channels[1].until_text("typed-while-down", timeout=10.0)  # the other worker caught up on resubscribing
    for channel in channels:
        channel.close()
    roaming.close()


def test_signing_out_on_one_worker_ends_every_page_channel_and_json_stream_of_the_session_on_every_worker(
    cluster: Cluster, kube: KubeSimulator
) -> None:
    name = new_configmap(kube)
    roaming = Roaming(cluster)
    page = roaming.open(0, editor_url(name))
    assert edit(roaming, 0, page, "level", "unsaved-at-sign-out") == 200
    streams = [roaming.on(index).stream(f"{STREAM_URL}?{scope_query(NAMESPACE)}") for index in (0, 1)]
    channels = [roaming.on(index).stream(t.cast(str, page.channel_url)) for index in (0, 1)]
    for stream in streams:
        stream.until(lambda s: any(e.get("type") == "synced" for e in s.events), what="the snapshot")
    for channel in channels:
        channel.until_text("unsaved-at-sign-out")
    assert roaming.get(1, "/logout") == 200
    signed_out = time.monotonic()
    for channel in channels:
        channel.until_end(timeout=1.0)
        assert "You are signed out" in channel.text and "event: krm-close" in channel.text
        assert "unsaved-at-sign-out" in channel.text.split("You are signed out, and these changes")[-1]
    for stream in streams:
        stream.until_end(timeout=1.0)
        assert stream.events[-1]["type"] == "error" and stream.events[-1]["code"] == "UNAUTHENTICATED"
    assert time.monotonic() - signed_out < 1.5
    roaming.close()
