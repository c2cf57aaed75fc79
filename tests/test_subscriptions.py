"""Subscriptions served without the shared hub: a plugged source through its own engine (a pump
greenlet, a bounded queue, shutdown and ends), and a subscription refused before it started."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import gevent
import gevent.event
import pytest
from gevent.pool import Group

from flask_krm.events import Reset, StreamError, Synced, Upsert
from flask_krm.ops import Change, Failure, Snapshot, SourceOp
from flask_krm.principal import Principal
from flask_krm.scope import Scope
from flask_krm.sse import HEARTBEAT
from flask_krm.stream import StreamEngine
from flask_krm.subscriptions import CLIENT_FAILED, SHUTDOWN_ERROR, PluggedSubscription, Refused, ShutdownAware

SCOPE = Scope(target="dev", version="v1", resource="configmaps", namespace="app")
EDITOR = Principal("editor")


def configmap(name: str, rv: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "app", "uid": f"uid-{name}", "resourceVersion": rv},
        "data": {"version": rv},
    }


class Tracked:
    """The runtime's register of open streams: what was tracked, and what was untracked."""

    def __init__(self) -> None:
        self.open: list[ShutdownAware] = []

    def __call__(self, item: ShutdownAware) -> Callable[[], None]:
        self.open.append(item)
        return lambda: self.open.remove(item)


@pytest.fixture
def group() -> Iterator[Group]:
    group = Group()
    yield group
    group.kill(block=True)


def plugged(
    source: Callable[..., Any], group: Group, tracked: Tracked | None = None, queue_depth: int = 8
) -> PluggedSubscription:
    return PluggedSubscription(
        StreamEngine(SCOPE),
        EDITOR,
        source,
        group=group,
        track=tracked if tracked is not None else Tracked(),
        heartbeat=0.01,
        queue_depth=queue_depth,
    )


def ops(*items: SourceOp) -> Callable[..., list[SourceOp]]:
    return lambda scope, projection, principal: list(items)


def types(batches: Iterator[list[Any]]) -> list[str]:
    return [event.type for batch in batches for event in batch]


def test_the_source_is_asked_for_the_engines_scope_projection_and_principal(group: Group) -> None:
    asked: list[tuple[Any, ...]] = []

    def source(scope: Scope, projection: str, principal: Principal) -> list[SourceOp]:
        asked.append((scope, projection, principal))
        return [Snapshot(())]

    subscription = plugged(source, group)
    assert types(subscription.batches()) == ["reset", "synced"]
    assert asked == [(SCOPE, "krm-full/v1", EDITOR)]


def test_the_sources_operations_come_out_as_protocol_events_and_the_end_closes_it(group: Group) -> None:
    tracked = Tracked()
    subscription = plugged(
        ops(Snapshot((configmap("a", "1"),)), Change("MODIFIED", configmap("a", "2"))), group, tracked
    )
    assert tracked.open == [subscription]
    batches = list(subscription.batches())
    events = [event for batch in batches for event in batch]
    assert [type(e) for e in events] == [Reset, Upsert, Synced, Upsert]
    assert events[-1].object["metadata"]["resourceVersion"] == "2"  # type: ignore[union-attr]
    assert subscription.ended
    assert tracked.open == []


def test_the_sse_bytes_are_numbered_from_1_with_heartbeats_while_idle(group: Group) -> None:
    gate = gevent.event.Event()

    def source(scope: Scope, projection: str, principal: Principal) -> Iterator[SourceOp]:
        gate.wait()
        yield Snapshot(())

    subscription = plugged(source, group)
    chunks = iter(subscription)
    assert next(chunks) == HEARTBEAT
    gate.set()
    rest = b"".join(chunks)
    frames = [json.loads(line[len(b"data: ") :]) for line in rest.split(b"\n") if line.startswith(b"data: ")]
    assert [(f["seq"], f["type"]) for f in frames] == [(1, "reset"), (2, "synced")]


def test_a_terminal_error_is_the_last_event(group: Group) -> None:
    subscription = plugged(
        ops(Snapshot(()), Failure("FORBIDDEN", "no", terminal=True), Change("ADDED", configmap("a", "1"))), group
    )
    events = [event for batch in subscription.batches() for event in batch]
    assert [e.type for e in events] == ["reset", "synced", "error"]
    assert events[-1] == StreamError("FORBIDDEN", "no", terminal=True)


