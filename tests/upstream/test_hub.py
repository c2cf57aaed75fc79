"""The shared fan-out hub against the simulator: sharing, snapshots from the cache, overflow,
linger, authorization, outages and shutdown."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import gevent
import gevent.event
import pytest

from flask_krm.events import Event, StreamError, Upsert
from flask_krm.ops import Change, Failure, Snapshot, SourceOp
from flask_krm.principal import Principal
from flask_krm.scope import Scope
from flask_krm.sse import HEARTBEAT, RELEASE_AFTER, decode_events
from flask_krm.upstream import hub as hub_module
from flask_krm.upstream.authz import ReviewFailed, SubjectAccessReviewAuthorizer
from flask_krm.upstream.clients import Impersonation
from flask_krm.upstream.hub import PUMP_SLICE, HubClosed, HubObserver, Subscriber

from .cluster import APP, Cluster, names, types
from .conftest import live_greenlets
from .proxy import Proxy

FULL = "krm-full/v1"


class Recorder(HubObserver):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def watch_started(self, scope: Scope) -> None:
        self.calls.append(f"started {scope.resource}")

    def watch_stopped(self, scope: Scope) -> None:
        self.calls.append(f"stopped {scope.resource}")

    def watch_failed(self, scope: Scope, failure: Failure) -> None:
        self.calls.append(f"failed {scope.resource} {failure.code}")

    def subscriber_overflowed(self, scope: Scope) -> None:
        self.calls.append(f"overflowed {scope.resource}")


def read(subscriber: Subscriber, done: Callable[[list[Event]], bool], timeout: float = 10.0) -> list[Event]:
    """Events from ``subscriber`` until ``done(all read so far)``."""
    events: list[Event] = []
    with gevent.Timeout(timeout, AssertionError(f"timed out; read {types(events)}")):
        while not done(events):
            pairs = subscriber.take(0.1)
            if pairs is None:
                break
            events += [event for event, _ in pairs]
    return events


def until_type(kind: str) -> Callable[[list[Event]], bool]:
    return lambda events: bool(events) and types(events)[-1] == kind


def test_subscribers_share_one_upstream_watch_and_encoded_events(make_hub, cluster: Cluster, proxy: Proxy) -> None:
    cluster.create_configmap("a", {"k": "1"})
    cluster.create_configmap("b", {"k": "2"})
    hub = make_hub(via=proxy.url)
    subscribers = [hub.subscribe(APP, FULL, Principal(f"user{i}")) for i in range(10)]
    snapshots = []
    for subscriber in subscribers:
        pairs: list[tuple[Event, bytes]] = []
        while not pairs or types([p[0] for p in pairs])[-1] != "synced":
            pairs += subscriber.take(5) or []
        snapshots.append(pairs)
        assert types([event for event, _ in pairs]) == ["reset", "added", "added", "synced"]
    assert len(proxy.watches()) == 1 and hub.watch_count == 1
    first = snapshots[0]
    for other in snapshots[1:]:
        assert all(a[1] is b[1] for a, b in zip(first, other)), "encoded once, shared"
        assert all(a[0] is b[0] for a, b in zip(first[1:3], other[1:3])), "one projected object, shared"

    cluster.create_configmap("c", {"k": "3"})
    live = [subscriber.take(5) for subscriber in subscribers]
    assert all(names([event for event, _ in pairs]) == ["added c"] for pairs in live)
    assert len({id(pairs[0][1]) for pairs in live}) == 1
    assert len(proxy.watches()) == 1


def test_a_joiner_gets_its_snapshot_from_the_cache(make_hub, cluster: Cluster, proxy: Proxy) -> None:
    cluster.create_configmap("a", {"k": "1"})
    hub = make_hub(via=proxy.url)
    first = hub.subscribe(APP, FULL, Principal("one"))
    read(first, until_type("synced"))
    requests = len(proxy.requests)
    joiner = hub.subscribe(APP, "krm-spec/v1", Principal("two"))
    events = read(joiner, until_type("synced"))
    assert types(events) == ["reset", "added", "synced"]
    assert events[0].projection == "krm-spec/v1"
    assert len(proxy.requests) == requests, "no upstream request for a joiner"


def test_other_scopes_and_identities_get_their_own_watch(make_hub, cluster: Cluster, kube) -> None:
    cluster.create_namespace("other")
    hub = make_hub()
    hub.subscribe(APP, FULL, Principal("a"))
    hub.subscribe(APP, FULL, Principal("b"), client=hub.clients.service("sim"))
    assert hub.watch_count == 1, "the target's own client is the shared service identity"
    hub.subscribe(Scope(target="sim", version="v1", resource="configmaps", namespace="other"), FULL, Principal("a"))
    assert hub.watch_count == 2
    viewer = hub.clients.acting_as("sim", Impersonation("viewer"))
    hub.subscribe(APP, FULL, Principal("viewer"), client=viewer)
    hub.subscribe(APP, FULL, Principal("viewer"), client=hub.clients.acting_as("sim", Impersonation("viewer")))
    assert hub.watch_count == 3, "one watch per identity"


def test_sse_chunks_coalesce_queued_frames_and_heartbeat_when_idle(make_hub, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "1"})
    cluster.create_configmap("b", {"k": "2"})
    hub = make_hub(heartbeat=0.2)
    chunks = iter(hub.subscribe(APP, FULL, Principal("one")))
    with gevent.Timeout(5):
        snapshot = next(chunks)
        assert [(e["seq"], e["type"]) for e in decode_events(snapshot)] == [
            (1, "reset"),
            (2, "added"),
            (3, "added"),
            (4, "synced"),
        ], "one chunk for everything queued"
        assert next(chunks) == HEARTBEAT
        cluster.create_configmap("c", {"k": "3"})
        chunk = next(chunks)
        while chunk == HEARTBEAT:
            chunk = next(chunks)
        [added] = decode_events(chunk)
        assert (added["seq"], added["type"], added["object"]["metadata"]["name"]) == (5, "added", "c")
    chunks.close()  # type: ignore[attr-defined]
    assert hub.watch_count == 0, "closing the iterator closes the subscriber"


def test_events_read_together_reach_each_reader_in_one_chunk(make_hub, monkeypatch: pytest.MonkeyPatch) -> None:
    released = gevent.event.Event()

    def configmap(name: str, version: int) -> dict[str, object]:
        metadata = {"name": name, "namespace": "app", "uid": f"uid-{name}", "resourceVersion": str(version)}
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {}}

    class OneRead:
        """A watch whose three changes come in one read, after the pump waited for them."""

        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def ops(self) -> Iterator[SourceOp]:
            yield Snapshot([configmap("a", 1)])
            released.wait()  # the pump waits, as for the socket, longer than its time slice
            gevent.sleep(PUMP_SLICE * 3)
            for version, name in enumerate(["b", "c", "d"], 2):
                yield Change("ADDED", configmap(name, version))
            gevent.sleep(3600)

    monkeypatch.setattr(hub_module, "Reflector", OneRead)
    hub = make_hub()
    chunks = iter(hub.subscribe(APP, FULL, Principal("one")))
    with gevent.Timeout(5):
        assert [e["type"] for e in decode_events(next(chunks))] == ["reset", "added", "synced"]
        released.set()
        chunk = next(chunks)
    assert [e["object"]["metadata"]["name"] for e in decode_events(chunk)] == ["b", "c", "d"]
    chunks.close()  # type: ignore[attr-defined]


def test_a_reader_whose_engine_ends_mid_read_takes_nothing_after_it(make_hub, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three changes come in one read; the middle one has a resourceVersion a strict engine
    cannot order. The strict reader ends at it (nothing of the third), the lenient one takes all."""
    released = gevent.event.Event()

    def configmap(name: str, version: str) -> dict[str, object]:
        metadata = {"name": name, "namespace": "app", "uid": f"uid-{name}", "resourceVersion": version}
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"v": version}}

    class OneRead:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def ops(self) -> Iterator[SourceOp]:
            yield Snapshot([configmap("a", "1")])
            released.wait()
            yield Change("ADDED", configmap("b", "2"))
            yield Change("MODIFIED", configmap("a", "x3"))
            yield Change("ADDED", configmap("c", "4"))
            gevent.sleep(3600)

    monkeypatch.setattr(hub_module, "Reflector", OneRead)
    hub = make_hub()
    strict = hub.subscribe(APP, FULL, Principal("strict"))
    lenient = hub.subscribe(APP, FULL, Principal("lenient"), ordering="lenient")
    with gevent.Timeout(5):
        for subscriber in (strict, lenient):
            assert types(read(subscriber, until_type("synced"))) == ["reset", "added", "synced"]
        released.set()
        ended = read(strict, lambda events: False)
        taken = read(lenient, lambda events: len(events) == 3)
    assert [(event.type, getattr(event, "code", None)) for event in ended] == [("added", None), ("error", "INTERNAL")]
    assert strict.take(0) is None, "the strict stream is over"
    assert [(event.type, event.object["metadata"]["name"]) for event in taken if isinstance(event, Upsert)] == [
        ("added", "b"),
        ("modified", "a"),
        ("added", "c"),
    ]


