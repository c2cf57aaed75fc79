"""The hub shares per-object work among its subscribers: one projection per object and
projection, the same bytes for every subscriber in the same state, revisions per connection."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import flask_krm.stream
from flask_krm import projection
from flask_krm.events import Event, Redaction, Upsert
from flask_krm.principal import Principal
from flask_krm.scope import Scope
from flask_krm.upstream.hub import Subscriber

from .cluster import APP, Cluster, names
from .conftest import HubFactory
from .test_hub import FULL, read, until_type

SPEC = "krm-spec/v1"
SECRETS = Scope(target="sim", version="v1", resource="secrets", namespace="app")

Pairs = list[tuple[Event, bytes]]


def pairs_until(subscriber: Subscriber, done: Callable[[Pairs], bool]) -> Pairs:
    pairs: Pairs = []
    while not done(pairs):
        taken = subscriber.take(5)
        assert taken is not None, "the stream ended"
        pairs += taken
    return pairs


def synced(pairs: Pairs) -> bool:
    return bool(pairs) and pairs[-1][0].type == "synced"


def upserted(pairs: Pairs) -> bool:
    return any(isinstance(event, Upsert) for event, _ in pairs)


def test_each_object_is_projected_once_per_projection(
    make_hub: HubFactory, cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[int, str]] = []

    def counting(raw: Any, name: str, **options: Any) -> Any:
        calls.append((id(raw), name))
        return projection.project(raw, name, **options)

    monkeypatch.setattr(flask_krm.stream, "project", counting)
    for name in ("a", "b", "c"):
        cluster.create_configmap(name, {"k": name})
    hub = make_hub()
    subscribers = [hub.subscribe(APP, projection, Principal(f"u{n}")) for projection in (FULL, SPEC) for n in range(4)]
    for subscriber in subscribers:
        pairs_until(subscriber, synced)
    assert len(calls) == 3 * 2 and len(set(calls)) == 6, "three objects, two projections"
    cluster.patch_configmap("a", {"k": "changed"})
    for subscriber in subscribers:
        pairs_until(subscriber, upserted)
    assert len(calls) == 4 * 2 and len(set(calls)) == 8, "the change: once per projection"
    joiner = hub.subscribe(APP, FULL, Principal("late"))
    pairs_until(joiner, synced)
    assert len(calls) == 8, "a joiner's snapshot reuses the projections of the cached objects"


def test_subscribers_in_the_same_state_get_the_same_bytes_and_projections_do_not_mix(
    make_hub: HubFactory, cluster: Cluster
) -> None:
    cluster.create_configmap("a", {"k": "1"})
    hub = make_hub()
    full = [hub.subscribe(APP, FULL, Principal(f"f{n}")) for n in range(3)]
    spec = [hub.subscribe(APP, SPEC, Principal(f"s{n}")) for n in range(2)]
    for subscriber in full + spec:
        pairs_until(subscriber, synced)
    cluster.patch_configmap("a", {"k": "2"})
    live = {subscriber: pairs_until(subscriber, upserted) for subscriber in full + spec}
    [full_body] = {id(live[s][0][1]) for s in full}
    [spec_body] = {id(live[s][0][1]) for s in spec}
    assert full_body != spec_body
    assert all(live[s][0][0] is live[full[0]][0][0] for s in full), "one event object per projection"


def test_a_subscriber_joining_later_starts_its_own_redaction_revisions(make_hub: HubFactory, cluster: Cluster) -> None:
    path = "/api/v1/namespaces/app/secrets"
    cluster.request("POST", path, {"metadata": {"name": "creds"}, "data": {"token": "YQ=="}})
    hub = make_hub()
    early = hub.subscribe(SECRETS, FULL, Principal("early"))
    assert names(read(early, until_type("synced"))) == ["added creds"]
    cluster.request("PATCH", f"{path}/creds", {"data": {"token": "Yg=="}}, "application/merge-patch+json")
    [rotated] = read(early, until_type("modified"))
    assert isinstance(rotated, Upsert) and rotated.redacted == (Redaction("/data/token", 2),)

    late = hub.subscribe(SECRETS, FULL, Principal("late"))
    joined = [e for e in read(late, until_type("synced")) if isinstance(e, Upsert)]
    assert [e.redacted for e in joined] == [(Redaction("/data/token", 1),)]
    assert joined[0].object is rotated.object, "the projection is shared, the revisions are not"

    cluster.request("PATCH", f"{path}/creds", {"data": {"token": "Yw=="}}, "application/merge-patch+json")
    [early_event] = read(early, until_type("modified"))
    [late_event] = read(late, until_type("modified"))
    assert isinstance(early_event, Upsert) and isinstance(late_event, Upsert)
    assert (early_event.redacted, late_event.redacted) == (
        (Redaction("/data/token", 3),),
        (Redaction("/data/token", 2),),
    )
