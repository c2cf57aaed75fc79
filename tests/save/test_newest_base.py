"""A Save's base version against the simulator: status churn the editor cannot see does not bounce
it, a visible change still does, and each Save sends exactly one PATCH.

The editor's store follows a Deployment under ``krm-spec/v1`` (status withheld), as a session's
stream would; a second real watch keeps the raw objects, as the hub's shared watch does, and is
what ``newest`` looks up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from flask_krm.ops import Change, Snapshot
from flask_krm.save.flow import SaveFlow
from flask_krm.save.outcomes import OutcomeKind
from flask_krm.save.perform import save_edit
from flask_krm.save.writer import KubeWriter, WriteRequest, WriteResult, default_save
from flask_krm.scope import Scope
from flask_krm.testing.simulator import KubeSimulator
from flask_krm.testing.simulator import WriteRequest as SimulatorWrite
from flask_krm.upstream.reflector import Reflector, WatchSettings

from .conftest import LiveFeed, editor_target, new_store, unconditional_patch, wait_for

SPEC = "krm-spec/v1"


@dataclass
class RawCache:
    """The newest raw object per uid from a real watch, like the hub's cache of a shared watch."""

    kube: KubeSimulator
    scope: Scope
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> RawCache:
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def _run(self) -> None:
        reflector = Reflector(
            self.kube.api_client("admin"), self.scope, settings=WatchSettings(watch_seconds=5), sleep=time.sleep
        )
        for op in reflector.ops():
            if self._stop.is_set():
                return
            if isinstance(op, Snapshot):
                self.objects = {obj["metadata"]["uid"]: obj for obj in op.objects}
            elif isinstance(op, Change) and op.type != "DELETED":
                self.objects[op.object["metadata"]["uid"]] = op.object

    def newest(self, uid: str) -> dict[str, Any] | None:
        return self.objects.get(uid)

    def version(self, uid: str) -> str | None:
        obj = self.objects.get(uid)
        return obj["metadata"]["resourceVersion"] if obj else None

    def stop(self) -> None:
        self._stop.set()


@dataclass
class Deployment:
    uid: str
    path: str
    scope: Scope
    feed: LiveFeed
    cache: RawCache
    patches: list[str]
    """The PATCHes that reached the simulator carrying the person's edit (``replicas: 3``)."""


@pytest.fixture
def deployment(kube: KubeSimulator, namespace: str, feeds: Any) -> Iterator[Deployment]:
    admin = KubeWriter(kube.api_client("admin"))
    labels = {"app": "web"}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "app", "image": "nginx:1"}]}},
        },
    }
    answer = admin.request("POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", body=body)
    assert answer.ok and answer.body is not None
    uid = answer.body["metadata"]["uid"]
    scope = Scope(target="dev", group="apps", version="v1", resource="deployments", namespace=namespace, name="web")
    store = new_store()
    feed = feeds(store, scope, kube.api_client("editor"), projection=SPEC)
    cache = RawCache(kube, scope).start()
    wait_for(lambda: cache.version(uid), what="the raw watch")
    patches: list[str] = []

    def count(request: SimulatorWrite) -> None:
        if request.verb == "patch" and request.name == "web" and request.new.get("spec", {}).get("replicas") == 3:
            patches.append(request.new["metadata"].get("resourceVersion", ""))

    assert kube.faults is not None
    remove = kube.faults.mutate_writes(count)
    store.set_value(uid, ("spec", "replicas"), 3)
    yield Deployment(uid, f"/apis/apps/v1/namespaces/{namespace}/deployments/web", scope, feed, cache, patches)
    remove()
    cache.stop()


def status_write(kube: KubeSimulator, item: Deployment, ready: int) -> str:
    """A controller's status-only write; returns the version it made once the raw watch holds it."""
    unconditional_patch(kube, item.path + "/status", {"status": {"observedGeneration": 1, "readyReplicas": ready}})
    version = read_version(kube, item)
    wait_for(lambda: item.cache.version(item.uid) == version, what="the raw watch to hold the status write")
    return version