def test_a_large_snapshot_chunk_is_let_go_of_at_once(make_hub, cluster: Cluster) -> None:
    """A server holds the last chunk it wrote until the next one: after a snapshot, the iterator
    yields an empty chunk at once, so an idle stream does not keep its snapshot in memory."""
    for n in range(12):
        cluster.create_configmap(f"big-{n}", {"k": "x" * 1000})
    hub = make_hub(heartbeat=5)
    chunks = iter(hub.subscribe(APP, FULL, Principal("one")))
    with gevent.Timeout(5):
        snapshot = next(chunks)
        assert len(snapshot) >= RELEASE_AFTER
        assert next(chunks) == b"", "an empty chunk follows without waiting for the next event"
        cluster.create_configmap("small", {"k": "1"})
        [added] = decode_events(next(chunks))
        assert added["object"]["metadata"]["name"] == "small"
        cluster.create_configmap("small-2", {"k": "2"})
        assert decode_events(next(chunks))[0]["object"]["metadata"]["name"] == "small-2", "small chunks: no empty one"
    chunks.close()  # type: ignore[attr-defined]


def test_a_slow_subscriber_is_resynchronized_and_never_grows(make_hub, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "0"})
    depth = 8
    recorder = Recorder()
    hub = make_hub(queue_depth=depth, observer=recorder)
    fast = hub.subscribe(APP, FULL, Principal("fast"))
    slow = hub.subscribe(APP, FULL, Principal("slow"))
    read(fast, until_type("synced"))
    read(slow, until_type("synced"))
    seen_by_fast: list[str] = []

    def follow_fast() -> None:
        while seen_by_fast[-1:] != ["40"]:
            seen_by_fast.extend(e.object["data"]["k"] for e in read(fast, bool) if isinstance(e, Upsert))

    reader = gevent.spawn(follow_fast)
    most_queued = 0
    for n in range(1, 41):
        cluster.patch_configmap("a", {"k": str(n)})
        most_queued = max(most_queued, slow.queued)
    reader.join(timeout=10)
    assert reader.successful()
    assert seen_by_fast == [str(n) for n in range(1, 41)], "the fast subscriber missed nothing"
    assert most_queued <= depth
    assert slow.resyncs >= 1
    assert recorder.calls.count("overflowed configmaps") == slow.resyncs
    events = read(slow, until_type("synced"))
    assert types(events) == ["error:RESYNC_REQUIRED", "reset", "added", "synced"]
    assert isinstance(events[2], Upsert) and events[2].object["data"] == {"k": "40"}
    cluster.create_configmap("b", {"k": "1"})
    assert names(read(slow, until_type("added"))) == ["added b"], "live again after the resync"


