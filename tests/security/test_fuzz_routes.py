"""Every route of the example and of the minimal host under random requests: never a 5xx, never a
traceback logged.

The routes are read from each application's ``url_map``, so a route added later is fuzzed without
touching this file. Each route gets :data:`EXAMPLES` random requests (100; set
``FLASK_KRM_FUZZ_EXAMPLES`` for more, 300 for the full run): a random method (mostly the route's
own), path arguments drawn from live values (the session's page and component ids, object names) or
random text or raw bytes, a query string of scope and credential parameter names with random values
(raw non-UTF-8 bytes and numbers past Python's digit limit included), random headers, and a form,
JSON or raw body. Requests come from an anonymous browser or from a signed-in editor or viewer
holding real pages, with or without their CSRF and page headers, so a body reaches the code that
parses it. Answers to event streams are read for a moment, then closed, as a browser that goes away
would.

YAML-shaped bodies (anchors, aliases, merge keys, tags, huge scalars, deep nesting, duplicate keys,
numbers past the digit limit, values of the wrong type for their place, non-UTF-8 bytes) go to every
route, and :func:`test_yaml_and_field_edits_answer_random_bodies_without_a_server_error` sends them
(in ``yaml`` and in ``before``) and field edits to the live editors of both applications, as
coherent requests that reach the draft: :data:`EDIT_EXAMPLES` per application, about half of each.

A stateful machine then drives one signed-in session through sequences of UI requests (open a
page, edit, stage creates and deletes, save, read the channel) with fuzzed fields.
"""

from __future__ import annotations

import html
import io
import json
import logging
import os
import re
import typing as t
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import quote, quote_from_bytes, urlencode

import gevent
import pytest
from flask import Flask
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from werkzeug.routing import Rule

from flask_krm import Scope
from flask_krm.csrf import FIELD as CSRF_FIELD
from flask_krm.csrf import HEADER as CSRF_HEADER
from flask_krm.testing.simulator import KubeSimulator
from flask_krm.ui.edits import OPERATIONS
from flask_krm.ui.live import PAGE_HEADER

from .hosts import TARGET, Browser, Page, Recorder, make_example, make_host, shut_down

EXAMPLES: t.Final = int(os.environ.get("FLASK_KRM_FUZZ_EXAMPLES") or 100)
"""Random requests per route."""
EDIT_EXAMPLES: t.Final = max(300, EXAMPLES)
"""Random edits per application: quick even at full size, which reaching every kind of answer
(accepted and refused, YAML and field edits) needs."""
STATEFUL_EXAMPLES: t.Final = max(10, EXAMPLES // 6)
NAMESPACE: t.Final = "demo"
STREAM_READ: t.Final = 0.01
"""Seconds an event stream is read before the fuzzing browser goes away."""
METHODS: t.Final = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "PROPFIND", "TRACE")
PARAMETERS: t.Final = (
    "target",
    "group",
    "version",
    "resource",
    "namespace",
    "name",
    "labelSelector",
    "projection",
    "scope",
    "column",
    "link",
    "policy",
    "delete",
    "next",
    "watch",
    "resourceVersion",
    "limit",
    "allowWatchBookmarks",
    "timeoutSeconds",
    "fieldSelector",
    "server",
    "kubeconfig",
    "token",
    "as",
    "impersonate-user",
    "context",
    "krm_confirm",
    "op",
    "path",
    "value",
)
FORM_FIELDS: t.Final = (
    "op",
    "path",
    "value",
    "key",
    "new_key",
    "from",
    "to",
    "item.name",
    "uid",
    "body",
    "resource_version",
    "username",
    "password",
)
OPS: t.Final = (*sorted(OPERATIONS), "delete", "")
CONTENT_TYPES: t.Final = (
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/json",
    "application/merge-patch+json",
    "text/plain",
    "application/x-www-form-urlencoded; charset=latin-1",
    "",
)


# ------------------------------------------------------------------------------ strategies --
# Lean on purpose: values come from pools of telling strings or from raw bytes (one draw each), so
# generating a request costs little next to serving it.