def read_version(kube: KubeSimulator, item: Deployment) -> str:
    """The resourceVersion the API server holds now."""
    answer = KubeWriter(kube.api_client("admin")).request("GET", item.path)
    assert answer.body is not None
    return str(answer.body["metadata"]["resourceVersion"])


def held_version(item: Deployment) -> str:
    server = item.feed.store.server(item.uid)
    assert server is not None
    return str(server["metadata"]["resourceVersion"])


def replicas(kube: KubeSimulator, item: Deployment) -> int:
    answer = KubeWriter(kube.api_client("admin")).request("GET", item.path)
    assert answer.body is not None
    return int(answer.body["spec"]["replicas"])


def test_status_churn_does_not_bounce_a_save(kube: KubeSimulator, deployment: Deployment) -> None:
    held = held_version(deployment)
    newest = status_write(kube, deployment, 1)
    assert held_version(deployment) == held, "krm-spec/v1 delivered nothing: the view keeps its version"
    outcome = save_edit(
        editor_target(kube, deployment.scope, projection=SPEC),
        deployment.feed.store,
        SaveFlow(deployment.uid),
        live=deployment.feed.live,
        newest=deployment.cache.newest,
    )
    assert outcome.kind in (OutcomeKind.SAVED_PENDING, OutcomeKind.SAVED)
    assert replicas(kube, deployment) == 3
    assert deployment.patches == [newest], "one PATCH, conditioned on the newest identical version"


def test_without_the_lookup_the_held_version_is_stale(kube: KubeSimulator, deployment: Deployment) -> None:
    status_write(kube, deployment, 1)
    outcome = save_edit(
        editor_target(kube, deployment.scope, projection=SPEC),
        deployment.feed.store,
        SaveFlow(deployment.uid),
        live=deployment.feed.live,
    )
    assert outcome.kind is OutcomeKind.VERSION_STALE
    assert replicas(kube, deployment) == 2 and len(deployment.patches) == 1


def test_a_visible_change_between_capture_and_patch_still_refreshes(
    kube: KubeSimulator, deployment: Deployment
) -> None:
    status_write(kube, deployment, 1)

    def colleague_first(request: WriteRequest) -> WriteResult:
        unconditional_patch(kube, deployment.path, {"spec": {"minReadySeconds": 5}})
        return default_save(request)

    flow = SaveFlow(deployment.uid)
    store = deployment.feed.store
    outcome = save_edit(
        editor_target(kube, deployment.scope, projection=SPEC, hook=colleague_first),
        store,
        flow,
        live=deployment.feed.live,
        newest=deployment.cache.newest,
    )
    assert outcome.kind is OutcomeKind.VERSION_STALE and outcome.status_code == 409
    assert replicas(kube, deployment) == 2 and len(deployment.patches) == 1, "refused once, never re-sent"
    draft = store.draft(deployment.uid)
    assert draft is not None and draft["spec"]["replicas"] == 3 and draft["spec"]["minReadySeconds"] == 5
    outcome = save_edit(
        editor_target(kube, deployment.scope, projection=SPEC),
        store,
        flow,
        live=deployment.feed.live,
        newest=deployment.cache.newest,
    )
    assert outcome.kind in (OutcomeKind.SAVED_PENDING, OutcomeKind.SAVED)
    assert replicas(kube, deployment) == 3 and len(deployment.patches) == 2


def test_a_visible_change_the_view_has_not_applied_yet_is_not_skipped(
    kube: KubeSimulator, deployment: Deployment
) -> None:
    """The newest known version shows a colleague's change the editor has not received: it is not
    the person's base, so the held version is sent and Kubernetes refuses it."""
    store = deployment.feed.store
    view = store.server(deployment.uid)
    assert view is not None
    newest = deployment.cache.newest(deployment.uid)
    assert newest is not None
    visible = {
        **newest,
        "spec": {**newest["spec"], "replicas": 7},
        "metadata": {**newest["metadata"], "resourceVersion": "999999"},
    }
    flow = SaveFlow(deployment.uid)
    outcome = save_edit(
        editor_target(kube, deployment.scope, projection=SPEC),
        store,
        flow,
        live=deployment.feed.live,
        newest=lambda uid: visible,
    )
    assert outcome.kind in (OutcomeKind.SAVED_PENDING, OutcomeKind.SAVED)
    assert deployment.patches == [view["metadata"]["resourceVersion"]], "the held version, not the lookalike's"