def test_a_failing_source_ends_the_stream_with_an_internal_error_and_is_closed(
    group: Group, caplog: pytest.LogCaptureFixture
) -> None:
    closed: list[bool] = []

    def source(scope: Scope, projection: str, principal: Principal) -> Iterator[SourceOp]:
        try:
            yield Snapshot(())
            raise ConnectionError("the cluster went away")
        finally:
            closed.append(True)

    with caplog.at_level(logging.ERROR, logger="flask_krm"):
        events = [event for batch in plugged(source, group).batches() for event in batch]
    assert events[-1] == StreamError("INTERNAL", "the stream source failed", terminal=True)
    assert closed == [True]
    assert "a plugged stream source failed; its stream ends" in caplog.text


def test_shutdown_drops_what_was_queued_and_ends_with_the_shutdown_error(group: Group) -> None:
    def endless(scope: Scope, projection: str, principal: Principal) -> Iterator[SourceOp]:
        yield Snapshot(())
        for n in range(2, 10_000):
            yield Change("MODIFIED", configmap("a", str(n)))

    subscription = plugged(endless, group, queue_depth=2)
    gevent.sleep(0.01)  # the pump fills the bounded queue and waits
    subscription.end_for_shutdown()
    assert subscription.take(0.1) == [SHUTDOWN_ERROR]
    assert subscription.take(0.1) is None
    assert subscription.ended


def test_end_feeds_the_failure_through_the_engine_as_the_next_event(group: Group) -> None:
    gate = gevent.event.Event()

    def waits(scope: Scope, projection: str, principal: Principal) -> Iterator[SourceOp]:
        yield Snapshot(())
        gate.wait()

    subscription = plugged(waits, group)
    assert types(iter([subscription.take(1.0) or []])) == ["reset", "synced"]
    subscription.end(Failure("FORBIDDEN", "access revoked", terminal=True))
    assert subscription.take(0.1) == [StreamError("FORBIDDEN", "access revoked", terminal=True)]
    assert subscription.take(0.1) is None


@pytest.mark.parametrize("then", ["end", "shutdown"])
def test_a_queued_terminal_error_is_never_replaced(group: Group, then: str) -> None:
    gate = gevent.event.Event()

    def waits(scope: Scope, projection: str, principal: Principal) -> Iterator[SourceOp]:
        yield Snapshot(())
        gate.wait()

    subscription = plugged(waits, group)
    gevent.sleep(0)
    subscription.end(Failure("FORBIDDEN", "access revoked", terminal=True))
    if then == "end":
        subscription.end(Failure("INTERNAL", "too late", terminal=True))
    else:
        subscription.end_for_shutdown()
    assert subscription.take(0.1) == [StreamError("FORBIDDEN", "access revoked", terminal=True)]
    assert subscription.take(0.1) is None


def test_shutdown_after_the_sources_own_terminal_error_keeps_it(group: Group) -> None:
    subscription = plugged(ops(Snapshot(()), Failure("FORBIDDEN", "no", terminal=True)), group)
    gevent.sleep(0.01)  # the pump queues the events and the final batch
    subscription.end_for_shutdown()
    events = [event for batch in subscription.batches() for event in batch]
    assert events[-1] == StreamError("FORBIDDEN", "no", terminal=True)


def test_a_closed_subscription_serves_nothing_and_closing_again_is_harmless(group: Group) -> None:
    tracked = Tracked()
    subscription = plugged(ops(Snapshot(())), group, tracked)
    subscription.close()
    subscription.close()
    assert subscription.ended and tracked.open == []
    assert subscription.take(0.1) is None
    assert list(subscription.batches()) == []
    subscription.end_for_shutdown()  # nothing: already over
    assert subscription.take(0.1) is None


def test_a_refused_subscription_serves_its_one_terminal_error() -> None:
    refused = Refused(CLIENT_FAILED)
    assert refused.ended
    assert list(refused.batches()) == [[CLIENT_FAILED]]
    [frame] = list(refused)
    assert json.loads(frame.split(b"data: ", 1)[1]) == {
        "seq": 1,
        "type": "error",
        "code": "INTERNAL",
        "message": "no client for the target could be obtained",
        "terminal": True,
    }
    refused.end(Failure("FORBIDDEN", "x", terminal=True))
    refused.close()
    assert list(refused.batches()) == [[CLIENT_FAILED]]
