"""Fixtures for the live UI's Flask-level tests.

The upstream is :class:`Upstream`: a plugged source of protocol events that each test drives by
hand (``upstream.snapshot(obj, ...)``, ``upstream.modified(obj)``), delivered to the UI's feeds
through the same subscription interface the hub offers. Pages are rendered by a small host app
whose templates use the macros exactly as a host would. Sign-in uses Flask-Login with the demo
users; every test that reads a stream wraps its reads in ``gevent.Timeout``.
"""

from __future__ import annotations

import copy
import re
import typing as t
from collections.abc import Iterator, Mapping
from pathlib import Path

import gevent
import gevent.event
import gevent.queue
import pytest
from flask import Flask, render_template_string
from flask.testing import FlaskClient

from flask_krm import AllowedResource, KrmStream, Principal, Scope, ScopePolicy
from flask_krm.ops import Change, ContinuityLost, Failure, Snapshot, SourceOp
from flask_krm.sse import SSEDecoder
from tests.users import add_sign_in

USERS: t.Final = ("admin", "editor", "viewer")

POLICY: t.Final = ScopePolicy(
    targets=frozenset({"demo"}),
    resources=(
        AllowedResource(group="", resource="configmaps"),
        AllowedResource(group="", resource="secrets"),
        AllowedResource(group="apps", resource="deployments"),
    ),
    namespaces=frozenset({"app"}),
)

CONFIGMAPS: t.Final = "target=demo&version=v1&resource=configmaps&namespace=app"
SECRETS: t.Final = "target=demo&version=v1&resource=secrets&namespace=app"
DEPLOYMENTS: t.Final = "target=demo&group=apps&version=v1&resource=deployments&namespace=app"


class Upstream:
    """A hand-driven upstream, plugged as the ``demo`` target's source.

    Each subscription gets the collection's current objects as its snapshot (waiting for the
    first :meth:`snapshot` if there is none yet), then every change the test sends to its scope.
    Objects are raw: the real stream engine projects and redacts them.
    """

    def __init__(self) -> None:
        self.objects: dict[Scope, list[dict[str, t.Any]]] = {}
        self.connections: list[tuple[Scope, gevent.queue.Queue[SourceOp | None]]] = []
        self.opened: list[tuple[str, Scope, str]] = []

    def source(self, scope: Scope, projection: str, principal: Principal) -> Iterator[SourceOp]:
        self.opened.append((principal.name, scope, projection))
        queue: gevent.queue.Queue[SourceOp | None] = gevent.queue.Queue()
        held = self.objects.get(_collection(scope))
        if held is not None:
            queue.put(Snapshot([o for o in held if _in_scope(scope, o)]))
        connection = (scope, queue)
        self.connections.append(connection)
        try:
            while True:
                op = queue.get()
                if op is None:
                    return
                yield op
        finally:
            self.connections.remove(connection)

    def _send(self, scope: Scope, make: t.Callable[[Scope], list[SourceOp]]) -> None:
        for subscribed, queue in list(self.connections):
            if _collection(subscribed) == _collection(scope):
                for op in make(subscribed):
                    queue.put(op)
        gevent.sleep(0.01)

    def snapshot(self, scope: str, *objects: Mapping[str, t.Any]) -> None:
        """The collection of ``scope`` now holds ``objects``; open connections relist."""
        parsed = Scope.from_query(scope)
        first = _collection(parsed) not in self.objects
        self.objects[_collection(parsed)] = [dict(copy.deepcopy(o)) for o in objects]

        def ops(subscribed: Scope) -> list[SourceOp]:
            members = [copy.deepcopy(o) for o in self.objects[_collection(parsed)] if _in_scope(subscribed, o)]
            return [Snapshot(members)] if first else [ContinuityLost(), Snapshot(members)]

        self._send(parsed, ops)

    def modified(self, obj: Mapping[str, t.Any]) -> None:
        """A live change of ``obj`` (it replaces the held object with the same uid)."""
        obj = copy.deepcopy(dict(obj))
        namespace = obj["metadata"].get("namespace", "")
        for key, held in self.objects.items():
            if key.namespace == namespace and any(_uid(o) == _uid(obj) for o in held):
                self.objects[key] = [obj if _uid(o) == _uid(obj) else o for o in held]
                self._send(
                    key,
                    lambda subscribed: [Change("MODIFIED", copy.deepcopy(obj))] if _in_scope(subscribed, obj) else [],
                )

    def added(self, obj: Mapping[str, t.Any]) -> None:
        """A live creation of ``obj`` in its namespace's collections."""
        obj = copy.deepcopy(dict(obj))
        namespace = obj["metadata"].get("namespace", "")
        for key in list(self.objects):
            if key.namespace == namespace:
                self.objects[key] = [*self.objects[key], obj]
                self._send(
                    key, lambda subscribed: [Change("ADDED", copy.deepcopy(obj))] if _in_scope(subscribed, obj) else []
                )

    def deleted(self, obj: Mapping[str, t.Any]) -> None:
        """A live deletion of ``obj``."""
        obj = copy.deepcopy(dict(obj))
        namespace = obj["metadata"].get("namespace", "")
        for key, held in list(self.objects.items()):
            if key.namespace == namespace and any(_uid(o) == _uid(obj) for o in held):
                self.objects[key] = [o for o in held if _uid(o) != _uid(obj)]
                self._send(
                    key,
                    lambda subscribed: [Change("DELETED", copy.deepcopy(obj))] if _in_scope(subscribed, obj) else [],
                )

    def fail(self, scope: str, code: str, message: str, *, terminal: bool) -> None:
        self._send(Scope.from_query(scope), lambda _: [Failure(code, message, terminal)])  # type: ignore[arg-type]