TELLING: t.Final = (
    "",
    "a",
    "app-config",
    NAMESPACE,
    "demo-staging",
    TARGET,
    "v1",
    "configmaps",
    "krm-full/v1",
    "true",
    "0",
    "-1",
    "9" * 4301,
    "-" + "9" * 9000,
    "1e999",
    "NaN",
    "0x10",
    "1_000",
    "\u0663",
    "\u00e9t\u00e9",
    "\U0001f600",
    "a\nb",
    "a\r\nb",
    "\x1b[31mred",
    "\x00",
    "\u2028",
    "\ud800".encode("utf-8", "surrogatepass").decode("latin-1"),
    "%",
    "%zz",
    "../..",
    "x" * 5000,
    "a=b&c=d",
    "<script>",
    "'\"",
    " ",
    "\t",
)
"""Strings that have broken parsers: numbers past Python's digit limit, control and escape
characters, line breaks, surrogates, traversal, markup."""

RAW_BYTES: t.Final = st.binary(max_size=24)
REQUEST_LINE_BYTES: t.Final = RAW_BYTES.map(lambda data: data.translate(None, b" \t\r\n"))
"""Raw bytes a server hands over in a query string (a request line has no whitespace; a path is
percent-decoded by the server, so it may hold any byte)."""
TEXT: t.Final = st.one_of(st.sampled_from(TELLING), RAW_BYTES.map(lambda data: data.decode("utf-8", "replace")))
HUGE_NUMBER: t.Final = st.sampled_from(["9" * 4301, "1" * 6000])
JSON_TEXT: t.Final = st.sampled_from(
    [
        "{}",
        "[]",
        "null",
        "1e400",
        "-1e400",
        "NaN",
        '{"a":',
        '"\\ud800"',
        '{"metadata":{"name":"x","uid":"u"}}',
        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fuzz"},"data":{"a":"b"}}',
        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a\\nb"},"data":{"a":1}}',
        '{"metadata":{"uid":"u","resourceVersion":"1"},"data":null}',
        '[["a"]]',
        "9" * 4301,
        "[" * 200,
        '{"metadata":{"uid":"u","resourceVersion":"1"},"data":{"a":"' + "9" * 4301 + '"}}',
    ]
)
"""JSON texts: valid, truncated, non-finite, too long, too deep, wrongly typed."""


YAML_FRAGMENTS: t.Final = (
    "a: &a [x, y]\nb: *a\n",
    "a: &a [" + ",".join(["item"] * 3000) + "]\nb: [" + ",".join(["*a"] * 63) + "]\n",
    "a: &a ['lol','lol','lol','lol','lol','lol','lol','lol','lol']\n"
    + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8)),
    "a: &a {" + ", ".join(f"k{i}: {i}" for i in range(504)) + "}\nb:\n  <<: [" + ", ".join(["*a"] * 63) + "]\n",
    "base: &b {x: 1}\nc:\n  <<: *b\n  y: 2\n",
    "a: &a [1, *a]\n",
    "a: *nowhere\n",
    "a: !!binary aGVsbG8=\n",
    "a: !!python/object:os.system ls\n",
    "a: !custom x\n",
    "a: !withheld 'not shown'\n",
    "a: !!set {x, y}\n",
    "a: !!omap [{x: 1}]\n",
    "a: !!float .inf\nb: .nan\n",
    "a: 0x" + "f" * 20_000 + "\n",
    "a: 0b" + "1" * 30_000 + "\n",
    "a: -" + "9" * 5000 + "\n",
    "a: 1" + ":30" * 3000 + "\n",
    "a: " + "x" * 1_100_000 + "\n",
    "a: " + "[" * 200 + "]" * 200 + "\n",
    "a:\n" + "".join("  " * i + "- \n" for i in range(100)),
    "a: 1\na: 2\n",
    "data:\n  x: 1\ndata:\n  y: 2\n",
    "data:\n  x: [a, b]\n",
    "data:\n  x: {y: z}\n",
    "data: [1, 2]\n",
    "metadata:\n  labels:\n    a: [b]\n",
    "metadata:\n  annotations:\n    big: " + "x" * 300_000 + "\n",
    "spec:\n  replicas: " + "9" * 4301 + "\n",
    "spec: null\n",
    "metadata:\n  name: other\n",
    "? [complex, key]\n: value\n",
    "1: one\n",
    "--- a\n--- b\n",
    "- just\n- a list\n",
    "",
    "\t: tab\n",
    "a: \x07\n",
    "a: '\ud800'\n",
    "a: \u2028b\n",
)
"""YAML fragments that have broken loaders: amplification through aliases and merge keys, tags that
build objects, numbers past Python's digit limit in every base, huge scalars, deep nesting, keys
written twice, values of the wrong type for their place, several documents, unreadable characters."""

