"""The spec-v1 JSON endpoint streaming a plugged source: golden bytes, lifecycle and shutdown."""

from __future__ import annotations

import re
import typing as t
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import gevent
import gevent.queue
import pytest
from flask import Flask
from flask.testing import FlaskClient
from flask_login import login_user

from flask_krm import AllowedResource, KrmStream, Principal, Scope, ScopePolicy, signals
from flask_krm.events import StreamError
from flask_krm.ops import Snapshot, SourceOp
from flask_krm.sse import HEADERS, HEARTBEAT, decode_events
from flask_krm.sse_response import SSEResponse
from flask_krm.stream_view import stream_response
from flask_krm.upstream.scripted import ScriptedFixture
from tests import corpus
from tests.apps import AuthorizerLog, make_app
from tests.users import User

URL = "/krm/resource-stream/v1"
SCOPE = Scope(target="demo", version="v1", resource="configmaps", namespace="app")
QUERY = SCOPE.canonical_query()

CORPUS_POLICY = ScopePolicy(
    targets=frozenset({"demo"}),
    resources=(
        AllowedResource(group="", resource="configmaps"),
        AllowedResource(group="", resource="secrets"),
        AllowedResource(group="apps", resource="deployments"),
        AllowedResource(group="wardle.example.com", resource="flunders"),
    ),
    namespaces=frozenset({"app"}),
)


def editor_client(app: Flask, krm: KrmStream) -> tuple[Held, FlaskClient]:
    """A :class:`Held` source plugged in as ``demo``, and a client signed in as the editor."""
    held = Held()
    krm.plug_source("demo", held, app)
    client = app.test_client()
    client.get("/login/editor")
    return held, client


@contextmanager
def closing_reasons(app: Flask) -> Iterator[list[str]]:
    """The reasons of the streams that close meanwhile, in order (``signals.stream_closed``)."""
    reasons: list[str] = []
    with signals.stream_closed.connected_to(lambda sender, **kw: reasons.append(kw["reason"]), app):
        yield reasons


def read_body(response: t.Any) -> bytes:
    with gevent.Timeout(5):
        return b"".join(response.iter_encoded())


def golden_connections(fixture_id: str) -> list[bytes]:
    parts = re.split(rb": connection \d+\n\n", corpus.golden_sse(fixture_id))
    assert parts[0] == b""
    return parts[1:]


class Script:
    """A plugged source that plays one list of operations per connection, in order."""

    def __init__(self, connections: Iterable[Iterable[SourceOp]]) -> None:
        self.connections = iter(connections)
        self.opened: list[tuple[Scope, str, Principal]] = []

    def __call__(self, scope: Scope, projection: str, principal: Principal) -> Iterable[SourceOp]:
        self.opened.append((scope, projection, principal))
        return next(self.connections)


class Held:
    """A plugged source that sends a snapshot, then waits for operations put on ``queue``."""

    def __init__(self) -> None:
        self.queue: gevent.queue.Queue[SourceOp] = gevent.queue.Queue()
        self.closed = 0

    def __call__(self, scope: Scope, projection: str, principal: Principal) -> Iterator[SourceOp]:
        try:
            yield Snapshot([corpus.body("cm-app.v1")])
            while True:
                yield self.queue.get()
        finally:
            self.closed += 1


@pytest.fixture
def app(tmp_path: Path, krm: KrmStream) -> Iterator[Flask]:
    app = make_app(tmp_path, KRM_SCOPE_POLICY=CORPUS_POLICY, KRM_TARGETS={})
    krm.init_app(app)
    yield app
    krm.shutdown(app)
    assert not krm.runtime(app).group, "greenlets outlived shutdown"


@pytest.mark.parametrize("fixture", corpus.fixture_params("gateway"))
def test_bytes_equal_the_golden_of_every_connection(app: Flask, krm: KrmStream, fixture: dict[str, t.Any]) -> None:
    scripted = ScriptedFixture.load(fixture, corpus.bodies())
    script = Script(scripted.connections)
    krm.plug_source("demo", script, app)
    client = app.test_client()
    client.get("/login/editor")
    query = scripted.scope.canonical_query(fixture["projection"])
    goldens = golden_connections(fixture["id"])
    assert len(goldens) == len(scripted.connections)
    for golden in goldens:
        response = client.get(f"{URL}?{query}")
        assert response.status_code == 200
        assert read_body(response) == golden
    assert [(scope, projection, p.name) for scope, projection, p in script.opened] == [
        (scripted.scope, fixture["projection"], "editor")
    ] * len(goldens)


