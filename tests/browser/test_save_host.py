"""The host of the saving browser tests: an application that saves, and the fixtures that run it.

It holds no tests. The tests in ``test_save_*.py`` import its fixtures. Unlike the live UI tests'
server, the Kubernetes simulator runs in the test process (its own thread and hub), so a test can
inject faults (a lost response, a webhook-style mutation, dropped watches) and count the writes
that reach it; the application runs in a gevent-patched child process::

    python -m gevent.monkey --module tests.browser.test_save_host KUBECONFIG TRAFFIC_LOG

The application acts for the signed-in person by impersonation, so Kubernetes RBAC decides every
write (``viewer`` may read but not write), saves with the default save hook, waits
``KRM_SAVE_CONFIRM_TIMEOUT`` (1 s) for an echo, and offers creates and deletes of ConfigMaps through
one review list (:class:`flask_krm.save.review.ReviewViews`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import typing as t
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import kubernetes.client
import pytest
from flask import Flask, render_template_string
from jinja2 import ChoiceLoader, DictLoader
from playwright.sync_api import Browser, Page

from flask_krm import AllowedResource, KrmStream, Principal, Scope, ScopePolicy
from flask_krm.save.review import ReviewViews
from flask_krm.save.staging import CreatePolicy
from flask_krm.testing import KubeSimulator
from flask_krm.testing.simulator import WriteRequest
from flask_krm.upstream.clients import Impersonation
from tests.browser.conftest import NAMESPACE, ROOT

CONFIGMAPS: t.Final = f"target=sim&version=v1&resource=configmaps&namespace={NAMESPACE}"
SECRETS: t.Final = f"target=sim&version=v1&resource=secrets&namespace={NAMESPACE}"
DEPLOYMENTS: t.Final = f"target=sim&group=apps&version=v1&resource=deployments&namespace={NAMESPACE}"
USERS: t.Final = ("admin", "editor", "viewer")
CONFIRM_TIMEOUT: t.Final = 1.0

LIST_PAGE: t.Final = """{% extends "krm/base.html" %}
{% import "krm/_macros.html" as krm %}
{% block content %}{{ krm.list(scope, columns=["/metadata/name", ("Greeting", "/data/greeting")], link="/configmaps/{name}",
                                title="ConfigMaps", row_actions=[("Delete", "krm_review.delete")]) }}{% endblock %}"""

EDITOR_PAGE: t.Final = """{% extends "krm/base.html" %}
{% import "krm/_macros.html" as krm %}
{% block content %}{{ krm.editor(scope, name, projection=projection) }}{% endblock %}"""

MANAGED_LIST: t.Final = """{% if channel %}{% include "krm/_channel.html" %}{% endif %}
<section id="{{ component.id }}" class="krm-component krm-list" data-krm-component data-krm-kind="list"
         data-krm-connection="connecting" hx-headers:inherited='{{ headers|tojson }}' aria-labelledby="{{ component.id }}-title">
  {% include "krm/_component_header.html" %}
  <div id="{{ component.body_id }}" class="krm-body">{{ body }}</div>
  <form hx-post="{{ url_for('krm_review.create', component_id=component.id) }}" hx-swap="none">
    <label>New ConfigMap (JSON) <textarea name="body"></textarea></label>
    <button type="submit">Add to review</button>
  </form>
  <div id="{{ component.id }}-review" hx-get="{{ url_for('krm_review.show', component_id=component.id) }}"
       hx-trigger="load" hx-swap="none" aria-live="polite"></div>