NON_UTF8: t.Final = (b"a: \xff\xfe\n", b"\xc3\x28: x\n", b"data:\n  k: \xed\xa0\x80\n")


def yaml_texts(source: str) -> st.SearchStrategy[bytes]:
    """A YAML text as the tab would send it: the editor's own text with a fragment added, put in
    the middle or replacing it, or a fragment alone (as UTF-8 bytes; sometimes not UTF-8 at all)."""
    fragment = st.sampled_from(YAML_FRAGMENTS)
    indented = fragment.map(lambda text: "".join("  " + line + "\n" for line in text.splitlines()))
    texts = st.one_of(
        st.just(source),
        fragment,
        fragment.map(lambda text: source + text),
        indented.map(lambda text: source.replace("data:\n", "data:\n" + text, 1)),
        st.tuples(fragment, fragment).map(lambda pair: source + pair[0] + pair[1]),
        TEXT.map(lambda text: source.replace(": ", ": " + text, 1)),
    )
    return st.one_of(texts.map(lambda text: text.encode("utf-8", "surrogatepass")), st.sampled_from(NON_UTF8))


def yaml_body(token: str, source: str) -> st.SearchStrategy[bytes]:
    """A YAML edit's form: ``before`` and ``yaml``, either of them fuzzed, with the CSRF token."""
    text = yaml_texts(source)
    return st.builds(
        lambda before, after: (
            f"{CSRF_FIELD}={token}&".encode()
            + b"before="
            + quote_from_bytes(before).encode()
            + b"&yaml="
            + quote_from_bytes(after).encode()
        ),
        st.one_of(st.just(source.encode()), st.just(source.encode()), text),
        text,
    )


def latin1(data: bytes) -> str:
    """Bytes as a WSGI environ carries them (PEP 3333)."""
    return data.decode("latin-1")


@dataclass
class Session:
    """A browser of one application, and the live values its requests may name."""

    name: str
    browser: Browser
    urls: list[str] = field(default_factory=list)
    pages: list[Page] = field(default_factory=list)
    cookie: str = ""

    def __post_init__(self) -> None:
        self.reopen()

    def reopen(self) -> None:
        """Open the session's pages (again): the fuzzed requests of earlier routes may have opened so
        many pages of the session that these expired."""
        self.pages = [self.browser.open(url) for url in self.urls]
        self.cookie = cookie_header(self.browser)

    @property
    def app(self) -> Flask:
        return self.browser.app

    @property
    def page_ids(self) -> list[str]:
        return [page.page_id for page in self.pages]

    @property
    def component_ids(self) -> list[str]:
        return [component for page in self.pages for component in page.components]

    def coherent_value(self, argument: str, component_id: str) -> str:
        """What a page of this session would put in the path argument ``argument`` for ``component_id``."""
        page = next(page for page in self.pages if component_id in page.components)
        return {"component_id": component_id, "page_id": page.page_id, "name": "save"}.get(argument, "app-config")

    def headers_for(self, component_id: str) -> dict[str, str]:
        for page in self.pages:
            if component_id in page.components:
                return page.headers(component_id)
        return {}


@dataclass
class Target:
    """One application under fuzzing, its sessions and the values worth naming in paths."""

    app: Flask
    sessions: list[Session]
    path_values: list[str]
    counts: Counter[str] = field(default_factory=Counter)
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)


@dataclass(frozen=True)
class Fuzzed:
    """One random request."""

    session: Session
    method: str
    path: bytes
    query: bytes
    headers: dict[str, str]
    content_type: str
    body: bytes


def path_values(session: Session, values: list[str]) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.sampled_from(session.page_ids + session.component_ids + values).map(str.encode),
        TEXT.map(lambda text: quote(text, safe="").encode()),
        RAW_BYTES.map(lambda data: data.replace(b"/", b"")),
    )


SCOPE: t.Final = Scope(target=TARGET, version="v1", resource="configmaps", namespace=NAMESPACE).canonical_query()