def test_the_watch_stops_a_linger_after_its_last_subscriber(make_hub, kube) -> None:
    def upstream_watches() -> set[int]:
        return kube.call(lambda: {id(watcher) for watcher in kube.application.watchers})

    recorder = Recorder()
    hub = make_hub(linger=0.3, observer=recorder)
    first = hub.subscribe(APP, FULL, Principal("one"))
    read(first, until_type("synced"))
    opened = upstream_watches()
    assert len(opened) == 1
    first.close()
    gevent.sleep(0.1)
    second = hub.subscribe(APP, FULL, Principal("two"))  # within the linger: the same watch
    read(second, until_type("synced"))
    assert upstream_watches() == opened
    second.close()
    assert hub.watch_count == 1
    gevent.sleep(0.6)
    assert hub.watch_count == 0
    with gevent.Timeout(5, AssertionError("the upstream watch connection was not closed")):
        while kube.open_watches():
            gevent.sleep(0.05)
    third = hub.subscribe(APP, FULL, Principal("three"))
    read(third, until_type("synced"))
    reopened = upstream_watches()
    assert len(reopened) == 1 and reopened != opened
    assert recorder.calls == ["started configmaps", "stopped configmaps", "started configmaps"]


def test_revoked_access_ends_that_stream_with_a_terminal_forbidden(make_hub, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "1"})
    hub = make_hub(context="krm-gateway", reauthorize_every=0.2)
    hub.authorizer = SubjectAccessReviewAuthorizer(hub.clients)
    viewer = hub.subscribe(APP, FULL, Principal("viewer"))
    editor = hub.subscribe(APP, FULL, Principal("editor"))
    read(viewer, until_type("synced"))
    read(editor, until_type("synced"))
    cluster.delete("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/krm-demo-view-viewer")
    events = read(viewer, lambda ev: bool(ev) and isinstance(ev[-1], StreamError), timeout=5)
    forbidden = events[-1]
    assert isinstance(forbidden, StreamError)
    assert (forbidden.code, forbidden.terminal) == ("FORBIDDEN", True)
    assert "viewer may not list configmaps" in forbidden.message
    assert viewer.take(0.1) is None, "nothing after a terminal error"
    cluster.create_configmap("b", {"k": "2"})
    assert names(read(editor, until_type("added"))) == ["added b"], "the others are unaffected"