def _uid(obj: Mapping[str, t.Any]) -> str:
    return str(obj["metadata"]["uid"])


def _collection(scope: Scope) -> Scope:
    return Scope(
        target=scope.target,
        group=scope.group,
        version=scope.version,
        resource=scope.resource,
        namespace=scope.namespace,
    )


def _in_scope(scope: Scope, obj: Mapping[str, t.Any]) -> bool:
    metadata = obj["metadata"]
    if scope.namespace and metadata.get("namespace") != scope.namespace:
        return False
    return not scope.name or metadata.get("name") == scope.name


def configmap(
    name: str, data: Mapping[str, str], *, uid: str | None = None, rv: str = "1", **metadata: t.Any
) -> dict[str, t.Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "app", "uid": uid or f"uid-{name}", "resourceVersion": rv, **metadata},
        "data": dict(data),
    }


PAGES: t.Final = {
    "/configmaps": '{% import "krm/_macros.html" as krm %}<html><head>{{ krm_script() }}</head><body>'
    "{{ krm.list(scope, columns=columns) }}</body></html>",
    "/edit": '{% import "krm/_macros.html" as krm %}<html><head>{{ krm_script() }}</head><body>'
    "{{ krm.editor(scope, name, fields=fields, policy=policy) }}</body></html>",
    "/both": '{% import "krm/_macros.html" as krm %}<html><head>{{ krm_script() }}</head><body>'
    "{{ krm.list(scope) }}{{ krm.editor(scope, name) }}</body></html>",
    "/twice": '{% import "krm/_macros.html" as krm %}{{ krm.editor(scope, name) }}{{ krm.editor(scope, name) }}',
    "/titled": '{% import "krm/_macros.html" as krm %}{{ krm.editor(scope, name) }}'
    '{{ krm.editor(scope, name, title="Again") }}',
}


def make_app(tmp_path: Path, upstream: Upstream, **config: t.Any) -> tuple[Flask, KrmStream]:
    app = Flask(__name__, instance_path=str(tmp_path))
    app.config.update(
        TESTING=True,
        SECRET_KEY="ui test secret",
        KRM_SCOPE_POLICY=POLICY,
        KRM_HEARTBEAT_INTERVAL=30.0,
        KRM_WATCH_LINGER=0.0,
        **config,
    )
    add_sign_in(app, USERS)

    def page(template: str) -> t.Callable[[], str]:
        def view() -> str:
            from flask import request

            fields = request.args.getlist("field") or None
            policy = request.args.get("policy") or None
            return render_template_string(
                template,
                scope=request.args.get("scope", CONFIGMAPS),
                name=request.args.get("name", "demo"),
                fields=fields,
                policy=policy,
                columns=request.args.getlist("column") or None,
            )

        return view

    for path, template in PAGES.items():
        app.add_url_rule(path, path, page(template))

    denied: set[str] = set()
    app.config["denied"] = denied
    krm = KrmStream(app, authorizer=lambda principal, scope, projection, verb: principal.name not in denied)
    krm.plug_source("demo", upstream.source, app)
    return app, krm


@pytest.fixture
def upstream() -> Upstream:
    return Upstream()


