"""The applications under test, a browser stand-in and the checks the security tests share.

Two hosts serve one Kubernetes simulator:

- the example application (``example_app.create_app``), as shipped;
- a minimal host (:func:`make_host`): flask-krm with a recording authorizer, impersonation, the
  review views, the native proxy and two pages whose live components are chosen by query
  parameters (the page is the host's; what the library does with it is under test).

Both run with ``TESTING`` off and ``PROPAGATE_EXCEPTIONS`` off, so a server error shows as the 500
a browser would get. A :class:`Browser` is one browser session (one cookie jar); it reads the
responses a page would read, including streams, which are read in their own greenlets as a
server would serve them, with timeouts.
"""

from __future__ import annotations

import base64
import html
import json
import secrets
import typing as t
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser

import gevent
import gevent.event
import gevent.queue
from flask import Flask, abort, render_template_string, request
from flask.testing import FlaskClient
from flask_login import LoginManager
from werkzeug.test import TestResponse

from flask_krm import AllowedResource, KrmStream, Principal, Scope, ScopePolicy
from flask_krm.csrf import HEADER as CSRF_HEADER
from flask_krm.htmx import PAGE_HEADER
from flask_krm.native import NativeProxy
from flask_krm.save.review import ReviewViews
from flask_krm.save.staging import CreatePolicy
from flask_krm.save.writer import KubeWriter
from flask_krm.scope import ANY_NAMESPACE
from flask_krm.sse import SSEDecoder, SSEMessage
from flask_krm.testing.simulator import KubeSimulator, namespace_rbac_objects
from flask_krm.upstream.clients import Impersonation
from tests.users import User

TARGET: t.Final = "cluster"
HOST_USERS: t.Final = ("admin", "editor", "viewer", "outsider")
"""The minimal host's accounts; ``outsider`` has no Kubernetes rights at all."""

STREAM_URL: t.Final = "/krm/resource-stream/v1"
TIMEOUT: t.Final = 10.0

HOST_POLICY: t.Final = ScopePolicy(
    targets=frozenset({TARGET}),
    resources=(
        AllowedResource("", "configmaps", all_namespaces=True),
        AllowedResource("", "secrets"),
        AllowedResource("apps", "deployments"),
    ),
    namespaces=frozenset({ANY_NAMESPACE}),
    allow_label_selector=True,
)
"""What the minimal host serves: any single namespace, ConfigMaps across all, label selectors."""

NATIVE_POLICY: t.Final = ScopePolicy(
    targets=frozenset({TARGET}),
    resources=(AllowedResource("", "configmaps"), AllowedResource("", "secrets")),
    namespaces=frozenset({ANY_NAMESPACE}),
    allow_label_selector=True,
)

CREATE_POLICIES: t.Final = {
    ("", "configmaps"): CreatePolicy(
        "v1", "ConfigMap", allowed=(("metadata", "name"), ("metadata", "labels"), ("data",))
    ),
    ("", "secrets"): CreatePolicy(
        "v1", "Secret", allowed=(("metadata", "name"), ("metadata", "labels"), ("data",), ("stringData",), ("type",))
    ),
}

_PAGE = (
    '{% import "krm/_macros.html" as krm %}<!doctype html><html><head><title>host</title>{{ krm_script() }}</head>'
    "<body>BODY</body></html>"
)
HOST_PAGES: t.Final = {
    "/list": _PAGE.replace(
        "BODY", "{{ krm.list(scope, projection=projection, columns=columns, link=link, row_actions=row_actions) }}"
    ),
    "/edit": _PAGE.replace(
        "BODY", "{{ krm.editor(scope, name, projection=projection, policy=policy, fields=fields) }}"
    ),
    "/both": _PAGE.replace(
        "BODY",
        "{{ krm.list(scope, projection=projection, columns=columns) }}"
        "{{ krm.editor(scope, name, projection=projection, policy=policy) }}",
    ),
}


# ---------------------------------------------------------------------------- authorization --


@dataclass(frozen=True, slots=True)
class Call:
    """One question the authorizer was asked."""

    principal: str
    scope: Scope
    projection: str
    verb: str