class Switch:
    """An authorizer that records each question and answers what ``answer`` says: ``True``,
    ``False`` or an exception to raise."""

    def __init__(self) -> None:
        self.answer: bool | Exception = True
        self.asked: list[str] = []

    def __call__(self, principal: Principal, scope: Scope, projection: str) -> bool:
        self.asked.append(principal.name)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_each_new_cycle_is_authorized_once_before_it_sends_anything(make_hub, cluster: Cluster, kube) -> None:
    cluster.create_configmap("a", {"k": "1"})
    switch = Switch()
    hub = make_hub(authorizer=switch, reauthorize_every=None)
    mine = kube.api_client("admin")  # a watch of its own identity: no re-authorization timer
    kept = hub.subscribe(APP, FULL, Principal("kept"), client=mine)
    revoked = hub.subscribe(APP, FULL, Principal("revoked"), client=mine)
    read(kept, until_type("synced"))
    read(revoked, until_type("synced"))
    assert switch.asked == ["kept", "revoked"], "asked when they subscribe"
    cluster.create_configmap("b", {"k": "2"})
    assert names(read(kept, until_type("added"))) == ["added b"]
    assert names(read(revoked, until_type("added"))) == ["added b"]
    assert switch.asked == ["kept", "revoked"], "never per event"

    switch.answer = False
    kube.faults.expire_watches()  # the watch's history expires: a relist, a new cycle for both
    for subscriber in (kept, revoked):
        events = read(subscriber, lambda ev: bool(ev) and isinstance(ev[-1], StreamError) and ev[-1].terminal)
        assert types(events) == ["error:FORBIDDEN"], "nothing of the new cycle before the decision"
        assert subscriber.take(0.1) is None
    assert sorted(switch.asked[2:]) == ["kept", "revoked"], "once per subscriber and cycle"
    assert hub.watch_count == 0