def pairs(names: t.Sequence[str], values: st.SearchStrategy[str], max_size: int) -> st.SearchStrategy[bytes]:
    """``name=value&...``, percent-encoded, or with raw bytes where a value would be."""
    encoded = values.map(lambda text: quote(text, safe="").encode())
    pair = st.tuples(st.sampled_from(names), st.one_of(encoded, encoded, encoded, REQUEST_LINE_BYTES))
    return st.lists(pair, max_size=max_size).map(lambda items: b"&".join(k.encode() + b"=" + v for k, v in items))


QUERY: t.Final = st.one_of(
    st.just(SCOPE.encode()),
    pairs(PARAMETERS, TEXT, 4),
    pairs(PARAMETERS, TEXT, 2).map(lambda extra: SCOPE.encode() + b"&" + extra),
    REQUEST_LINE_BYTES,
)
"""A query string: scope and credential parameter names, telling values, raw bytes."""

PATHS: t.Final = (
    '["data","greeting"]',
    '["data"]',
    '["metadata","labels"]',
    '["spec","replicas"]',
    "[]",
    '["data",0]',
    "[" * 80,
    '["spec","template","spec","containers",{"name":"web"},"image"]',
    '["spec","template","spec","containers",{"name":"web"},"ports"]',
    '["spec","template","spec","containers",{"name":"gone"}]',
    '["spec","template","spec","containers",{"name":["web"]}]',
    '["spec","template","spec","containers",{"image":"x"}]',
    '["spec","template","spec","containers",0]',
    '["spec",{"name":"web"}]',
)
FIELD_VALUES: t.Final = st.one_of(st.sampled_from(OPS + PATHS), TEXT, JSON_TEXT)


EXAMPLE_SOURCE: t.Final = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  greeting: hello\n"
"""A ConfigMap's YAML as an editor's tab shows it (the targeted test uses each editor's own)."""


def bodies(token: str) -> st.SearchStrategy[tuple[str, bytes]]:
    """A form (with or without the session's CSRF token), JSON, or raw bytes of any content type."""
    form = pairs(FORM_FIELDS, FIELD_VALUES, 4)
    edit = st.builds(
        lambda op, path, value, key: urlencode(
            {"op": op, "path": path, "value": value, "key": key, "new_key": value}
        ).encode(),
        st.sampled_from(OPS),
        st.sampled_from(PATHS),
        TEXT,
        TEXT,
    )
    signed = st.one_of(form, edit, st.builds(lambda body: urlencode({"body": body}).encode(), JSON_TEXT))
    return st.one_of(
        st.tuples(st.just("application/x-www-form-urlencoded"), yaml_body(token, EXAMPLE_SOURCE)),
        st.tuples(
            st.just("application/x-www-form-urlencoded"),
            signed.map(lambda data: f"{CSRF_FIELD}={token}&".encode() + data),
        ),
        st.tuples(
            st.just("application/x-www-form-urlencoded"),
            signed.map(lambda data: f"{CSRF_FIELD}={token}&".encode() + data),
        ),
        st.tuples(st.just("application/x-www-form-urlencoded"), form),
        st.tuples(st.sampled_from(["application/json", "application/merge-patch+json"]), JSON_TEXT.map(str.encode)),
        st.tuples(st.sampled_from(CONTENT_TYPES), RAW_BYTES),
    )


EXTRA_HEADERS: t.Final = st.one_of(
    st.just({}),
    st.tuples(
        st.sampled_from(
            [PAGE_HEADER, CSRF_HEADER, "HX-Request", "Accept", "Last-Event-ID", "Origin", "Content-Length"]
        ),
        st.one_of(TEXT.map(lambda text: latin1(text.encode())), RAW_BYTES.map(latin1)),
    ).map(lambda item: {item[0]: item[1].replace("\r", "").replace("\n", "").replace("\x00", "")}),
)
"""Headers a browser would not send; values as a server receives them (no line breaks, no NUL)."""