def test_stream_headers_and_signals(app: Flask, krm: KrmStream) -> None:
    krm.plug_source("demo", Script([[Snapshot([corpus.body("cm-app.v1")])]]), app)
    client = app.test_client()
    client.get("/login/viewer")
    opened: list[dict[str, t.Any]] = []
    closed: list[dict[str, t.Any]] = []
    with (
        signals.stream_opened.connected_to(lambda sender, **kw: opened.append(kw), app),
        signals.stream_closed.connected_to(lambda sender, **kw: closed.append(kw), app),
    ):
        response = client.get(f"{URL}?{QUERY}")
        assert response.headers.get("Content-Type") == "text/event-stream"
        for name, value in HEADERS:
            assert response.headers[name] == value
        assert opened == [{"principal": Principal("viewer"), "scope": SCOPE, "projection": "krm-full/v1"}]
        assert closed == []
        events = decode_events(read_body(response))
        response.close()
    assert [e["type"] for e in events] == ["reset", "added", "synced"]
    assert closed == [
        {"principal": Principal("viewer"), "scope": SCOPE, "projection": "krm-full/v1", "reason": "ended"}
    ]


def test_idle_stream_sends_heartbeats(app: Flask, krm: KrmStream) -> None:
    app.config["KRM_HEARTBEAT_INTERVAL"] = 0.01
    held, client = editor_client(app, krm)
    response = client.get(f"{URL}?{QUERY}")
    chunks = response.iter_encoded()
    with gevent.Timeout(5):
        first = next(chunks)
        assert [e["type"] for e in decode_events(first)] == ["reset", "added", "synced"]
        assert next(chunks) == HEARTBEAT
    response.close()


def test_client_disconnect_closes_the_subscription(app: Flask, krm: KrmStream) -> None:
    held, client = editor_client(app, krm)
    with closing_reasons(app) as reasons:
        response = client.get(f"{URL}?{QUERY}")
        with gevent.Timeout(5):
            next(response.iter_encoded())
        assert len(krm.runtime(app).streams) == 1
        response.close()
        gevent.sleep(0)
    assert reasons == ["client-closed"]
    assert held.closed == 1
    assert not krm.runtime(app).streams
    assert not krm.runtime(app).group


@pytest.mark.parametrize("host_class", [False, True])
def test_a_host_response_class_keeps_the_streams_own_body(app: Flask, krm: KrmStream, host_class: bool) -> None:
    if host_class:
        app.response_class = type("HostResponse", (Flask.response_class,), {})
    client = editor_client(app, krm)[1]
    with closing_reasons(app) as reasons:
        with app.test_request_context():
            login_user(User("editor"))
            made = stream_response(QUERY, None)
            assert isinstance(made, app.response_class) and isinstance(made, SSEResponse)
            made.close()
        response = client.get(f"{URL}?{QUERY}")
        with gevent.Timeout(5):
            next(response.iter_encoded())
        response.close()  # the stream's own close: it tells the stream why it ended
        gevent.sleep(0)
    assert reasons == ["client-closed", "client-closed"]
    assert not krm.runtime(app).streams


def test_a_response_closed_before_iteration_still_unsubscribes(app: Flask, krm: KrmStream) -> None:
    held, client = editor_client(app, krm)
    with closing_reasons(app) as reasons:
        client.get(f"{URL}?{QUERY}").close()
        gevent.sleep(0)
    assert reasons == ["client-closed"]
    assert not krm.runtime(app).streams
    assert not krm.runtime(app).group


def test_shutdown_ends_open_streams_with_a_terminal_event(app: Flask, krm: KrmStream) -> None:
    held, client = editor_client(app, krm)
    with closing_reasons(app) as reasons:
        response = client.get(f"{URL}?{QUERY}")
        chunks = response.iter_encoded()
        with gevent.Timeout(5):
            assert len(decode_events(next(chunks))) == 3
            krm.shutdown(app)
            rest = b"".join(chunks)
        response.close()  # as a WSGI server does once the body ends
    assert rest == (
        b'data: {"seq":4,"type":"error","code":"INTERNAL","message":"the server is shutting down","terminal":true}\n\n'
    )
    assert reasons == ["shutdown"]
    assert held.closed == 1
    assert not krm.runtime(app).group