def test_another_objects_version_is_never_used(kube: KubeSimulator, deployment: Deployment) -> None:
    newest = status_write(kube, deployment, 2)
    impostor = {
        **deployment.cache.newest(deployment.uid),
        "metadata": {"uid": "another-uid", "resourceVersion": newest},
    }  # type: ignore[dict-item]
    outcome = save_edit(
        editor_target(kube, deployment.scope, projection=SPEC),
        deployment.feed.store,
        SaveFlow(deployment.uid),
        live=deployment.feed.live,
        newest=lambda uid: impostor,
    )
    assert outcome.kind is OutcomeKind.VERSION_STALE
    assert replicas(kube, deployment) == 2 and len(deployment.patches) == 1


def test_status_written_between_capture_and_sending_does_not_bounce_either(
    kube: KubeSimulator, deployment: Deployment
) -> None:
    """The default save hook applies the rule again after its preflight read, right before the PATCH."""
    captured = held_version(deployment)
    written: list[str] = []

    def controller_first(request: WriteRequest) -> WriteResult:
        assert request.intent is not None and request.intent.resource_version == captured
        written.append(status_write(kube, deployment, 3))
        return default_save(request)

    outcome = save_edit(
        editor_target(kube, deployment.scope, projection=SPEC, hook=controller_first),
        deployment.feed.store,
        SaveFlow(deployment.uid),
        live=deployment.feed.live,
        newest=deployment.cache.newest,
    )
    assert outcome.kind in (OutcomeKind.SAVED_PENDING, OutcomeKind.SAVED)
    assert replicas(kube, deployment) == 3
    assert deployment.patches == written, "one PATCH, conditioned on the status write's version"


def test_a_lagging_watch_does_not_bounce_a_save_over_a_status_write_its_preflight_read_saw(
    kube: KubeSimulator, deployment: Deployment
) -> None:
    """The status write reached the API server and not the watch (under load a watch lags longer
    than a controller waits between status writes): the hook's preflight read saw it, looks exactly
    like the person's view, and is their base. The first click saves, with one PATCH."""
    assert kube.faults is not None
    watched = deployment.cache.version(deployment.uid)
    kube.faults.hold_watch_events()
    try:
        unconditional_patch(kube, deployment.path + "/status", {"status": {"readyReplicas": 5}})
        seen = read_version(kube, deployment)
        outcome = save_edit(
            editor_target(kube, deployment.scope, projection=SPEC),
            deployment.feed.store,
            SaveFlow(deployment.uid),
            live=deployment.feed.live,
            newest=deployment.cache.newest,
        )
        assert deployment.cache.version(deployment.uid) == watched, "the watch delivered nothing meanwhile"
    finally:
        kube.faults.release_watch_events()
    assert outcome.kind in (OutcomeKind.SAVED_PENDING, OutcomeKind.SAVED)
    assert deployment.patches == [seen] and replicas(kube, deployment) == 3


def test_a_lagging_watch_never_bases_a_save_on_a_visible_change_its_preflight_read_saw(
    kube: KubeSimulator, deployment: Deployment
) -> None:
    """A colleague's visible change the watch has not delivered: the read shows it, so it is not the
    person's base; the held version goes out, is refused once, and the recovery follows."""
    assert kube.faults is not None
    held = held_version(deployment)
    kube.faults.hold_watch_events()
    try:
        unconditional_patch(kube, deployment.path, {"spec": {"minReadySeconds": 7}})
        outcome = save_edit(
            editor_target(kube, deployment.scope, projection=SPEC),
            deployment.feed.store,
            SaveFlow(deployment.uid),
            live=deployment.feed.live,
            newest=deployment.cache.newest,
        )
    finally:
        kube.faults.release_watch_events()
    assert outcome.kind is OutcomeKind.VERSION_STALE
    assert deployment.patches == [held] and replicas(kube, deployment) == 2
