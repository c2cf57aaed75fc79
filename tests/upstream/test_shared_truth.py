"""One server truth per hub watch, shared by the sessions of that watch: keyed like the watch (so
impersonated identities never share), fed by a subscriber that serves no person, while each session
keeps its own access under watch with a guard."""

from __future__ import annotations

import tempfile
import typing as t

import gevent
from flask import Flask

from flask_krm import AllowedResource, KrmStream, Principal, ScopePolicy
from flask_krm.runtime import KrmRuntime
from flask_krm.sessions import DraftRegistry, Limits
from flask_krm.store import LiveResourceStore
from flask_krm.testing.simulator import KubeSimulator
from flask_krm.ui.feeds import Feed
from flask_krm.ui.page import Component, ListSpec, make_component, parse_columns
from flask_krm.upstream.clients import Impersonation
from flask_krm.upstream.hub import Subscriber

from .cluster import APP, Cluster
from .conftest import HubFactory
from .test_hub import FULL, read, until_type


def test_a_follower_is_never_asked_about_while_every_subscriber_is(make_hub: HubFactory, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "1"})
    asked: list[str] = []

    def refuse(principal: Principal, scope: t.Any, projection: str) -> bool:
        asked.append(principal.name)
        return False

    hub = make_hub(authorizer=refuse)
    refused = hub.subscribe(APP, FULL, Principal("mallory"))
    assert refused.ended and asked == ["mallory"]
    follower = hub.follow(APP, FULL)
    events = read(follower, until_type("synced"))
    assert [e.type for e in events] == ["reset", "added", "synced"]
    assert asked == ["mallory"]


def test_watch_keys_share_the_service_identity_and_separate_impersonated_identities(
    make_hub: HubFactory, cluster: Cluster
) -> None:
    hub = make_hub()
    viewer = hub.clients.acting_as("sim", Impersonation("viewer"))
    again = hub.clients.acting_as("sim", Impersonation("viewer"))
    other = hub.clients.acting_as("sim", Impersonation("other"))
    assert hub.watch_key(APP) == hub.watch_key(APP, hub.clients.service("sim"))
    assert hub.watch_key(APP, viewer) == hub.watch_key(APP, again) != hub.watch_key(APP)
    assert hub.watch_key(APP, viewer) != hub.watch_key(APP, other)


def _runtime(kube: KubeSimulator, impersonate: bool, refused: set[str]) -> tuple[Flask, KrmRuntime]:
    app = Flask("shared_truth", instance_path=tempfile.mkdtemp())
    app.config.update(
        SECRET_KEY="test",
        KRM_TARGETS={"sim": {"kubeconfig": kube.kubeconfig_path, "context": "admin"}},
        KRM_SCOPE_POLICY=ScopePolicy(
            targets=frozenset({"sim"}), resources=(AllowedResource(group="", resource="configmaps"),)
        ),
        KRM_WATCH_LINGER=0,
    )
    krm = KrmStream(app, authorizer=lambda principal, scope, projection, verb: principal.name not in refused)

    @krm.client_loader
    def client(target: str, principal: Principal) -> t.Any:
        return krm.runtime().api_clients().acting_as(target, Impersonation(principal.name)) if impersonate else None

    return app, app.extensions["krm"]


def _session(krm: KrmRuntime, name: str, component: Component) -> tuple[LiveResourceStore, Feed]:
    drafts = DraftRegistry().namespace(f"session-{name}", name, Limits(1800.0, 3600.0, 4))
    principal = Principal(name)
    store = krm.store_for(drafts, component, principal)
    feed = krm.feed_for(store, principal, component)
    feed.acquire()
    return store, feed


def _component() -> Component:
    return make_component(ListSpec(APP, FULL, parse_columns(["/metadata/name"], APP)))


def test_sessions_of_one_watch_read_one_truth_and_a_refused_session_ends_on_its_own(
    kube: KubeSimulator, cluster: Cluster
) -> None:
    cluster.create_configmap("a", {"k": "1"})
    app, krm = _runtime(kube, impersonate=False, refused={"mallory"})
    with app.app_context():
        component = _component()
        alice, alice_feed = _session(krm, "alice", component)
        bob, bob_feed = _session(krm, "bob", component)
        mallory, mallory_feed = _session(krm, "mallory", component)
        assert alice.shared and alice.truth is bob.truth is mallory.truth
        assert alice_feed.wait_live(10) and bob_feed.wait_live(10)
        assert not mallory_feed.wait_live(5) and mallory_feed.status.state == "terminal"
        assert [alice.server(uid)["metadata"]["name"] for uid in alice.uids()] == ["a"]
        assert alice.edited_uids() == bob.edited_uids() == []
        assert not mallory.shared  # refused: it takes nothing more from the shared truth
        cluster.patch_configmap("a", {"k": "2"})
        with gevent.Timeout(10):
            while bob.server(bob.uids()[0])["data"]["k"] != "2":
                gevent.sleep(0.05)
        assert alice_feed.status.state == "live"
        assert all(mallory.server(uid)["data"]["k"] == "1" for uid in mallory.uids())
        krm.shutdown(2.0)


def test_impersonated_identities_never_share_a_truth(kube: KubeSimulator, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "1"})
    app, krm = _runtime(kube, impersonate=True, refused=set())
    with app.app_context():
        component = _component()
        viewer, _ = _session(krm, "viewer", component)
        again, _ = _session(krm, "viewer", component)
        other, _ = _session(krm, "other", component)
        assert viewer.truth is again.truth
        assert other.truth is not viewer.truth
        krm.shutdown(2.0)


def test_a_session_of_a_truth_holds_a_guard_that_ends_it_at_a_revocation(kube: KubeSimulator, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "1"})
    refused: set[str] = set()
    app, krm = _runtime(kube, impersonate=False, refused=refused)
    with app.app_context():
        component = _component()
        alice, alice_feed = _session(krm, "alice", component)
        bob, bob_feed = _session(krm, "bob", component)
        assert alice_feed.wait_live(10) and bob_feed.wait_live(10)
        guards = [feed._subscription for feed in (alice_feed, bob_feed)]
        assert all(isinstance(guard, Subscriber) and guard.guard for guard in guards), "nothing to deliver"
        cluster.patch_configmap("a", {"k": "2"})
        [uid] = alice.uids()
        with gevent.Timeout(10):
            while alice.server(uid)["data"]["k"] != "2":
                gevent.sleep(0.05)
        assert (alice_feed.newest_known(uid) or {})["data"] == {"k": "2"}, "the watch's cache, through the guard"
        refused.add("alice")
        assert kube.faults.expire_watches() >= 1  # a relist: a new snapshot cycle, authorized again
        with gevent.Timeout(10):
            while alice_feed.status.state != "terminal":
                gevent.sleep(0.05)
        assert alice_feed.status.reason == "You may not view this." and not alice.shared
        cluster.patch_configmap("a", {"k": "3"})
        with gevent.Timeout(10):
            while bob.server(uid)["data"]["k"] != "3":
                gevent.sleep(0.05)
        assert bob_feed.status.state == "live" and alice.server(uid)["data"]["k"] == "2"
        krm.shutdown(2.0)
