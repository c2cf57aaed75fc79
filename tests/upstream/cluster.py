"""Writing to the simulator through its HTTP API, and reading protocol events off a source."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gevent
import gevent.queue
from kubernetes.client import ApiClient

from flask_krm.events import Deleted, Event, StreamError, Upsert
from flask_krm.ops import SourceOp
from flask_krm.scope import Scope
from flask_krm.stream import StreamEngine
from flask_krm.testing.simulator import KubeSimulator

APP = Scope(target="sim", version="v1", resource="configmaps", namespace="app")
"""The scope most tests watch: ConfigMaps in the namespace ``app`` of the target ``sim``."""


class Cluster:
    """Raw JSON reads and writes as a simulator user (``admin`` by default)."""

    def __init__(self, kube: KubeSimulator, user: str = "admin") -> None:
        self.kube = kube
        self.api: ApiClient = kube.api_client(user)

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        m, url, h, b, _ = self.api.param_serialize(
            method, path, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        response = self.api.call_api(m, url, header_params=h, body=b, _request_timeout=(5, 10))
        data = response.read()
        assert 200 <= response.status <= 299, (response.status, data[:500])
        return json.loads(data) if data else None

    def create_namespace(self, name: str) -> Any:
        return self.request(
            "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )

    def create_configmap(self, name: str, data: dict[str, str], namespace: str = "app") -> Any:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
        return self.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", body)

    def patch_configmap(self, name: str, data: dict[str, str | None], namespace: str = "app") -> Any:
        return self.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/configmaps/{name}",
            {"data": data},
            content_type="application/merge-patch+json",
        )

    def delete_configmap(self, name: str, namespace: str = "app") -> Any:
        return self.request("DELETE", f"/api/v1/namespaces/{namespace}/configmaps/{name}")

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)


class EngineFeed:
    """Feeds a source's operations to a :class:`StreamEngine` in a greenlet; the test reads the
    protocol events with deadlines. Stop it with :meth:`close`."""

    def __init__(self, ops: Iterator[SourceOp], scope: Scope = APP, projection: str = "krm-raw/v1") -> None:
        self.engine = StreamEngine(scope, projection)
        self.ops: list[SourceOp] = []
        self.events: list[Event] = []
        self.mirror = Mirror()
        self._queue: gevent.queue.Queue[Event] = gevent.queue.Queue()
        self._source = ops
        self.greenlet = gevent.spawn(self._run)

    def _run(self) -> None:
        for op in self._source:
            self.ops.append(op)
            for event in self.engine.feed(op):
                self._queue.put(event)
            if self.engine.closed:
                return

    def until(self, done: Callable[[Event], bool], timeout: float = 10.0) -> list[Event]:
        """The events up to and including the first one ``done`` accepts."""
        taken: list[Event] = []
        with gevent.Timeout(timeout, AssertionError(f"no matching event within {timeout} s; got {taken}")):
            while True:
                event = self._queue.get()
                self.events.append(event)
                self.mirror.apply(event)
                taken.append(event)
                if done(event):
                    return taken

    def quiet(self, seconds: float) -> list[Event]:
        """Whatever events arrive within ``seconds``."""
        taken: list[Event] = []
        deadline = gevent.Timeout(seconds)
        deadline.start()
        try:
            while True:
                event = self._queue.get()
                self.mirror.apply(event)
                taken.append(event)
        except gevent.Timeout as fired:
            if fired is not deadline:
                raise
        finally:
            deadline.cancel()
        self.events += taken
        return taken

    def close(self) -> None:
        self.greenlet.kill()


def types(events: list[Event]) -> list[str]:
    """Event types, errors spelled ``error:<code>``."""
    return [f"error:{e.code}" if isinstance(e, StreamError) else e.type for e in events]


def names(events: list[Event]) -> list[str]:
    """``type name`` of each upsert and delete."""
    out = []
    for event in events:
        obj = getattr(event, "object", None)
        identity = getattr(event, "identity", None)
        if obj is not None:
            out.append(f"{event.type} {obj['metadata']['name']}")
        elif identity is not None:
            out.append(f"{event.type} {identity.name}")
    return out


def kubeconfig_via(kube: KubeSimulator, url: str, directory: Path) -> str:
    """A copy of the simulator's kubeconfig whose cluster is served at ``url`` (a proxy)."""
    config = json.loads(Path(kube.kubeconfig_path).read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = url
    path = directory / "kubeconfig-via-proxy"
    path.write_text(json.dumps(config))
    return str(path)


class Mirror:
    """What a consumer holds after applying events (the reducer of inventory D8), by name."""

    def __init__(self) -> None:
        self.objects: dict[str, dict] = {}
        self.seen: set[str] | None = None

    def apply(self, event: Event) -> None:
        if event.type == "reset":
            self.seen = set()
        elif isinstance(event, Upsert):
            self.objects[event.uid] = dict(event.object)
            if self.seen is not None:
                self.seen.add(event.uid)
        elif isinstance(event, Deleted):
            self.objects.pop(event.uid, None)
        elif event.type == "synced" and self.seen is not None:
            self.objects = {uid: obj for uid, obj in self.objects.items() if uid in self.seen}
            self.seen = None

    @property
    def names(self) -> set[str]:
        return {obj["metadata"]["name"] for obj in self.objects.values()}

    @property
    def settled(self) -> bool:
        """No cycle is open."""
        return self.seen is None