def test_an_overflow_resync_is_a_new_cycle_and_is_authorized(make_hub, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "0"})
    switch = Switch()
    hub = make_hub(authorizer=switch, queue_depth=2, reauthorize_every=None)
    slow = hub.subscribe(APP, FULL, Principal("slow"))
    read(slow, until_type("synced"))
    for n in range(1, 6):
        cluster.patch_configmap("a", {"k": str(n)})
    with gevent.Timeout(10):
        while not slow.resyncs:
            gevent.sleep(0.02)
    switch.answer = False
    events = read(slow, lambda ev: bool(ev) and isinstance(ev[-1], StreamError) and ev[-1].terminal)
    assert not any(isinstance(event, Upsert) for event in events), "no object of the resync"
    assert types(events)[-1] == "error:FORBIDDEN" and switch.asked == ["slow", "slow"]


def test_a_cycle_check_that_cannot_complete_ends_the_stream_without_objects(make_hub, cluster: Cluster, kube) -> None:
    cluster.create_configmap("a", {"k": "1"})
    switch = Switch()
    hub = make_hub(authorizer=switch)
    subscriber = hub.subscribe(APP, FULL, Principal("one"))
    read(subscriber, until_type("synced"))
    switch.answer = ReviewFailed("the access review could not be sent: ConnectionError")
    kube.faults.expire_watches()
    events = read(subscriber, lambda ev: bool(ev) and isinstance(ev[-1], StreamError) and ev[-1].terminal)
    assert types(events) == ["error:INTERNAL"], "fails closed: no object, no allow"
    assert subscriber.take(0.1) is None


def test_a_recovery_after_an_outage_is_authorized_again(make_hub, cluster: Cluster, kube) -> None:
    cluster.create_configmap("a", {"k": "1"})
    switch = Switch()
    hub = make_hub(authorizer=switch, reauthorize_every=None)
    subscriber = hub.subscribe(APP, FULL, Principal("one"))
    read(subscriber, until_type("synced"))
    kube.faults.refuse_connections(0.5)
    kube.faults.drop_watches()
    events = read(subscriber, until_type("synced"))
    assert types(events) == ["error:UPSTREAM_UNAVAILABLE", "error:RESYNC_REQUIRED", "reset", "added", "synced"]
    assert switch.asked == ["one", "one"]


def test_a_refused_subscriber_opens_no_watch(make_hub, kube, proxy: Proxy) -> None:
    kube.add_user("nobody")
    hub = make_hub(via=proxy.url, context="krm-gateway")
    hub.authorizer = SubjectAccessReviewAuthorizer(hub.clients)
    refused = hub.subscribe(APP, FULL, Principal("nobody"))
    [forbidden] = refused.take(1) or []
    assert isinstance(forbidden[0], StreamError) and forbidden[0].code == "FORBIDDEN" and forbidden[0].terminal
    assert refused.take(0.1) is None
    assert hub.watch_count == 0 and proxy.watches() == []


def test_a_terminal_upstream_failure_ends_every_subscriber(make_hub, kube) -> None:
    kube.add_user("nobody")
    recorder = Recorder()
    hub = make_hub(context="nobody", observer=recorder)
    subscribers = [hub.subscribe(APP, FULL, Principal(f"u{i}")) for i in range(3)]
    for subscriber in subscribers:
        [last] = read(subscriber, lambda ev: bool(ev) and isinstance(ev[-1], StreamError))
        assert isinstance(last, StreamError) and (last.code, last.terminal) == ("FORBIDDEN", True)
        assert subscriber.take(0.1) is None
    assert hub.watch_count == 0
    assert recorder.calls == ["started configmaps", "failed configmaps FORBIDDEN", "stopped configmaps"]