def requests(session: Session, rule: Rule, values: list[str]) -> st.SearchStrategy[Fuzzed]:
    """Random requests to ``rule`` from ``session`` (built once per route and session).

    Half of them name one of the session's live components coherently (its id in the path, its
    page and CSRF headers), so the random query and body reach the code that reads them."""
    own = sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}) or ["GET"]
    argument = path_values(session, values)
    scattered = st.tuples(
        st.tuples(*[argument for _ in rule.arguments]),
        st.sampled_from([{}] + [session.headers_for(c) for c in session.component_ids]),
    )
    coherent = [
        (
            tuple(session.coherent_value(name, component).encode() for name in rule.arguments),
            session.headers_for(component),
        )
        for component in session.component_ids
    ]
    targets = st.one_of(scattered, st.sampled_from(coherent)) if coherent else scattered
    return st.builds(
        lambda method, where, query, extra, content: Fuzzed(
            session,
            method,
            rule_path(rule, dict(zip(rule.arguments, where[0]))),
            query,
            {**where[1], **extra},
            *(("", b"") if method in ("GET", "HEAD") else content),
        ),
        st.sampled_from(own * 8 + list(METHODS)),
        targets,
        QUERY,
        EXTRA_HEADERS,
        bodies(session.browser.csrf_token() or ""),
    )


# ------------------------------------------------------------------------------ the checks --


class Tracebacks(logging.Handler):
    """Every logged record that carries a traceback or reports an exception."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.found: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.exc_info or "Traceback" in message or "Exception on" in message:
            self.found.append(f"{record.name}: {message[:300]}")


@pytest.fixture(scope="module")
def tracebacks() -> Iterator[tuple[Tracebacks, io.StringIO]]:
    """Logged tracebacks, and what gevent prints for a greenlet that died of an exception."""
    handler = Tracebacks()
    loggers = [logging.getLogger()] + [
        logger
        for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger) and not logger.propagate
    ]
    for logger in loggers:
        logger.addHandler(handler)
    hub = gevent.get_hub()
    printed, hub.exception_stream = hub.exception_stream, io.StringIO()
    try:
        yield handler, hub.exception_stream
    finally:
        hub.exception_stream = printed
        for logger in loggers:
            logger.removeHandler(handler)


def cookie_header(browser: Browser) -> str:
    """The browser's cookies as it sends them (fixed for the run: the fuzzing never signs out)."""
    environ: dict[str, t.Any] = {
        "wsgi.url_scheme": "http",
        "HTTP_HOST": "localhost",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "PATH_INFO": "/",
    }
    browser.client._add_cookies_to_wsgi(environ)
    return str(environ.get("HTTP_COOKIE", ""))


def send(request: Fuzzed) -> int:
    """Call the application as a WSGI server would (a test client costs more than the request);
    returns the status. An event stream is read for :data:`STREAM_READ` seconds, then closed."""
    environ: dict[str, t.Any] = {
        "REQUEST_METHOD": request.method,
        "SCRIPT_NAME": "",
        "PATH_INFO": latin1(request.path),
        "QUERY_STRING": latin1(request.query),
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(request.body),
        "wsgi.errors": io.StringIO(),
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
        "CONTENT_LENGTH": str(len(request.body)),
        "HTTP_HOST": "localhost",
        "HTTP_COOKIE": request.session.cookie,
    }
    if request.content_type:
        environ["CONTENT_TYPE"] = request.content_type
    for name, value in request.headers.items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    started: list[str] = []
    body = request.session.app(environ, lambda status, headers, exc_info=None: started.append(status))
    try:
        with gevent.Timeout(STREAM_READ, False):
            for _ in body:
                pass
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()
    return int(started[0].split()[0])


def rule_path(rule: Rule, values: dict[str, bytes]) -> bytes:
    """The rule's path with each argument replaced by its raw bytes (slashes of ``path:`` kept)."""
    out = rule.rule.encode()
    for argument, converter in rule._converters.items():
        out = out.replace(b"<" + _spelling(rule, argument).encode() + b">", values[argument])
    return out


def _spelling(rule: Rule, argument: str) -> str:
    start = rule.rule.index(f"{argument}>")
    return rule.rule[rule.rule.rindex("<", 0, start) + 1 : start + len(argument)]


PROBE_ENDPOINTS: t.Final = frozenset({"krm_liveness", "krm_readiness"})
"""The probes, whose 503 is their answer (not ready yet, draining, a stuck event loop)."""


