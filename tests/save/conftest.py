"""The simulator, namespaces with the demo RBAC, and live store feeds for the save tests.

A live feed runs the real watch (``Reflector``) and the real stream engine on a thread and applies
every protocol event to a ``LiveResourceStore``, as a session's stream would. Threads, not
greenlets: this pytest process is not monkey-patched, and the store is thread-safe.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
from flask import Flask
from flask_login import LoginManager, login_user

from flask_krm import AllowedResource, ScopePolicy
from flask_krm.events import StreamError
from flask_krm.principal import Principal
from flask_krm.save.perform import EditorTarget
from flask_krm.save.writer import KubeWriter, SaveHook, default_save
from flask_krm.scope import Scope
from flask_krm.store import LiveResourceStore, RecoveryCopies
from flask_krm.stream import StreamEngine
from flask_krm.testing.simulator import KubeSimulator, cluster_rbac_objects, namespace_rbac_objects
from flask_krm.upstream.reflector import Reflector, WatchSettings
from tests.ui.conftest import Upstream
from tests.users import User

_names = itertools.count(1)


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_names)}-{int(time.time() * 1000) % 100000}"


def wait_for(condition: Callable[[], Any], timeout: float = 5.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


@contextmanager
def simulator_with_roles() -> Iterator[KubeSimulator]:
    """A simulator holding the cluster roles of the demo users (``editor``, ``viewer``, ...)."""
    with KubeSimulator(bookmark_interval=0.3) as simulator:
        admin = KubeWriter(simulator.api_client("admin"))
        for obj in cluster_rbac_objects():
            kind = obj["kind"].lower() + "s"
            answer = admin.request("POST", f"/apis/rbac.authorization.k8s.io/v1/{kind}", body=obj)
            assert answer.ok or answer.code == 409, answer  # the simulator may seed them
        yield simulator


def editable_namespace(kube: KubeSimulator) -> str:
    """A fresh namespace where ``editor`` may edit."""
    name = unique("save")
    admin = KubeWriter(kube.api_client("admin"))
    assert admin.request(
        "POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    ).ok
    for obj in namespace_rbac_objects(name):
        assert admin.request("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{name}/rolebindings", body=obj).ok
    return name


@pytest.fixture(scope="session")
def kube() -> Iterator[KubeSimulator]:
    with simulator_with_roles() as simulator:
        yield simulator


@pytest.fixture
def namespace(kube: KubeSimulator) -> str:
    """A fresh namespace where ``editor`` may edit."""
    return editable_namespace(kube)


@dataclass
class LiveFeed:
    """A projected watch applied to ``store`` on a thread; ``live`` once the first cycle synced."""

    store: LiveResourceStore
    scope: Scope
    projection: str
    api: kubernetes.client.ApiClient
    errors: list[StreamError] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> LiveFeed:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        wait_for(lambda: self.store.snapshot_complete, what="the first snapshot")
        return self

    @property
    def live(self) -> bool:
        return self.store.snapshot_complete and not self._stop.is_set()

    def _run(self) -> None:
        engine = StreamEngine(self.scope, self.projection)
        reflector = Reflector(self.api, self.scope, settings=WatchSettings(watch_seconds=5), sleep=time.sleep)
        for op in reflector.ops():
            if self._stop.is_set():
                return
            for event in engine.feed(op):
                if isinstance(event, StreamError):
                    self.errors.append(event)
                self.store.apply(event)
            if engine.closed:
                return

    def stop(self) -> None:
        self._stop.set()


@pytest.fixture
def feeds() -> Iterator[Callable[..., LiveFeed]]:
    started: list[LiveFeed] = []

    def start(
        store: LiveResourceStore, scope: Scope, api: kubernetes.client.ApiClient, projection: str = "krm-full/v1"
    ) -> LiveFeed:
        feed = LiveFeed(store, scope, projection, api).start()
        started.append(feed)
        return feed

    yield start
    for feed in started:
        feed.stop()


def unconditional_patch(kube: KubeSimulator, path: str, patch: dict[str, Any], user: str = "admin") -> None:
    """A colleague's or controller's merge patch without preconditions (never sent by flask-krm)."""
    api = kube.api_client(user)
    method, url, headers, body, _ = api.param_serialize(
        "PATCH",
        path,
        header_params={"Content-Type": "application/merge-patch+json", "Accept": "application/json"},
        body=patch,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(method, url, header_params=headers, body=body)
    response.read()
    assert 200 <= response.status <= 299, response.data


def admin_delete(kube: KubeSimulator, path: str) -> bool:
    api = kube.api_client("admin")
    method, url, headers, _, _ = api.param_serialize(
        "DELETE", path, header_params={"Accept": "application/json"}, auth_settings=["BearerToken"]
    )
    response = api.call_api(method, url, header_params=headers)
    response.read()
    return bool(200 <= response.status <= 299)


def new_store() -> LiveResourceStore:
    return LiveResourceStore(recovery=RecoveryCopies(lifetime=600))


def editor_target(
    kube: KubeSimulator,
    scope: Scope,
    *,
    user: str = "editor",
    projection: str | None = "krm-full/v1",
    hook: SaveHook = default_save,
) -> EditorTarget:
    return EditorTarget(Principal(user), scope, projection, kube.api_client(user), hook)


@pytest.fixture
def upstream() -> Upstream:
    """The hand-driven upstream of the UI tests, feeding the editor under test."""
    return Upstream()


def signing_in_app(instance_path: Path, secret: str, resources: tuple[str, ...] = ("configmaps",)) -> Flask:
    """A Flask application for the save tests over Flask: the core ``resources`` of every namespace
    of target ``dev``, and ``/login/<name>`` signing anyone in by name."""
    app = Flask(__name__, instance_path=str(instance_path))
    app.config.update(
        TESTING=True,
        SECRET_KEY=secret,
        KRM_SCOPE_POLICY=ScopePolicy(
            targets=frozenset({"dev"}),
            resources=tuple(AllowedResource(group="", resource=resource) for resource in resources),
            namespaces=frozenset({"*"}),
        ),
        KRM_WATCH_LINGER=0.0,
    )
    LoginManager(app).user_loader(lambda name: User(name))

    @app.get("/login/<name>")
    def sign_in(name: str) -> str:
        login_user(User(name))
        return "signed in"

    return app
