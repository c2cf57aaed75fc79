"""Guards: subscribers that keep a session's access under watch and deliver nothing else. They are
refused, re-authorized and ended like any subscriber, but never read the event log, never get a
snapshot and are never woken by a change."""

from __future__ import annotations

import gevent
import pytest

from flask_krm.events import Event, StreamError
from flask_krm.principal import Principal
from flask_krm.upstream import hub as hub_module
from flask_krm.upstream.hub import HubClosed, Subscriber

from .cluster import APP, Cluster, types
from .conftest import HubFactory
from .test_hub import FULL, Switch, read, until_type


class CountingBell(hub_module._Doorbell):
    """A doorbell that counts its rings."""

    __slots__ = ("rings",)

    def __init__(self) -> None:
        super().__init__()
        self.rings = 0

    def ring(self, *, from_loop: bool = False) -> None:
        self.rings += 1
        super().ring(from_loop=from_loop)


def kept(guard: Subscriber, cycles: int, timeout: float = 10.0) -> None:
    """Read ``guard`` (nothing comes) until it has kept ``cycles`` snapshot cycles."""
    with gevent.Timeout(timeout, AssertionError(f"kept {guard.cycles_kept} cycles, not {cycles}")):
        while guard.cycles_kept < cycles:
            assert guard.take(0.05) == []


def ended(guard: Subscriber) -> list[Event]:
    return read(guard, lambda ev: bool(ev) and isinstance(ev[-1], StreamError) and ev[-1].terminal)


def test_a_guard_gets_nothing_and_is_never_woken_by_a_change(make_hub: HubFactory, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "1"})
    hub = make_hub(heartbeat=0.2)
    guard = hub.guard(APP, FULL, Principal("guarded"))
    reader = hub.subscribe(APP, FULL, Principal("reader"))
    read(reader, until_type("synced"))
    kept(guard, 1)
    watch = guard._watch
    assert watch is not None and guard in watch.subscribers and hub.watch_count == 1, "on the reader's watch"
    bell = guard._bell = CountingBell()
    waiting = gevent.spawn(guard.take, 5.0)
    gevent.sleep(0.05)
    for n in range(2, 5):
        cluster.patch_configmap("a", {"k": str(n)})
    cluster.create_configmap("b", {"k": "1"})
    events = read(reader, lambda ev: len(ev) == 4)
    assert types(events) == ["modified", "modified", "modified", "added"]
    gevent.sleep(0.5)  # a few heartbeat intervals too
    assert bell.rings == 0 and not waiting.ready(), "neither a change nor a heartbeat wakes a guard"
    assert bell not in watch._sleepers and guard._cursor is None and guard.queued == 0
    waiting.kill()
    [uid] = [uid for uid, obj in watch.cache.items() if obj["metadata"]["name"] == "b"]
    assert (guard.cached(uid) or {})["data"] == {"k": "1"}, "the watch's cache, as for any subscriber"
    assert guard.cycles_kept == 1 and guard.resyncs == 0


def test_a_guard_is_refused_at_join_and_opens_no_watch(make_hub: HubFactory) -> None:
    switch = Switch()
    switch.answer = False
    hub = make_hub(authorizer=switch)
    guard = hub.guard(APP, FULL, Principal("nobody"))
    assert types(ended(guard)) == ["error:FORBIDDEN"]
    assert guard.take(0.1) is None
    assert switch.asked == ["nobody"] and hub.watch_count == 0


def test_the_periodic_reauthorization_ends_a_revoked_guard(make_hub: HubFactory, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "1"})
    switch = Switch()
    hub = make_hub(authorizer=switch, reauthorize_every=0.2)
    guard = hub.guard(APP, FULL, Principal("guarded"))
    kept(guard, 1)
    switch.answer = False
    assert types(ended(guard)) == ["error:FORBIDDEN"]
    assert guard.take(0.1) is None and hub.watch_count == 0


def test_each_new_cycle_authorizes_a_guard_once_and_a_refusal_ends_it(
    make_hub: HubFactory, cluster: Cluster, kube
) -> None:
    cluster.create_configmap("a", {"k": "1"})
    switch = Switch()
    hub = make_hub(authorizer=switch, reauthorize_every=None)
    mine = kube.api_client("admin")  # a watch of its own identity: no re-authorization timer
    guard = hub.guard(APP, FULL, Principal("guarded"), client=mine)
    kept(guard, 1)
    cluster.create_configmap("b", {"k": "2"})
    assert guard.take(0.3) == []
    assert switch.asked == ["guarded"], "asked when it joins, never for its first cycle or a change"
    kube.faults.expire_watches()  # the watch's history expires: a relist, a new cycle
    kept(guard, 2)
    assert switch.asked == ["guarded", "guarded"], "once for the new cycle"
    switch.answer = False
    kube.faults.expire_watches()
    assert types(ended(guard)) == ["error:FORBIDDEN"]
    assert guard.take(0.1) is None and switch.asked == ["guarded"] * 3 and hub.watch_count == 0


def test_a_terminal_upstream_failure_ends_a_guard(make_hub: HubFactory, kube) -> None:
    kube.add_user("nobody")
    hub = make_hub(context="nobody")
    guard = hub.guard(APP, FULL, Principal("guarded"))
    [last] = ended(guard)
    assert isinstance(last, StreamError) and (last.code, last.terminal) == ("FORBIDDEN", True)
    assert guard.take(0.1) is None and hub.watch_count == 0


def test_shutdown_ends_a_guard(make_hub: HubFactory, cluster: Cluster) -> None:
    hub = make_hub()
    guard = hub.guard(APP, FULL, Principal("guarded"))
    kept(guard, 1)
    hub.shutdown(timeout=1)
    [last] = ended(guard)
    assert isinstance(last, StreamError) and (last.code, last.terminal) == ("INTERNAL", True)
    assert guard.take(0.1) is None
    with pytest.raises(HubClosed):
        hub.guard(APP, FULL, Principal("late"))