</section>"""
"""``krm/list.html`` of this host: a create form and the review list under every list (its rows' Delete
buttons come from the list's ``row_actions``)."""


def create_app(kubeconfig: str, instance_path: str) -> tuple[Flask, KrmStream]:
    """The host app, serving the simulator's ``demo`` namespace as target ``sim``."""
    from flask_login import LoginManager, UserMixin, login_user

    class User(UserMixin):  # type: ignore[misc]
        def __init__(self, name: str) -> None:
            self.id = name

    app = Flask(__name__, instance_path=instance_path)
    app.config.update(
        SECRET_KEY="save browser test secret",
        KRM_TARGETS={"sim": {"kubeconfig": kubeconfig, "context": "admin"}},
        KRM_SCOPE_POLICY=ScopePolicy(
            targets=frozenset({"sim"}),
            resources=(
                AllowedResource(group="", resource="configmaps"),
                AllowedResource(group="", resource="secrets"),
                AllowedResource(group="apps", resource="deployments"),
            ),
            namespaces=frozenset({NAMESPACE}),
        ),
        KRM_WATCH_LINGER=5.0,
        KRM_HEARTBEAT_INTERVAL=5.0,
        KRM_SAVE_CONFIRM_TIMEOUT=CONFIRM_TIMEOUT,
    )
    login = LoginManager(app)
    login.user_loader(lambda name: User(name) if name in USERS else None)

    @app.get("/login/<name>")
    def sign_in(name: str) -> str:
        login_user(User(name))
        return "signed in"

    @app.get("/configmaps")
    def configmaps() -> str:
        return render_template_string(LIST_PAGE, scope=CONFIGMAPS)

    @app.get("/configmaps/<name>")
    def configmap(name: str) -> str:
        return render_template_string(EDITOR_PAGE, scope=CONFIGMAPS, name=name, projection=None, title=name)

    @app.get("/secrets/<name>")
    def secret(name: str) -> str:
        return render_template_string(EDITOR_PAGE, scope=SECRETS, name=name, projection=None, title=name)

    @app.get("/deployments/<name>")
    def deployment(name: str) -> str:
        # The spec projection: a status-only change is invisible, so the held version can go stale.
        return render_template_string(EDITOR_PAGE, scope=DEPLOYMENTS, name=name, projection="krm-spec/v1", title=name)

    krm = KrmStream(app)

    @krm.authorizer
    def authorize(principal: Principal, scope: Scope, projection: str, verb: str) -> bool:
        return principal.name in USERS  # Kubernetes RBAC decides what each may write

    @krm.client_loader
    def client(target: str, principal: Principal) -> kubernetes.client.ApiClient:
        return krm.api_clients().acting_as(target, Impersonation(principal.name))

    creates = CreatePolicy("v1", "ConfigMap", allowed=(("metadata", "name"), ("metadata", "labels"), ("data",)))
    app.register_blueprint(ReviewViews(krm, policies={("", "configmaps"): creates}).blueprint())
    app.jinja_env.loader = ChoiceLoader(
        [DictLoader({"krm/list.html": MANAGED_LIST}), t.cast(t.Any, app.jinja_env.loader)]
    )
    return app, krm


class TrafficRecorder:
    """WSGI middleware appending every response body chunk to a file as it is sent."""

    def __init__(self, app: t.Any, path: str) -> None:
        self.app = app
        self.log = open(path, "ab", buffering=0)  # noqa: SIM115 - open for the server's lifetime

    def __call__(self, environ: dict[str, t.Any], start_response: t.Callable[..., t.Any]) -> Iterator[bytes]:
        self.log.write(f"\n=== {environ['REQUEST_METHOD']} {environ.get('PATH_INFO', '')}\n".encode())
        body = self.app(environ, start_response)
        try:
            for chunk in body:
                self.log.write(chunk)
                yield chunk
        finally:
            close = getattr(body, "close", None)
            if callable(close):
                close()


def main() -> int:
    """Serve the host app on a free port until SIGTERM; print its URL as one JSON line."""
    import gevent
    import gevent.event
    from gevent.pywsgi import WSGIServer

    kubeconfig, traffic = sys.argv[1], sys.argv[2]
    stopping = gevent.event.Event()
    app, krm = create_app(kubeconfig, tempfile.mkdtemp(prefix="krm-save-browser-"))
    server = WSGIServer(("127.0.0.1", 0), TrafficRecorder(app, traffic), log=None)
    server.start()
    for signum in (signal.SIGTERM, signal.SIGINT):
        gevent.signal_handler(signum, stopping.set)
    print(json.dumps({"url": f"http://127.0.0.1:{server.server_port}"}), flush=True)
    stopping.wait()
    krm.shutdown(app, timeout=2)
    server.stop(timeout=1)
    return 0


# ------------------------------------------------------------------------------------ fixtures --


@dataclass
class SaveServer:
    """The running host app and the simulator it saves to."""

    url: str
    kube: KubeSimulator
    traffic: Path

    def traffic_bytes(self) -> bytes:
        return self.traffic.read_bytes()


@pytest.fixture(scope="module")
def kube() -> Iterator[KubeSimulator]:
    with KubeSimulator(demo=True, demo_tick=None) as simulator:
        yield simulator


@pytest.fixture(scope="module")
def save_server(kube: KubeSimulator, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaveServer]:
    traffic = tmp_path_factory.mktemp("save-traffic") / "responses.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "gevent.monkey", "--module", "tests.browser.test_save_host", kube.kubeconfig_path, str(traffic)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.wait(timeout=10)
        raise RuntimeError(f"the save test server did not start:\n{process.stderr.read() if process.stderr else ''}")
    try:
        yield SaveServer(json.loads(line)["url"], kube, traffic)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@pytest.fixture(scope="module")
def core(kube: KubeSimulator) -> kubernetes.client.CoreV1Api:
    """ConfigMaps and Secrets as an administrator sees them (changes made here are someone else's)."""
    return kubernetes.client.CoreV1Api(kube.api_client("admin"))


def configmap_uid(core: kubernetes.client.CoreV1Api, name: str) -> str:
    """The uid of the ConfigMap ``name`` now."""
    metadata = core.read_namespaced_config_map(name, NAMESPACE).metadata
    assert metadata is not None and metadata.uid
    return str(metadata.uid)


@pytest.fixture(scope="module")
def apps(kube: KubeSimulator) -> kubernetes.client.AppsV1Api:
    return kubernetes.client.AppsV1Api(kube.api_client("admin"))


@pytest.fixture
def signed_in(browser: Browser, save_server: SaveServer) -> Iterator[Callable[[str], Page]]:
    """``signed_in(user)``: a new page of a browser profile signed in as ``user``."""
    contexts = []

    def open_as(user: str) -> Page:
        context = browser.new_context(base_url=save_server.url)
        contexts.append(context)
        page = context.new_page()
        page.goto(f"/login/{user}")
        return page

    yield open_as
    for context in contexts:
        context.close()


@dataclass
class WriteCounter:
    """Counts the writes (by verb) that reach the simulator for one object name."""

    name: str
    verbs: list[str]
    _lock: threading.Lock

    def __call__(self, request: WriteRequest) -> None:
        if request.name == self.name:
            with self._lock:
                self.verbs.append(request.verb)

    def count(self, verb: str = "patch") -> int:
        with self._lock:
            return self.verbs.count(verb)


@pytest.fixture
def count_writes(kube: KubeSimulator) -> Iterator[Callable[[str], WriteCounter]]:
    """``count_writes(name)``: a counter of the writes to ``name`` admitted by the simulator."""
    removers = []
    faults = kube.faults
    assert faults is not None

    def start(name: str) -> WriteCounter:
        counter = WriteCounter(name, [], threading.Lock())
        removers.append(faults.mutate_writes(counter))
        return counter

    yield start
    for remove in removers:
        remove()


if __name__ == "__main__":
    sys.exit(main())