def fuzz_rule(target: Target, rule: Rule, tracebacks: tuple[Tracebacks, io.StringIO]) -> None:
    handler, printed = tracebacks
    for session in target.sessions:
        session.reopen()
    strategy = st.one_of([requests(session, rule, target.path_values) for session in target.sessions])

    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(request: Fuzzed) -> None:
        target.counts[rule.endpoint] += 1
        before_logged, before_printed = len(handler.found), printed.tell()
        status = send(request)
        target.statuses[rule.endpoint, status] += 1
        where = f"{request.session.name}: {request.method} {request.path!r}?{request.query!r}"
        probe_answer = rule.endpoint in PROBE_ENDPOINTS and status == 503  # "not ready", not a failure
        assert status < 500 or probe_answer, f"{where}: HTTP {status}"
        assert len(handler.found) == before_logged, (where, handler.found[before_logged:])
        assert printed.tell() == before_printed, (where, printed.getvalue()[before_printed:][:3000])

    run()


# ------------------------------------------------------------------------------- the targets --


def host_target(kube: KubeSimulator) -> Target:
    app = make_host(
        kube, Recorder(deny=lambda call: call.principal == "viewer" and call.verb not in ("get", "list", "watch"))
    )
    scope = Scope(target=TARGET, version="v1", resource="configmaps", namespace=NAMESPACE).canonical_query()
    deployments = Scope(
        target=TARGET, group="apps", version="v1", resource="deployments", namespace=NAMESPACE
    ).canonical_query()
    sessions = [Session("anonymous", Browser(app))]
    for user in ("editor", "viewer"):
        urls = [
            f"/both?scope={quote(scope, safe='')}&name=app-config",
            f"/list?scope={quote(scope, safe='')}&delete=1",
            f"/edit?scope={quote(deployments, safe='')}&name=web",
        ]
        sessions.append(Session(user, Browser(app, user), urls))
    values = [
        "save",
        "krm/krm.js",
        "krm/htmx-4.0.1.js",
        "../../../etc/passwd",
        NAMESPACE,
        "app-config",
        f"api/v1/namespaces/{NAMESPACE}/configmaps",
        f"api/v1/namespaces/{NAMESPACE}/configmaps/app-config",
        f"api/v1/namespaces/{NAMESPACE}/secrets",
    ]
    return Target(app, sessions, values)


def example_target(kube: KubeSimulator) -> Target:
    app = make_example(kube)
    sessions = [Session("anonymous", Browser(app))]
    for user in ("editor", "viewer"):
        urls = [
            f"/namespaces/{NAMESPACE}/configmaps/app-config",
            f"/namespaces/{NAMESPACE}",
            f"/namespaces/{NAMESPACE}/deployments/web",
        ]
        sessions.append(Session(user, Browser(app, user), urls))
    values = ["save", "krm/krm.js", "example.css", NAMESPACE, "demo-staging", "app-config", "web", "kube-system"]
    return Target(app, sessions, values)


@pytest.fixture(scope="module", params=["example", "host"])
def target(request: pytest.FixtureRequest, kube: KubeSimulator) -> Iterator[Target]:
    made = example_target(kube) if request.param == "example" else host_target(kube)
    yield made
    for session in made.sessions:
        session.browser.close()
    shut_down(made.app)


def test_every_route_answers_random_requests_without_a_server_error(
    target: Target, tracebacks: tuple[Tracebacks, io.StringIO]
) -> None:
    rules = sorted(target.app.url_map.iter_rules(), key=lambda url_rule: url_rule.rule)
    assert any(url_rule.endpoint == "krm.ui_edit" for url_rule in rules)
    for url_rule in rules:
        fuzz_rule(target, url_rule, tracebacks)
    assert {url_rule.endpoint for url_rule in rules} <= set(target.counts)
    assert min(target.counts.values()) >= EXAMPLES, target.counts
    reached = {endpoint for (endpoint, status), _ in target.statuses.items() if status < 300}
    assert {"krm.resource_stream", "krm.ui_channel", "krm_review.show"} <= reached, sorted(target.statuses.items())


def editor_sources(target: Target) -> list[tuple[Session, str, str, list[str]]]:
    """Every live editor of the signed-in sessions, with the YAML its tab starts from and the paths
    its fields name."""
    found = []
    for session in target.sessions:
        session.reopen()
        for page in session.pages:
            for component_id, info in page.components.items():
                match = re.search(rf'id="{component_id}-yaml-source" hidden>(.*?)</pre>', page.html, re.S)
                if info["kind"] == "editor" and match:
                    paths = sorted({json.loads(vals)["path"] for vals in re.findall(r"hx-vals='([^']*)'", page.html)})
                    found.append((session, component_id, html.unescape(match.group(1)), paths))
    return found