def test_an_outage_reaches_every_subscriber_and_joiner_then_recovers(make_hub, cluster: Cluster, kube) -> None:
    cluster.create_configmap("a", {"k": "1"})
    hub = make_hub()
    early = hub.subscribe(APP, FULL, Principal("early"))
    read(early, until_type("synced"))
    kube.faults.refuse_connections(1.0)
    kube.faults.drop_watches()
    assert types(read(early, until_type("error:UPSTREAM_UNAVAILABLE"))) == ["error:UPSTREAM_UNAVAILABLE"]
    joiner = hub.subscribe(APP, FULL, Principal("joiner"))
    assert types(read(joiner, lambda ev: bool(ev))) == ["error:UPSTREAM_UNAVAILABLE"], "told at once"
    assert types(read(early, until_type("synced"))) == ["error:RESYNC_REQUIRED", "reset", "added", "synced"]
    assert types(read(joiner, until_type("synced"))) == ["reset", "added", "synced"]


def test_shutdown_ends_every_stream_and_leaves_no_greenlet(make_hub, cluster: Cluster) -> None:
    before = {id(g) for g in live_greenlets()}
    hub = make_hub(linger=30)
    other = Scope(target="sim", version="v1", resource="secrets", namespace="app")
    subscribers = [hub.subscribe(scope, FULL, Principal("u")) for scope in (APP, APP, other)]
    lingering = hub.subscribe(
        Scope(target="sim", version="v1", resource="configmaps", namespace="default"), FULL, Principal("u")
    )
    for subscriber in subscribers + [lingering]:
        read(subscriber, until_type("synced"))
    lingering.close()
    assert hub.watch_count == 3
    started = [g for g in live_greenlets() if id(g) not in before]
    assert len(started) >= 4, "three pumps and a linger timer are alive before the shutdown"
    hub.shutdown(timeout=1)
    for subscriber in subscribers:
        [last] = read(subscriber, lambda ev: bool(ev))
        assert isinstance(last, StreamError) and last.terminal
        assert subscriber.take(0.1) is None
    assert hub.watch_count == 0
    assert [g for g in live_greenlets() if id(g) not in before] == []
    hub.shutdown(timeout=1)  # idempotent
    with pytest.raises(HubClosed):
        hub.subscribe(APP, FULL, Principal("late"))


def test_batches_hand_over_protocol_events_and_idle_ticks(make_hub, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "1"})
    hub = make_hub()
    subscriber = hub.subscribe(APP, FULL, Principal("store"))
    batches = subscriber.batches(timeout=0.1)
    with gevent.Timeout(5):
        first = next(batches)
        while types(first)[-1:] != ["synced"]:
            first += next(batches)
        assert types(first) == ["reset", "added", "synced"]
        assert next(batches) == [], "an idle interval"
        cluster.patch_configmap("a", {"k": "2"})
        change = next(batches)
        while not change:
            change = next(batches)
        assert names(change) == ["modified a"]
    batches.close()
    assert subscriber.ended and hub.watch_count == 0


