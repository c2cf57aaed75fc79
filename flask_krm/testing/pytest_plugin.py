"""pytest plugin for host applications: a Kubernetes simulator, the host's app on it, and live clients.

Installed with flask-krm (entry point ``pytest11: flask_krm``); every fixture is opt-in. Tell it how
to build your application in ``pytest.ini`` / ``pyproject.toml``::

    [pytest]
    krm_app_factory = myapp:create_app      # called with a config mapping
    krm_target = cluster                    # the KRM_TARGETS name your app streams from

then test an editor and your save hook in a few lines::

    def test_the_greeting_is_saved(krm_client, kube_simulator):
        editor = krm_client("editor").live("/configmaps/app-config").editor()
        editor.set("/data/greeting", "hi")
        assert editor.save().kind == "saved"

Fixtures (all function-scoped):

- ``kube_simulator``: a :class:`~flask_krm.testing.KubeSimulator` with the demo users (``admin``,
  ``editor``, ``viewer``), their RBAC and the demo objects, without the demo controller unless
  ``@pytest.mark.krm_simulator(demo_tick=1.0)`` asks for it (the marker's keywords go to the
  simulator).
- ``krm_config``: ``TESTING``, a ``SECRET_KEY`` and ``KRM_TARGETS`` naming the simulator (as its
  ``admin`` context) under ``krm_target``.
- ``krm_app``: ``krm_app_factory(krm_config)``, shut down afterwards. Override it to build the app
  another way.
- ``krm_sign_in``: ``sign_in(client, user_id)``; the default signs in through Flask-Login's session.
- ``krm_client``: ``krm_client(user_id)`` gives a signed-in :class:`LiveClient`.

The application's streams need a gevent monkey-patched process, so run these tests as
``python -m gevent.monkey --module pytest``; ``krm_app`` fails with that advice otherwise.
"""

from __future__ import annotations

import html
import importlib
import json
import re
import secrets
import typing as t
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser

import pytest
from flask.testing import FlaskClient

if t.TYPE_CHECKING:
    from flask import Flask
    from werkzeug.test import TestResponse

    from .. import concurrency
    from .simulator import KubeSimulator

PATCH_ADVICE: t.Final = (
    "flask-krm's live views need a gevent monkey-patched process: run these tests as "
    "'python -m gevent.monkey --module pytest ...'"
)
DEFAULT_TIMEOUT: t.Final = 10.0
"""Seconds a live client waits for a condition before failing the test."""

_PARTIAL = re.compile(r'<hx-partial hx-target="#([^"]+)"(?: hx-swap="([^"]*)")?>(.*?)</hx-partial>', re.DOTALL)
_OUTCOME = re.compile(r'data-krm-outcome="([^"]+)"')
_MESSAGE = re.compile(r'<p class="krm-outcome-message">(.*?)</p>', re.DOTALL)
_DETAIL = re.compile(r'<p class="krm-outcome-detail">(.*?)</p>', re.DOTALL)
_STREAM = re.compile(r'data-krm-stream="([^"]*)"')
_TAG = re.compile(r"<[^>]+>")


# ------------------------------------------------------------------------------ configuration --


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("krm_app_factory", "module:function that builds the application from a config mapping (krm_app)")
    parser.addini("krm_target", "the KRM_TARGETS name under which krm_config puts the simulator", default="cluster")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "krm_simulator(**options): keyword arguments for the kube_simulator fixture's KubeSimulator"
    )


def load_factory(spec: str) -> Callable[[Mapping[str, t.Any]], Flask]:
    """The application factory named ``module:function``. Raises ``pytest.UsageError`` for a bad name."""
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise pytest.UsageError(f"krm_app_factory must look like 'package.module:create_app', got {spec!r}")
    try:
        factory = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as exc:
        raise pytest.UsageError(f"krm_app_factory {spec!r} cannot be loaded: {exc}") from None
    return t.cast("Callable[[Mapping[str, t.Any]], Flask]", factory)


def require_patched() -> None:
    """Fail the test with :data:`PATCH_ADVICE` unless gevent has patched this process."""
    from ..concurrency import patched

    if not patched():
        pytest.fail(PATCH_ADVICE, pytrace=False)


# ----------------------------------------------------------------------------------- fixtures --


@pytest.fixture
def kube_simulator(request: pytest.FixtureRequest) -> Iterator[KubeSimulator]:
    """A running Kubernetes simulator with the demo users, RBAC and objects."""
    from .simulator import KubeSimulator

    marker = request.node.get_closest_marker("krm_simulator")
    options: dict[str, t.Any] = {"demo": True, "demo_tick": None, **(marker.kwargs if marker else {})}
    with KubeSimulator(**options) as kube:
        yield kube