@dataclass(eq=False)
class Recorder:
    """An authorizer that records every call and refuses what ``deny`` says (nothing by default)."""

    calls: list[Call] = field(default_factory=list)
    deny: Callable[[Call], bool] = lambda call: False

    def __call__(self, principal: Principal, scope: Scope, projection: str, verb: str) -> bool:
        call = Call(principal.name, scope, projection, verb)
        self.calls.append(call)
        return not self.deny(call)

    def since(self, mark: int) -> list[Call]:
        """The calls made after ``mark`` (a former ``len(recorder.calls)``)."""
        return self.calls[mark:]


# -------------------------------------------------------------------------------------- hosts --


def base_config(kube: KubeSimulator) -> dict[str, t.Any]:
    """What both hosts share: production error handling and the simulator as ``cluster``."""
    return {
        "TESTING": False,
        "PROPAGATE_EXCEPTIONS": False,
        "SECRET_KEY": secrets.token_hex(16),
        "KRM_TARGETS": {TARGET: {"kubeconfig": kube.kubeconfig_path, "context": "admin"}},
        "KRM_SAVE_CONFIRM_TIMEOUT": 2.0,
    }


def make_host(kube: KubeSimulator, recorder: Recorder, **config: t.Any) -> Flask:
    """The minimal host: Flask-Login accounts, the recording authorizer, impersonation of the
    signed-in person, the review views and the native proxy at ``/k8s``."""
    app = Flask("krm_security_host")
    app.config.update(base_config(kube), KRM_SCOPE_POLICY=HOST_POLICY, KRM_WATCH_LINGER=0.5)
    app.config.update(config)
    login = LoginManager(app)
    login.user_loader(lambda name: User(name) if name in HOST_USERS else None)

    for path, template in HOST_PAGES.items():
        app.add_url_rule(path, path.strip("/"), _page_view(template))

    krm = KrmStream(
        authorizer=recorder,
        review=ReviewViews(policies=CREATE_POLICIES),
        native=NativeProxy(target=TARGET, policy=NATIVE_POLICY),
    )

    @krm.client_loader
    def impersonate(target: str, principal: Principal) -> t.Any:
        return krm.runtime().api_clients().acting_as(target, Impersonation(principal.name))

    krm.init_app(app)
    return app


def _page_view(template: str) -> Callable[[], str]:
    def view() -> str:
        try:
            return render_template_string(
                template,
                scope=request.args.get("scope", ""),
                name=request.args.get("name") or None,
                projection=request.args.get("projection") or None,
                policy=request.args.getlist("policy") or None,
                fields=request.args.getlist("field") or None,
                columns=request.args.getlist("column") or None,
                link=request.args.get("link") or None,
                row_actions=[("Delete", "krm_review.delete")] if request.args.get("delete") else None,
            )
        except ValueError:  # the host's own input check: a scope or argument that describes nothing
            abort(400)

    return view


def make_example(kube: KubeSimulator, **config: t.Any) -> Flask:
    """The example application on the simulator, with production error handling."""
    from example_app import create_app

    return create_app({**base_config(kube), **config})


def shut_down(app: Flask) -> None:
    app.extensions["krm"].extension.shutdown(app, timeout=2.0)


# ----------------------------------------------------------------------------- the cluster --


def admin_writer(kube: KubeSimulator) -> KubeWriter:
    return KubeWriter(kube.api_client("admin"))