def test_a_failing_source_ends_the_stream_with_internal(app: Flask, krm: KrmStream) -> None:
    def broken(scope: Scope, projection: str, principal: Principal) -> Iterator[SourceOp]:
        yield Snapshot([])
        raise OSError("backend at 10.1.2.3 unreachable")

    krm.plug_source("demo", broken, app)
    client = app.test_client()
    client.get("/login/editor")
    body = read_body(client.get(f"{URL}?{QUERY}"))
    assert body.endswith(
        b'data: {"seq":3,"type":"error","code":"INTERNAL","message":"the stream source failed","terminal":true}\n\n'
    )
    assert b"10.1.2.3" not in body


def test_a_target_neither_configured_nor_plugged_is_refused(app: Flask) -> None:
    client = app.test_client()
    client.get("/login/editor")
    assert read_body(client.get(f"{URL}?{QUERY}")) == (
        b'data: {"seq":1,"type":"error","code":"SCOPE_INVALID","message":"target \'demo\' is not served here",'
        b'"terminal":true}\n\n'
    )


def test_the_authorizer_is_asked_once_per_stream(app: Flask, krm: KrmStream, authorizer: AuthorizerLog) -> None:
    krm.plug_source("demo", Script([[Snapshot([])]]), app)
    client = app.test_client()
    client.get("/login/editor")
    read_body(client.get(f"{URL}?{QUERY}"))
    assert [(p.name, verb) for p, _, _, verb in authorizer.calls] == [("editor", "watch")]


def test_subscribe_events_from_a_greenlet_without_app_context(
    app: Flask, krm: KrmStream, authorizer: AuthorizerLog
) -> None:
    krm.plug_source("demo", Script([[Snapshot([corpus.body("cm-app.v1")])]]), app)

    def collect() -> list[str]:
        subscription = krm.runtime().subscribe(Principal("editor"), SCOPE, "krm-spec/v1")
        return [type(event).__name__ for batch in subscription.batches(timeout=1) for event in batch]

    with gevent.Timeout(5):
        assert gevent.spawn(collect).get() == ["Reset", "Upsert", "Synced"]
    assert [(s, proj, verb) for _, s, proj, verb in authorizer.calls] == [(SCOPE, "krm-spec/v1", "watch")]


def test_subscribe_refused_by_the_authorizer_yields_only_the_terminal_error(
    app: Flask, krm: KrmStream, authorizer: AuthorizerLog
) -> None:
    script = Script([[Snapshot([])]])
    krm.plug_source("demo", script, app)
    authorizer.denied_users.add("viewer")
    with app.app_context(), gevent.Timeout(5):
        batches = list(krm.runtime().subscribe(Principal("viewer"), SCOPE, "krm-full/v1").batches(timeout=1))
    assert batches == [
        [StreamError("FORBIDDEN", "this stream is not permitted for the signed-in principal", terminal=True)]
    ]
    assert script.opened == []


def test_streaming_without_a_pushed_request_context(tmp_path: Path) -> None:
    # No ``app`` fixture: pytest-flask pushes no context, as in production.
    app = make_app(tmp_path, KRM_SCOPE_POLICY=CORPUS_POLICY, KRM_TARGETS={})
    krm = KrmStream(app, authorizer=lambda *args: True)
    krm.plug_source("demo", Script([[Snapshot([corpus.body("cm-app.v1")])]]), app)
    client = app.test_client()
    client.get("/login/admin")
    events = decode_events(read_body(client.get(f"{URL}?{QUERY}&projection=krm-raw/v1")))
    assert [e["type"] for e in events] == ["reset", "added", "synced"]
    assert events[0]["projection"] == "krm-raw/v1"
    krm.shutdown(app)
    assert not krm.runtime(app).group


def test_kubernetes_targets_need_a_monkey_patched_process(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    krm = KrmStream(app, authorizer=lambda *args: True, client_loader=lambda target, principal: None)
    client = app.test_client()
    client.get("/login/admin")
    with pytest.raises(
        RuntimeError, match=r"monkey-patched process: call 'from gevent import monkey; monkey.patch_all\(\)'"
    ):
        client.get(f"{URL}?{QUERY}")
    krm.shutdown(app)