@pytest.fixture
def krm_target(request: pytest.FixtureRequest) -> str:
    """The target name the simulator is configured under (ini ``krm_target``, default ``cluster``)."""
    return str(request.config.getini("krm_target"))


@pytest.fixture
def krm_config(kube_simulator: KubeSimulator, krm_target: str) -> dict[str, t.Any]:
    """Configuration for the host's factory: the simulator as ``krm_target``."""
    return {
        "TESTING": True,
        "SECRET_KEY": secrets.token_hex(16),
        "KRM_TARGETS": {krm_target: {"kubeconfig": kube_simulator.kubeconfig_path, "context": "admin"}},
    }


@pytest.fixture
def krm_app(request: pytest.FixtureRequest, krm_config: dict[str, t.Any]) -> Iterator[Flask]:
    """The host application from ``krm_app_factory``, shut down after the test."""
    require_patched()
    spec = str(request.config.getini("krm_app_factory") or "")
    if not spec:
        raise pytest.UsageError("set krm_app_factory = 'package.module:create_app' in the pytest configuration")
    app = load_factory(spec)(krm_config)
    yield app
    from ..runtime import find_runtime  # not at import: the plugin loads before gevent patches

    krm = find_runtime(app)
    if krm is not None:
        krm.shutdown(timeout=2.0)


def sign_in_with_flask_login(client: LiveClient, user_id: str) -> None:
    """Sign ``client`` in as ``user_id`` the way Flask-Login's own test client does."""
    with client.session_transaction() as session:
        session["_user_id"] = user_id
        session["_fresh"] = True


@pytest.fixture
def krm_sign_in() -> Callable[[LiveClient, str], None]:
    """How ``krm_client`` signs a client in; override it for another sign-in than Flask-Login."""
    return sign_in_with_flask_login


@pytest.fixture
def krm_client(krm_app: Flask, krm_sign_in: Callable[[LiveClient, str], None]) -> Iterator[Callable[[str], LiveClient]]:
    """``krm_client(user_id)``: a test client of ``krm_app`` signed in as ``user_id``."""
    clients: list[LiveClient] = []

    def make(user_id: str) -> LiveClient:
        client = LiveClient(krm_app, krm_app.response_class, use_cookies=True)
        krm_sign_in(client, user_id)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close_pages()


# -------------------------------------------------------------------------------- live pages --


@dataclass(frozen=True, slots=True)
class SaveOutcome:
    """What a Save answered: the outcome kind (``saved``, ``version-stale``, ``refused``...),
    its sentence, its detail and the HTTP status."""

    kind: str
    message: str
    detail: str
    status_code: int