def field_edits(token: str, paths: list[str]) -> st.SearchStrategy[bytes]:
    """Field edits as an editor's fields send them: an operation, one of the editor's own paths (or
    a telling one), values that have broken parsers, and the CSRF token."""
    return st.builds(
        lambda op, path, value, started, key: (
            f"{CSRF_FIELD}={token}&".encode()
            + urlencode(
                {"op": op, "path": path, "value": value, "from": started, "key": key, "new_key": value}
            ).encode()
        ),
        st.sampled_from(OPS),
        st.sampled_from(paths + list(PATHS)) if paths else st.sampled_from(PATHS),
        st.one_of(TEXT, JSON_TEXT, HUGE_NUMBER),
        st.one_of(TEXT, st.just("")),
        TEXT,
    )


def test_yaml_and_field_edits_answer_random_bodies_without_a_server_error(
    target: Target, tracebacks: tuple[Tracebacks, io.StringIO]
) -> None:
    handler, printed = tracebacks
    rules = {url_rule.endpoint: url_rule for url_rule in target.app.url_map.iter_rules()}
    editors = editor_sources(target)
    assert editors, "no editor to send edits to"

    def edit_request(session: Session, component_id: str, source: str, paths: list[str]) -> st.SearchStrategy[Fuzzed]:
        token = session.browser.csrf_token() or ""
        yaml_path = rule_path(rules["krm.ui_yaml"], {"component_id": component_id.encode()})
        edit_path = rule_path(rules["krm.ui_edit"], {"component_id": component_id.encode()})
        form = "application/x-www-form-urlencoded"
        headers = session.headers_for(component_id)
        return st.one_of(
            yaml_body(token, source).map(lambda body: Fuzzed(session, "POST", yaml_path, b"", headers, form, body)),
            field_edits(token, paths).map(lambda body: Fuzzed(session, "POST", edit_path, b"", headers, form, body)),
        )

    strategy = st.one_of([edit_request(*editor) for editor in editors])
    statuses: Counter[tuple[bytes, int]] = Counter()

    @settings(max_examples=EDIT_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(request: Fuzzed) -> None:
        before_logged, before_printed = len(handler.found), printed.tell()
        status = send(request)
        statuses[request.path.rsplit(b"/", 1)[-1], status] += 1
        assert status < 500, f"{request.session.name}: POST {request.path!r}: HTTP {status}"
        assert len(handler.found) == before_logged, handler.found[before_logged:]
        assert printed.tell() == before_printed, printed.getvalue()[before_printed:][:3000]

    run()
    print("answers (route, status): count", sorted(statuses.items()))  # shown with -rP
    answered = {(route, status // 100) for route, status in statuses}
    assert {(b"yaml", 2), (b"yaml", 4), (b"edit", 2), (b"edit", 4)} <= answered, sorted(statuses.items())
    assert sum(statuses.values()) >= EDIT_EXAMPLES


# ------------------------------------------------------------------------- the stateful run --


def pick(data: st.DataObject, items: t.Sequence[t.Any]) -> t.Any:
    """One of ``items``, drawn the same way however many there are: what a page shows (its rows,
    whether it opened) depends on live timing, and hypothesis must draw identically when it replays
    a case."""
    return items[data.draw(st.integers(min_value=0, max_value=63)) % len(items)]


class SessionMachine(RuleBasedStateMachine):
    """One person's session on the minimal host, driven through sequences of UI requests with
    fuzzed fields: pages opened and reopened, edits, saves, staged creates and deletes, discards,
    reviews, channel reads, signing out and in. After every step: no 5xx, no traceback."""

    app: t.ClassVar[Flask]
    tracebacks: t.ClassVar[tuple[Tracebacks, io.StringIO]]

    def __init__(self) -> None:
        super().__init__()
        self.browser = Browser(self.app, "editor")
        self.pages: list[Page] = []
        self.logged = len(self.tracebacks[0].found)
        self.printed = self.tracebacks[1].tell()

    def teardown(self) -> None:
        self.browser.close()

    def check(self, status: int, what: str) -> None:
        assert status < 500, f"{what}: HTTP {status}"

    @invariant()
    def nothing_was_logged(self) -> None:
        handler, printed = self.tracebacks
        assert len(handler.found) == self.logged, handler.found[self.logged :]
        assert printed.tell() == self.printed, printed.getvalue()[self.printed :][:3000]

    @initialize()
    def open_the_editor(self) -> None:
        self.open_page("both", "app-config")

    @rule(kind=st.sampled_from(["edit", "list", "both"]), name=st.sampled_from(["app-config", "missing", "web"]))
    def open_page(self, kind: str, name: str) -> None:
        scope = (
            SCOPE
            if name != "web"
            else Scope(
                target=TARGET, group="apps", version="v1", resource="deployments", namespace=NAMESPACE
            ).canonical_query()
        )
        response = self.browser.client.get(f"/{kind}?scope={quote(scope, safe='')}&name={name}&delete=1")
        self.check(response.status_code, f"open /{kind} {name}")
        if response.status_code == 200:
            page = self.browser.open(f"/{kind}?scope={quote(scope, safe='')}&name={name}&delete=1")
            if page.components:
                self.pages.append(page)

    @precondition(lambda self: bool(self.pages))
    @rule(data=st.data(), op=st.sampled_from(OPS), path=st.sampled_from(PATHS), value=TEXT, key=TEXT)
    def edit(self, data: st.DataObject, op: str, path: str, value: str, key: str) -> None:
        page = pick(data, self.pages)
        component = pick(data, sorted(page.components))
        form = {"op": op, "path": path, "value": value, "key": key, "new_key": value, "from": key, "to": key}
        response = self.browser.post(f"/krm/ui/components/{component}/edit", form, page.headers(component))
        self.check(response.status_code, f"edit {form!r}")

    @precondition(lambda self: bool(self.pages))
    @rule(data=st.data(), confirm=st.booleans())
    def save(self, data: st.DataObject, confirm: bool) -> None:
        page = pick(data, self.pages)
        component = pick(data, sorted(page.components))
        form = {"krm_confirm": "1"} if confirm else {}
        response = self.browser.post(f"/krm/ui/components/{component}/actions/save", form, page.headers(component))
        self.check(response.status_code, "save")

    @precondition(lambda self: bool(self.pages))
    @rule(data=st.data(), action=st.sampled_from(["create", "delete", "discard", "save"]), body=JSON_TEXT, key=TEXT)
    def review(self, data: st.DataObject, action: str, body: str, key: str) -> None:
        page = pick(data, self.pages)
        component = pick(data, sorted(page.components))
        uids = [uid for uid in page.html.split('data-krm-uid="')[1:]]
        uid = pick(data, [u.split('"')[0] for u in uids] or [key])
        form = {"body": body, "uid": uid, "key": pick(data, [key, uid])}
        response = self.browser.post(f"/krm/review/{component}/{action}", form, page.headers(component))
        self.check(response.status_code, f"review {action} {form!r}")

    @precondition(lambda self: any(page.channel_url is not None for page in self.pages))
    @rule(data=st.data())
    def read_channel(self, data: st.DataObject) -> None:
        page = pick(data, [page for page in self.pages if page.channel_url is not None])  # signed out: none
        stream = page.channel()
        stream.drain(STREAM_READ)
        stream.close()
        self.check(stream.status_code, "the page channel")

    @rule(user=st.sampled_from(["editor", "viewer", None]))
    def switch_user(self, user: str | None) -> None:
        if user is None:
            self.browser.sign_out()
        else:
            self.browser.sign_in(user)


def test_sequences_of_ui_requests_never_answer_a_server_error(
    kube: KubeSimulator, tracebacks: tuple[Tracebacks, io.StringIO]
) -> None:
    app = make_host(
        kube, Recorder(deny=lambda call: call.principal == "viewer" and call.verb not in ("get", "list", "watch"))
    )
    SessionMachine.app, SessionMachine.tracebacks = app, tracebacks
    try:
        run_state_machine_as_test(
            SessionMachine,
            settings=settings(
                max_examples=STATEFUL_EXAMPLES,
                stateful_step_count=12,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            ),
        )
    finally:
        shut_down(app)
