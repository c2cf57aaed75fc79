"""The raw watch reflector against the simulator over HTTP, its operations fed to the stream engine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flask_krm.events import Deleted, StreamError, Upsert
from flask_krm.ops import ContinuityLost, Failure, Snapshot
from flask_krm.scope import Scope
from flask_krm.testing.simulator import KubeSimulator
from flask_krm.upstream.clients import ApiClients, BearerToken, Impersonation, Kubeconfig
from flask_krm.upstream.reflector import Backoff, Reflector, StreamingListMemory, WatchSettings

from .cluster import APP, Cluster, EngineFeed, kubeconfig_via, names, types
from .proxy import Proxy

FAST = WatchSettings(backoff=Backoff(initial=0.05, maximum=0.3))


@pytest.fixture
def clients(kube: KubeSimulator) -> Iterator[ApiClients]:
    api_clients = ApiClients({"sim": Kubeconfig(kube.kubeconfig_path, context="admin")}, pool_maxsize=8)
    yield api_clients
    api_clients.close()


@pytest.fixture
def feeds() -> Iterator[list[EngineFeed]]:
    running: list[EngineFeed] = []
    yield running
    for feed in running:
        feed.close()


def watch(clients: ApiClients, feeds: list[EngineFeed], scope: Scope = APP, **kwargs: object) -> EngineFeed:
    reflector = Reflector(clients.service(scope.target), scope, settings=FAST, **kwargs)  # type: ignore[arg-type]
    feed = EngineFeed(reflector.ops(), scope)
    feeds.append(feed)
    return feed


def is_synced(event: object) -> bool:
    return getattr(event, "type", None) == "synced"


def test_a_snapshot_then_live_additions_changes_and_deletes(clients, feeds, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "1"})
    doomed = cluster.create_configmap("b", {"k": "2"})
    feed = watch(clients, feeds)
    assert names(feed.until(is_synced)) == ["added a", "added b"]
    assert types(feed.events) == ["reset", "added", "added", "synced"]

    cluster.create_configmap("c", {"k": "3"})
    cluster.patch_configmap("a", {"k": "changed"})
    cluster.delete_configmap("b")
    live = feed.until(lambda e: isinstance(e, Deleted))
    assert names(live) == ["added c", "modified a", "deleted b"]
    modified = live[1]
    assert isinstance(modified, Upsert) and modified.object["data"] == {"k": "changed"}
    deleted = live[2]
    assert isinstance(deleted, Deleted)
    assert deleted.identity.uid == doomed["metadata"]["uid"]
    assert (deleted.identity.kind, deleted.identity.api_version, deleted.identity.namespace) == (
        "ConfigMap",
        "v1",
        "app",
    )


def test_delete_and_recreate_under_the_same_name_is_a_new_uid(clients, feeds, cluster: Cluster) -> None:
    first = cluster.create_configmap("a", {"k": "1"})
    feed = watch(clients, feeds)
    feed.until(is_synced)
    cluster.delete_configmap("a")
    second = cluster.create_configmap("a", {"k": "2"})
    deleted, added = feed.until(lambda e: isinstance(e, Upsert))
    assert isinstance(deleted, Deleted) and deleted.identity.uid == first["metadata"]["uid"]
    assert isinstance(added, Upsert) and added.uid == second["metadata"]["uid"] != first["metadata"]["uid"]


def test_the_streaming_list_is_tried_first(kube, cluster: Cluster, proxy: Proxy, feeds, tmp_path: Path) -> None:
    cluster.create_configmap("a", {"k": "1"})
    clients = ApiClients({"sim": Kubeconfig(kubeconfig_via(kube, proxy.url, tmp_path), context="admin")})
    feed = watch(clients, feeds)
    feed.until(is_synced)
    [request] = proxy.requests
    assert request.is_streaming_list
    assert request.query["resourceVersionMatch"] == "NotOlderThan"
    assert request.query["allowWatchBookmarks"] == "true"
    assert int(request.query["timeoutSeconds"]) >= FAST.watch_seconds


def test_an_expired_watch_starts_a_new_cycle_with_what_changed(clients, feeds, kube, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "1"})
    cluster.create_configmap("b", {"k": "2"})
    feed = watch(clients, feeds)
    feed.until(is_synced)
    assert kube.faults is not None
    kube.faults.compact()
    kube.faults.expire_watches()  # ERROR 410 Expired mid-stream
    cluster.delete_configmap("b")
    cluster.create_configmap("c", {"k": "3"})
    events = feed.until(lambda e: feed.mirror.settled and feed.mirror.names == {"a", "c"})
    assert [type(op).__name__ for op in feed.ops].count("ContinuityLost") == 1
    resync = next(e for e in events if isinstance(e, StreamError))
    assert (resync.code, resync.terminal) == ("RESYNC_REQUIRED", False)
    assert types(events[events.index(resync) :])[:2] == ["error:RESYNC_REQUIRED", "reset"]


def test_a_dropped_watch_resumes_without_a_new_cycle(clients, feeds, kube, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "1"})
    feed = watch(clients, feeds)
    feed.until(is_synced)
    assert kube.faults is not None
    assert kube.faults.drop_watches() == 1
    cluster.patch_configmap("a", {"k": "2"})
    cluster.create_configmap("b", {"k": "3"})
    events = feed.until(lambda e: isinstance(e, Upsert) and e.object["metadata"]["name"] == "b")
    assert names(events) == ["modified a", "added b"]
    assert not any(isinstance(op, (ContinuityLost, Snapshot)) for op in feed.ops[1:])


def test_an_outage_is_reported_then_recovered_with_a_fresh_cycle(clients, feeds, kube, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "1"})
    feed = watch(clients, feeds)
    feed.until(is_synced)
    assert kube.faults is not None
    kube.faults.refuse_connections(1.0)
    kube.faults.drop_watches()
    [unavailable] = feed.until(lambda e: isinstance(e, StreamError))
    assert isinstance(unavailable, StreamError)
    assert (unavailable.code, unavailable.terminal) == ("UPSTREAM_UNAVAILABLE", False)
    recovery = feed.until(is_synced, timeout=10)
    assert types(recovery) == ["error:RESYNC_REQUIRED", "reset", "added", "synced"]
    failures = [op for op in feed.ops if isinstance(op, Failure)]
    assert len(failures) == 1, "one failure per outage, however many retries"
    cluster.create_configmap("b", {"k": "2"})
    assert names(feed.until(lambda e: isinstance(e, Upsert))) == ["added b"]


def test_a_refused_streaming_list_falls_back_and_is_remembered(
    kube, cluster: Cluster, proxy: Proxy, feeds, tmp_path: Path
) -> None:
    cluster.create_configmap("a", {"k": "1"})
    proxy.refuse_streaming_lists = True
    clients = ApiClients({"sim": Kubeconfig(kubeconfig_via(kube, proxy.url, tmp_path), context="admin")})
    memory = StreamingListMemory()
    feed = watch(clients, feeds, streaming_lists=memory)
    [added] = [e for e in feed.until(is_synced) if isinstance(e, Upsert)]
    assert (added.object["kind"], added.object["apiVersion"]) == ("ConfigMap", "v1"), "filled in on list items"
    refused, listed, watched = proxy.requests
    assert refused.is_streaming_list and not listed.is_watch
    assert watched.is_watch and not watched.is_streaming_list
    assert watched.query["resourceVersion"] == str(int(added.object["metadata"]["resourceVersion"]))
    assert watched.query["allowWatchBookmarks"] == "true"

    assert kube.faults is not None
    kube.faults.compact()
    kube.faults.expire_watches()
    feed.until(is_synced)  # a second cycle
    second = watch(clients, feeds, streaming_lists=memory)
    second.until(is_synced)  # another watch of the same target and group/version
    assert sum(r.is_streaming_list for r in proxy.requests) == 1

    deployments = Scope(target="sim", group="apps", version="v1", resource="deployments", namespace="app")
    watch(clients, feeds, deployments, streaming_lists=memory).until(is_synced)
    assert sum(r.is_streaming_list for r in proxy.requests) == 2, "another group/version is probed on its own"


def test_a_metadata_only_object_or_a_uid_less_delete_triggers_a_relist(
    kube, cluster: Cluster, proxy: Proxy, feeds, tmp_path: Path
) -> None:
    cluster.create_configmap("a", {"k": "1"})
    clients = ApiClients({"sim": Kubeconfig(kubeconfig_via(kube, proxy.url, tmp_path), context="admin")})
    feed = watch(clients, feeds)
    feed.until(is_synced)

    def degrade(event: dict) -> dict:
        obj = event["object"]
        name = obj.get("metadata", {}).get("name")
        if event["type"] == "MODIFIED" and name == "a":
            return {
                "type": "MODIFIED",
                "object": {
                    "apiVersion": "meta.k8s.io/v1",
                    "kind": "PartialObjectMetadata",
                    "metadata": obj["metadata"],
                },
            }
        if event["type"] == "DELETED" and name == "b":
            metadata = {k: v for k, v in obj["metadata"].items() if k != "uid"}
            return {"type": "DELETED", "object": {**obj, "metadata": metadata}}
        return event

    proxy.rewrite = degrade
    kube.faults.drop_watches()  # the resumed watch goes through the rewriting
    cluster.patch_configmap("a", {"k": "2"})
    recovery = feed.until(is_synced)
    assert types(recovery) == ["error:RESYNC_REQUIRED", "reset", "added", "synced"]
    assert recovery[2].object["data"] == {"k": "2"} and recovery[2].object["kind"] == "ConfigMap"

    cluster.create_configmap("b", {"k": "1"})
    feed.until(lambda e: isinstance(e, Upsert))
    kube.faults.drop_watches()
    cluster.delete_configmap("b")
    recovery = feed.until(is_synced)
    assert types(recovery) == ["error:RESYNC_REQUIRED", "reset", "added", "synced"]
    assert names(recovery) == ["added a"], "b is pruned by the new cycle, never guessed"


def test_forbidden_and_unauthenticated_are_terminal(clients: ApiClients, feeds, kube) -> None:
    kube.add_user("nobody")
    as_nobody = clients.acting_as("sim", Impersonation("nobody"))
    feed = EngineFeed(Reflector(as_nobody, APP, settings=FAST).ops())
    feeds.append(feed)
    [forbidden] = feed.until(lambda e: isinstance(e, StreamError))
    assert (forbidden.code, forbidden.terminal) == ("FORBIDDEN", True)
    feed.greenlet.join(timeout=5)
    assert feed.greenlet.dead, "nothing follows a terminal failure"

    with_bad_token = clients.acting_as("sim", BearerToken("not-a-token"))
    feed = EngineFeed(Reflector(with_bad_token, APP, settings=FAST).ops())
    feeds.append(feed)
    [unauthenticated] = feed.until(lambda e: isinstance(e, StreamError))
    assert (unauthenticated.code, unauthenticated.terminal) == ("UNAUTHENTICATED", True)


def test_an_impersonated_watch_acts_as_that_user(clients: ApiClients, feeds, cluster: Cluster) -> None:
    cluster.create_configmap("a", {"k": "1"})
    as_viewer = clients.acting_as("sim", Impersonation("viewer"))
    feed = EngineFeed(Reflector(as_viewer, APP, settings=FAST).ops())
    feeds.append(feed)
    assert names(feed.until(is_synced)) == ["added a"]
    cluster.delete("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/krm-demo-view-viewer")
    feed2 = EngineFeed(Reflector(as_viewer, APP, settings=FAST).ops())
    feeds.append(feed2)
    [refused] = feed2.until(lambda e: isinstance(e, StreamError))
    assert (refused.code, refused.terminal) == ("FORBIDDEN", True)