class _PageParser(HTMLParser):
    """The live components of a page: ids, kinds, titles, headers and the channel URL."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.components: dict[str, dict[str, t.Any]] = {}
        self.channel_url: str | None = None
        self._title_of: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if "hx-sse:connect" in found and found.get("id") == "krm-channel":
            self.channel_url = found["hx-sse:connect"]
        if tag == "section" and "data-krm-component" in found and found.get("id"):
            self.components[str(found["id"])] = {
                "kind": found.get("data-krm-kind") or "",
                "headers": json.loads(found.get("hx-headers:inherited") or "{}"),
                "title": "",
            }
        if tag == "h2" and (found.get("id") or "").endswith("-title"):
            owner = str(found["id"])[: -len("-title")]
            self._title_of = owner if owner in self.components else None

    def handle_data(self, data: str) -> None:
        if self._title_of is not None:
            self.components[self._title_of]["title"] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2":
            self._title_of = None


def _element_inner(markup: str, element_id: str) -> str:
    """The inner HTML of the ``<div id=element_id>`` in ``markup`` (``""`` if there is none)."""
    opening = re.search(rf'<div id="{re.escape(element_id)}"[^>]*>', markup)
    if opening is None:
        return ""
    depth, position = 1, opening.end()
    for tag in re.finditer(r"<(/?)div\b[^>]*>", markup[position:]):
        depth += -1 if tag.group(1) else 1
        if depth == 0:
            return markup[position : position + tag.start()]
    return markup[position:]


def _swapped(markup: str, target: str, swap: str, content: str) -> str:
    """``markup`` after the partial swap ``swap`` of ``content`` at the element ``target`` (a
    list's row, count, pager or rows; an editor's field, control or other element sent alone)."""
    from .markup import element_span

    span = element_span(markup, target)
    if span is None:
        return markup
    start, end = span
    if swap == "krmLines":  # the element's text, as its lines that changed (krm-lines.js)
        from ..ui.editor_updates import apply_line_changes  # not at import: the plugin loads before gevent patches

        opened = markup.index(">", start) + 1
        closed = markup.rindex("</", start, end)
        changes = json.loads(html.unescape(content))["changes"]
        text = apply_line_changes(html.unescape(markup[opened:closed]), changes)
        return markup[:opened] + html.escape(text, quote=False) + markup[closed:]
    if swap == "delete":
        return markup[:start] + markup[end:]
    if swap == "beforebegin":
        return markup[:start] + content + markup[start:]
    if swap == "beforeend":
        at = markup.rfind("</", start, end)
        return markup[:at] + content + markup[at:]
    return markup[:start] + content + markup[end:]


def _text(markup: str) -> str:
    return html.unescape(_TAG.sub("", markup)).strip()


@dataclass(eq=False, repr=False)
class LivePage:
    """A rendered page with live components, kept current by its own page channel.

    The channel is read by a greenlet; :meth:`wait_until` applies its messages until a condition
    holds. Close the page (or let the ``krm_client`` fixture do it) to end the channel.
    """

    client: LiveClient
    html: str
    channel_url: str | None
    components: dict[str, dict[str, t.Any]]
    bodies: dict[str, str] = field(default_factory=dict)
    closed_reason: str | None = None
    _messages: concurrency.Queue[t.Any] | None = None
    _reader: concurrency.Greenlet | None = None

    def __repr__(self) -> str:
        return f"<LivePage {self.channel_url or 'without live components'} {sorted(self.components)}>"

    def editor(self, title: str | None = None) -> LiveEditor:
        """The page's editor whose title contains ``title`` (the only or first one without it)."""
        return LiveEditor(self, self._component("editor", title))

    def list_body(self, title: str | None = None) -> str:
        """The current inner HTML of a list's body."""
        return self.bodies[self._component("list", title)]

    def _component(self, kind: str, title: str | None) -> str:
        for component_id, info in self.components.items():
            if info["kind"] == kind and (title is None or title in info["title"]):
                return component_id
        raise LookupError(f"the page has no {kind}" + (f" titled {title!r}" if title else ""))

    def headers(self, component_id: str) -> dict[str, str]:
        """The page and CSRF headers the component's requests carry."""
        return dict(self.components[component_id]["headers"])

    def start(self) -> LivePage:
        """Open the page channel in a reader greenlet (pages without live components have none)."""
        from .. import concurrency

        if self.channel_url is None:
            return self
        self._messages = concurrency.Queue()
        self._reader = concurrency.spawn(self._read, self.channel_url)
        return self

    def _read(self, url: str) -> None:
        from ..sse import SSEDecoder

        assert self._messages is not None
        decoder = SSEDecoder()
        # Requested here, not by the caller: the streamed view keeps its request context pushed
        # in the greenlet that made the request, so it must also be the one that reads it.
        response = self.client.get(url, buffered=False)
        try:
            for chunk in response.iter_encoded():
                for message in decoder.feed(chunk):
                    self._messages.put(message)
        finally:
            response.close()
            self._messages.put(None)

    def _apply(self, message: t.Any) -> None:
        if message is None:
            self.closed_reason = self.closed_reason or "the channel ended"
            return
        if message.event == "krm-close":
            self.closed_reason = message.data
            return
        for target, swap, inner in _PARTIAL.findall(message.data):
            if target.endswith("-body") and target[: -len("-body")] in self.components:
                self.bodies[target[: -len("-body")]] = inner
                continue
            for component_id, body in self.bodies.items():  # a list's row, count or pager; an editor's element
                if target.startswith(component_id + "-"):
                    self.bodies[component_id] = _swapped(body, target, swap, inner)

    def wait_until(self, condition: Callable[[], bool], timeout: float = DEFAULT_TIMEOUT, what: str = "") -> None:
        """Apply channel messages until ``condition()`` holds; fail the test after ``timeout`` seconds."""
        from .. import concurrency

        loop = concurrency.current_loop()
        deadline = loop.now() + timeout
        while not condition():
            remaining = deadline - loop.now()
            if remaining <= 0 or self._messages is None or self.closed_reason is not None:
                reason = f" (the channel closed: {self.closed_reason})" if self.closed_reason else ""
                pytest.fail(f"timed out after {timeout:g}s waiting for {what or 'a condition'}{reason}", pytrace=False)
            try:
                self._apply(self._messages.get(timeout=remaining))
            except concurrency.Empty:
                continue

    def close(self) -> None:
        """End the page channel. Idempotent."""
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.kill(block=True, timeout=2)