def test_a_subscriber_looks_up_the_newest_raw_object_its_watch_holds(make_hub, cluster: Cluster) -> None:
    created = cluster.create_configmap("a", {"k": "1"})
    uid = created["metadata"]["uid"]
    hub = make_hub()
    subscriber = hub.subscribe(APP, "krm-spec/v1", Principal("editor"))
    read(subscriber, until_type("synced"))
    assert subscriber.cached(uid)["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert subscriber.cached("no-such-uid") is None

    # A write the projection cannot show (only the last-applied annotation, which is machinery):
    # the subscriber gets no event, but the watch's cache holds the newer version.
    patched = cluster.request(
        "PATCH",
        "/api/v1/namespaces/app/configmaps/a",
        {"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}}},
        content_type="application/merge-patch+json",
    )
    newer = patched["metadata"]["resourceVersion"]
    with gevent.Timeout(5, AssertionError("the watch never cached the newer version")):
        while subscriber.cached(uid)["metadata"]["resourceVersion"] != newer:
            gevent.sleep(0.01)
    assert subscriber.take(0.3) == [], "nothing visible changed"
    assert subscriber.cached(uid)["data"] == {"k": "1"}

    subscriber.close()
    assert subscriber.cached(uid) is None, "a closed subscriber has no watch"


class Meter:
    """A :class:`~flask_krm.upstream.hub.HubMeter` recording each chunk's count, size and lag."""

    def __init__(self) -> None:
        self.scopes: list[Scope] = []
        self.chunks: list[tuple[int, int, float]] = []

    def for_scope(self, scope: Scope) -> Meter:
        self.scopes.append(scope)
        return self

    def delivered(self, events: int, size: int, received: float) -> None:
        self.chunks.append((events, size, received))


class Restarts(HubObserver):
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def watch_restarted(self, scope: Scope, reason: str) -> None:
        self.reasons.append(reason)


def test_a_meter_counts_every_frame_and_byte_once_per_chunk_written(make_hub, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "1"})
    meter = Meter()
    hub = make_hub(meter=meter, heartbeat=0.2)
    chunks = iter(hub.subscribe(APP, FULL, Principal("one")))
    written: list[bytes] = []
    with gevent.Timeout(5):
        written.append(next(chunks))
        cluster.create_configmap("b", {"k": "2"})
        cluster.create_configmap("c", {"k": "3"})
        while sum(len(decode_events(chunk)) for chunk in written if chunk != HEARTBEAT) < 5:
            written.append(next(chunks))
        while next(chunks) != HEARTBEAT:  # the server asks for more once a chunk is written
            pass
    chunks.close()  # type: ignore[attr-defined]
    assert meter.scopes == [APP], "looked up once per subscriber"
    frames = [len(decode_events(chunk)) for chunk in written if chunk != HEARTBEAT]
    counted = meter.chunks[: len(frames)]
    assert [events for events, _, _ in counted] == frames
    assert [size for _, size, _ in counted] == [len(chunk) for chunk in written if chunk != HEARTBEAT]
    assert counted[0][2] == 0.0, "a snapshot has no live operation to time"
    assert all(received > 0 for _, _, received in counted[1:]), "live changes carry when they were logged"


def test_without_a_meter_nothing_is_stamped(make_hub, cluster: Cluster) -> None:
    hub = make_hub()
    subscriber = hub.subscribe(APP, FULL, Principal("one"))
    read(subscriber, until_type("synced"))
    cluster.create_configmap("a", {"k": "1"})
    read(subscriber, until_type("added"))
    watch = subscriber._watch
    assert watch is not None and subscriber._meter is None
    assert all(entry.received == 0.0 for entry in watch.log.since(watch.log.start))


def test_watch_restarts_are_reported_by_reason(make_hub, cluster: Cluster, kube) -> None:
    cluster.create_configmap("a", {"k": "1"})
    restarts = Restarts()
    hub = make_hub(observer=restarts)
    subscriber = hub.subscribe(APP, FULL, Principal("one"))
    read(subscriber, until_type("synced"))
    kube.faults.expire_watches()
    read(subscriber, until_type("synced"))
    kube.faults.refuse_connections(1.0)
    kube.faults.drop_watches()
    read(subscriber, until_type("error:UPSTREAM_UNAVAILABLE"))
    read(subscriber, until_type("synced"))
    assert restarts.reasons == ["expired", "error", "recovered"]