@pytest.fixture
def app(tmp_path: Path, upstream: Upstream) -> Iterator[Flask]:
    app, krm = make_app(tmp_path, upstream)
    yield app
    krm.shutdown(app)
    assert not krm.runtime(app).group, "greenlets outlived shutdown"


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    client = app.test_client()
    client.get("/login/editor")
    return client


class PageHandle:
    """A rendered page: its HTML, ids and headers, as the browser would read them."""

    def __init__(self, client: FlaskClient, html: str) -> None:
        self.client = client
        self.html = html
        match = re.search(r'hx-sse:connect="([^"]+)"', html)
        self.channel_url = match.group(1) if match else None
        self.page_id = self.channel_url.split("/")[-2] if self.channel_url else None
        headers = re.search(r"hx-headers:inherited='([^']+)'", html)
        self.headers: dict[str, str] = {}
        if headers:
            import json

            self.headers = json.loads(headers.group(1))
        self.component_ids = re.findall(r'<section id="(krm-[0-9a-f]{12})"', html)

    def edit(self, component_id: str, headers: Mapping[str, str] | None = None, **form: str) -> t.Any:
        return self.client.post(
            f"/krm/ui/components/{component_id}/edit",
            data=form,
            headers=dict(self.headers if headers is None else headers),
        )


def open_page(client: FlaskClient, url: str) -> PageHandle:
    response = client.get(url)
    assert response.status_code == 200, response.data
    return PageHandle(client, response.get_data(as_text=True))


class ChannelReader:
    """Reads a page channel in its own greenlet, as a server would serve it, with timeouts.

    A streaming response keeps its request context pushed while it runs, so each one must run in
    its own greenlet (as under a real server), not interleaved in the test's.
    """

    def __init__(self, client: FlaskClient, url: str, headers: Mapping[str, str]) -> None:
        self.raw: gevent.queue.Queue[bytes | None] = gevent.queue.Queue()
        self.decoder = SSEDecoder()
        self.pending: list[t.Any] = []
        self.response: t.Any = None
        self.started = gevent.event.Event()
        self.greenlet = gevent.spawn(self._run, client, url, headers)
        with gevent.Timeout(2):
            self.started.wait()

    def _run(self, client: FlaskClient, url: str, headers: Mapping[str, str]) -> None:
        self.response = client.get(url, headers=dict(headers), buffered=False)
        self.started.set()
        try:
            for chunk in self.response.iter_encoded():
                self.raw.put(chunk)
        finally:
            self.response.close()
            self.raw.put(None)

    def chunk(self, timeout: float = 2.0) -> bytes | None:
        """The next raw chunk (``None`` once the stream ended)."""
        with gevent.Timeout(timeout):
            return t.cast("bytes | None", self.raw.get())

    def next(self, timeout: float = 2.0) -> t.Any:
        """The next SSE message (comments skipped). Raises ``gevent.Timeout`` or ``EOFError``."""
        with gevent.Timeout(timeout):
            while not self.pending:
                chunk = self.raw.get()
                if chunk is None:
                    raise EOFError("the channel ended")
                self.pending.extend(self.decoder.feed(chunk))
            return self.pending.pop(0)

    def close(self) -> None:
        self.greenlet.kill()


def connect(page: PageHandle, headers: Mapping[str, str] | None = None) -> ChannelReader:
    """Open the page's channel as the browser does (its own request, served in its own greenlet)."""
    assert page.channel_url is not None
    reader = ChannelReader(page.client, page.channel_url, headers or {})
    assert reader.response.status_code == 200
    assert reader.response.mimetype == "text/event-stream"
    return reader


def field_id(component_id: str, path: t.Sequence[t.Any], suffix: str = "") -> str:
    """The DOM id the editor gives the field at ``path``."""
    from flask_krm.ui.page import Component

    return Component(component_id, t.cast(t.Any, None)).element_id(path, suffix)


def input_value(page_html: str, element_id: str) -> str | None:
    """The value attribute (or text-area text) of the input ``element_id``, unescaped."""
    import html as html_module

    found = re.search(rf'<input\b[^>]*\bid="{re.escape(element_id)}"[^>]*>', page_html)
    if found:
        value = re.search(r'\bvalue="([^"]*)"', found.group(0))
        return html_module.unescape(value.group(1)) if value else None
    area = re.search(rf'<textarea\b[^>]*\bid="{re.escape(element_id)}"[^>]*>\n(.*?)</textarea>', page_html, re.S)
    return html_module.unescape(area.group(1)) if area else None