@dataclass(eq=False, repr=False)
class LiveEditor:
    """One live editor of a :class:`LivePage`: its fields, edits and Save."""

    page: LivePage
    component_id: str

    def __repr__(self) -> str:
        return f"<LiveEditor {self.component_id} {self.stream}>"

    @property
    def body(self) -> str:
        """The editor's current body (fields) as HTML."""
        return self.page.bodies.get(self.component_id, "")

    @property
    def text(self) -> str:
        """The editor's current body as plain text."""
        return _text(self.body)

    @property
    def stream(self) -> str:
        """The editor's stream state: ``connecting``, ``syncing``, ``live``, ``retrying`` or ``terminal``."""
        found = _STREAM.search(self.body)
        return found.group(1) if found else "connecting"

    @property
    def has_conflict(self) -> bool:
        """Whether a field shows someone else's change to an edited value."""
        return "krm-conflicted" in self.body

    def wait_live(self, timeout: float = DEFAULT_TIMEOUT) -> LiveEditor:
        """Wait until the editor's stream is live (its object loaded, writes allowed)."""
        self.page.wait_until(lambda: self.stream == "live", timeout, "the editor to be live")
        return self

    def wait_until(
        self, condition: Callable[[LiveEditor], bool], timeout: float = DEFAULT_TIMEOUT, what: str = ""
    ) -> LiveEditor:
        """Wait until ``condition(editor)`` holds, as the page's channel updates the editor."""
        self.page.wait_until(lambda: condition(self), timeout, what)
        return self

    def _url(self, endpoint: str, **values: t.Any) -> str:
        app = self.page.client.application
        with app.test_request_context():
            from flask import url_for

            return url_for(endpoint, component_id=self.component_id, **values)

    def edit(self, op: str, path: str | Sequence[t.Any], **form: str) -> TestResponse:
        """Send one field edit (``op`` as the editor's fields do: ``set``, ``add_key``, ``add_item``,
        ``revert``, ``keep_mine``...); ``path`` is an RFC 6901 pointer or a sequence of keys, indexes
        and item keys (``{"name": "web"}`` for an item of a keyed list)."""
        from ..store.paths import pointer_to_path

        segments = list(pointer_to_path(path)) if isinstance(path, str) else list(path)
        return self.page.client.post(
            self._url("krm.ui_edit"),
            data={"op": op, "path": json.dumps(segments), **form},
            headers=self.page.headers(self.component_id),
        )

    def set(self, path: str | Sequence[t.Any], value: t.Any, *, started: str | None = None) -> TestResponse:
        """Type ``value`` into the field at ``path`` (numbers and booleans as a browser sends them)
        over the text ``started`` (what the field showed; required for an array edited as text)."""
        self.wait_live()
        if isinstance(value, bool):
            return self.edit("set", path, **({"value": "on"} if value else {}))
        start = {} if started is None else {"from": started}
        return self.edit("set", path, value=value if isinstance(value, str) else json.dumps(value), **start)

    def save(self, *, confirm: bool = True) -> SaveOutcome:
        """Press Save; with ``confirm``, also wait for the live confirmation of an accepted write
        (``saved``) as the page does. Returns the final outcome."""
        self.wait_live()
        url = self._url("krm.ui_action", name="save")
        headers = self.page.headers(self.component_id)
        response = self.page.client.post(url, headers=headers)
        outcome = parse_outcome(response)
        if confirm and outcome.kind == "saved-pending":
            outcome = parse_outcome(self.page.client.post(url, data={"krm_confirm": "1"}, headers=headers))
        return outcome


def parse_outcome(response: TestResponse) -> SaveOutcome:
    """The outcome in a Save response. Raises ``AssertionError`` when the response has none."""
    body = response.get_data(as_text=True)
    kind = _OUTCOME.search(body)
    if kind is None:
        raise AssertionError(f"the Save answered HTTP {response.status_code} without an outcome: {body[:300]!r}")
    message, detail = _MESSAGE.search(body), _DETAIL.search(body)
    return SaveOutcome(
        kind=kind.group(1),
        message=_text(message.group(1)) if message else "",
        detail=_text(detail.group(1)) if detail else "",
        status_code=response.status_code,
    )


class LiveClient(FlaskClient):
    """A Flask test client that can open pages with live components (:meth:`live`)."""

    def __init__(self, *args: t.Any, **kwargs: t.Any) -> None:
        super().__init__(*args, **kwargs)
        self.pages: list[LivePage] = []

    def live(self, path: str, *, timeout: float = DEFAULT_TIMEOUT) -> LivePage:
        """GET ``path`` (it must answer 200) and open its page channel."""
        response = self.get(path)
        if response.status_code != 200:
            raise AssertionError(f"GET {path} answered HTTP {response.status_code}, not a page")
        markup = response.get_data(as_text=True)
        parser = _PageParser()
        parser.feed(markup)
        bodies = {cid: _element_inner(markup, f"{cid}-body") for cid in parser.components}
        page = LivePage(self, markup, parser.channel_url, parser.components, bodies)
        self.pages.append(page)
        return page.start()

    def close_pages(self) -> None:
        """Close every live page this client opened."""
        for page in self.pages:
            page.close()
        self.pages.clear()