def make_namespace(kube: KubeSimulator, name: str, *, editable: bool = True) -> str:
    """Create namespace ``name``; ``editable`` binds ``editor`` to the edit role there."""
    admin = admin_writer(kube)
    answer = admin.request(
        "POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    assert answer.ok, answer
    if editable:
        for obj in namespace_rbac_objects(name):
            assert admin.request(
                "POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{name}/rolebindings", body=obj
            ).ok
    return name


def create(kube: KubeSimulator, namespace: str, resource: str, body: Mapping[str, t.Any]) -> dict[str, t.Any]:
    """Create an object as ``admin``; returns it as stored."""
    answer = admin_writer(kube).request("POST", f"/api/v1/namespaces/{namespace}/{resource}", body=body)
    assert answer.ok, answer
    assert answer.body is not None
    return dict(answer.body)


def merge_patch(
    kube: KubeSimulator, namespace: str, resource: str, name: str, patch: Mapping[str, t.Any]
) -> dict[str, t.Any]:
    """A merge PATCH as ``admin`` (someone else changing the cluster); returns the stored object."""
    api = kube.api_client("admin")
    method, url, headers, payload, _ = api.param_serialize(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/{resource}/{name}",
        body=dict(patch),
        header_params={"Content-Type": "application/merge-patch+json", "Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    response = api.call_api(method, url, header_params=headers, body=payload)
    data = json.loads(response.read())  # type: ignore[no-untyped-call]
    assert response.status == 200, data
    return t.cast(dict[str, t.Any], data)


def read(kube: KubeSimulator, namespace: str, resource: str, name: str) -> dict[str, t.Any] | None:
    answer = admin_writer(kube).request("GET", f"/api/v1/namespaces/{namespace}/{resource}/{name}")
    return dict(answer.body) if answer.ok and answer.body is not None else None


def configmap(name: str, namespace: str, data: Mapping[str, str], **metadata: t.Any) -> dict[str, t.Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, **metadata},
        "data": dict(data),
    }


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def scope_query(namespace: str, resource: str = "configmaps", name: str = "", **extra: str) -> str:
    scope = Scope(target=TARGET, version="v1", resource=resource, namespace=namespace, name=name)
    query = scope.canonical_query()
    for key, value in extra.items():
        query += "&" + _encode({key: value})
    return query


def _encode(params: Mapping[str, str]) -> str:
    from urllib.parse import urlencode

    return urlencode(params)


# ------------------------------------------------------------------------------- the browser --


class _Components(HTMLParser):
    """Live component roots of a page: id, kind and the headers their requests carry."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.components: dict[str, dict[str, t.Any]] = {}
        self.channel_url: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id") == "krm-channel":
            self.channel_url = found.get("hx-sse:connect")
        if tag == "section" and "data-krm-component" in found:
            self.components[str(found["id"])] = {
                "kind": found.get("data-krm-kind"),
                "headers": json.loads(found.get("hx-headers:inherited") or "{}"),
            }


@dataclass(eq=False)
class Page:
    """A page as the browser received it."""

    browser: Browser
    response: TestResponse
    html: str
    components: dict[str, dict[str, t.Any]]
    channel_url: str | None

    @property
    def page_id(self) -> str:
        assert self.channel_url is not None, "the page has no live component"
        return self.channel_url.rstrip("/").split("/")[-2]

    def component(self, kind: str) -> str:
        """The id of the page's (first) ``list`` or ``editor``."""
        for component_id, info in self.components.items():
            if info["kind"] == kind:
                return component_id
        raise LookupError(f"the page has no {kind}")

    def headers(self, component_id: str | None = None) -> dict[str, str]:
        """The CSRF and page headers a component's requests carry."""
        component_id = component_id or next(iter(self.components))
        return dict(self.components[component_id]["headers"])

    def channel(self) -> Stream:
        """Open the page's channel as the browser does."""
        assert self.channel_url is not None
        return self.browser.stream(self.channel_url)


class Browser:
    """One browser session of one application (its own cookies)."""

    def __init__(self, app: Flask, user: str | None = None) -> None:
        self.app = app
        self.client: FlaskClient = app.test_client()
        self.streams: list[Stream] = []
        if user is not None:
            self.sign_in(user)

    def sign_in(self, user: str) -> None:
        """Sign in through Flask-Login's session keys (the minimal host has no sign-in form)."""
        with self.client.session_transaction() as session:
            session["_user_id"] = user
            session["_fresh"] = True

    def sign_out(self) -> None:
        with self.client.session_transaction() as session:
            session.pop("_user_id", None)

    def csrf_token(self) -> str | None:
        with self.client.session_transaction() as session:
            token = session.get("_krm_csrf")
        return token if isinstance(token, str) else None

    def open(self, url: str, status: int = 200) -> Page:
        response = self.client.get(url)
        assert response.status_code == status, (url, response.status_code, response.get_data(as_text=True)[:500])
        markup = response.get_data(as_text=True)
        parser = _Components()
        parser.feed(markup)
        return Page(self, response, markup, parser.components, parser.channel_url)

    def post(
        self,
        url: str,
        data: Mapping[str, t.Any] | None = None,
        headers: Mapping[str, str] | None = None,
        **kwargs: t.Any,
    ) -> TestResponse:
        return self.client.post(url, data=dict(data or {}), headers=dict(headers or {}), **kwargs)

    def stream(self, url: str, headers: Mapping[str, str] | None = None) -> Stream:
        stream = Stream(self.client, url, headers or {})
        self.streams.append(stream)
        return stream

    def close(self) -> None:
        for stream in self.streams:
            stream.close()
        self.streams.clear()


class Stream:
    """A streamed response read in its own greenlet: every byte kept, messages decoded."""

    def __init__(self, client: FlaskClient, url: str, headers: Mapping[str, str]) -> None:
        self.raw = b""
        self.messages: list[SSEMessage] = []
        self.ended = False
        self.response: TestResponse | None = None
        self._chunks: gevent.queue.Queue[bytes | None] = gevent.queue.Queue()
        self._decoder = SSEDecoder()
        started = gevent.event.Event()
        self._greenlet = gevent.spawn(self._run, client, url, dict(headers), started)
        with gevent.Timeout(TIMEOUT):
            started.wait()

    def _run(self, client: FlaskClient, url: str, headers: dict[str, str], started: gevent.event.Event) -> None:
        try:
            self.response = client.get(url, headers=headers, buffered=False)
        finally:
            started.set()
        try:
            for chunk in self.response.iter_encoded():
                self._chunks.put(chunk)
        finally:
            self.response.close()
            self._chunks.put(None)

    def _take(self, timeout: float) -> bool:
        """Apply the next chunk; False once the stream has ended."""
        if self.ended:
            return False
        chunk = self._chunks.get(timeout=timeout)
        if chunk is None:
            self.ended = True
            self.messages.extend(self._decoder.close())
            return False
        self.raw += chunk
        self.messages.extend(self._decoder.feed(chunk))
        return True

    def until(self, condition: Callable[[Stream], bool], timeout: float = TIMEOUT, what: str = "") -> Stream:
        """Read until ``condition(self)`` holds; fails after ``timeout`` seconds or at the end."""
        deadline = gevent.Timeout(timeout)
        deadline.start()
        try:
            while not condition(self):
                if not self._take(timeout):
                    assert condition(self), f"the stream ended before {what or 'the condition'}: {self.text[-1500:]}"
                    return self
        except gevent.Timeout as expired:
            if expired is not deadline:
                raise
            raise AssertionError(f"timed out waiting for {what or 'a condition'}: {self.text[-1500:]}") from None
        finally:
            deadline.close()
        return self

    def until_text(self, needle: str, timeout: float = TIMEOUT) -> Stream:
        return self.until(lambda s: needle in s.text, timeout, repr(needle))

    def drain(self, seconds: float) -> Stream:
        """Read whatever arrives within ``seconds``."""
        deadline = gevent.get_hub().loop.now() + seconds
        while not self.ended:
            remaining = deadline - gevent.get_hub().loop.now()
            if remaining <= 0:
                break
            try:
                self._take(remaining)
            except gevent.queue.Empty:
                break
        return self

    def until_end(self, timeout: float = TIMEOUT) -> Stream:
        return self.until(lambda s: s.ended, timeout, "the end of the stream")

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace")

    @property
    def events(self) -> list[dict[str, t.Any]]:
        """The JSON events of a spec-v1 stream."""
        return [json.loads(m.data) for m in self.messages if m.data and m.data.startswith("{")]

    @property
    def status_code(self) -> int:
        assert self.response is not None
        return self.response.status_code

    def close(self) -> None:
        self._greenlet.kill(block=True, timeout=2)


def event_types(stream: Stream) -> list[str]:
    return [event["type"] for event in stream.events]


def terminal_code(stream: Stream) -> str | None:
    """The code of the stream's terminal error, if it ended with one."""
    for event in stream.events:
        if event.get("type") == "error" and event.get("terminal"):
            return str(event.get("code"))
    return None


# ------------------------------------------------------------------------------------ checks --


def forms(*values: str) -> list[str]:
    """Every form a value could take on the wire: as is, base64 (padded and not), JSON-escaped."""
    out: list[str] = []
    for value in values:
        encoded = b64(value)
        out += [value, encoded, encoded.rstrip("="), json.dumps(value)[1:-1], html.escape(value)]
    return list(dict.fromkeys(out))


def leaks(needles: Iterable[str], *haystacks: str | bytes) -> list[str]:
    """The needles found in any haystack (bytes read as UTF-8)."""
    texts = [h.decode("utf-8", "replace") if isinstance(h, bytes) else h for h in haystacks]
    return [needle for needle in needles if any(needle in text for text in texts)]


def csrf_headers(token: str | None, page_id: str | None = None) -> dict[str, str]:
    headers = {CSRF_HEADER: token} if token else {}
    if page_id is not None:
        headers[PAGE_HEADER] = page_id
    return headers
