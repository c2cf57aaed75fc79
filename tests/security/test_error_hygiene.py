"""Error hygiene: malformed input on every route gets a precise refusal, never a 500 or a traceback.

Both hosts run with ``TESTING`` and ``PROPAGATE_EXCEPTIONS`` off, so an exception escaping a view
shows as the 500 a browser would get (and Flask's ``Exception on ...`` log line). Streams answer
refusals as the protocol requires (HTTP 200, one terminal event; a page channel's close event);
every other route answers the 4xx that says what was wrong.
"""

from __future__ import annotations

import json
import re
import typing as t
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import pytest
from flask import Flask
from werkzeug.test import TestResponse

from flask_krm import Scope
from flask_krm.csrf import HEADER
from flask_krm.htmx import PAGE_HEADER
from flask_krm.testing.simulator import KubeSimulator

from .conftest import CapturedLogs
from .hosts import (
    STREAM_URL,
    TARGET,
    Browser,
    Page,
    Recorder,
    csrf_headers,
    event_types,
    make_example,
    make_host,
    read,
    shut_down,
    terminal_code,
)

NAMESPACE: t.Final = "demo"
DEEP_JSON: t.Final = "[" * 100_000
"""Nested deeper than any parser's recursion allows."""


@dataclass(frozen=True)
class Case:
    what: str
    send: Callable[[Browser], TestResponse]
    status: int


@dataclass
class Context:
    """A signed-in browser with the host's pages open."""

    browser: Browser
    page: Page
    editor: str
    listed: str
    deployment_page: Page
    deployment: str
    deployments: str

    def headers(self, component: str | None = None, **changes: str | None) -> dict[str, str]:
        page = self.deployment_page if component in (self.deployment, self.deployments) else self.page
        headers = page.headers(component or self.editor)
        for key, value in changes.items():
            name = {"page": PAGE_HEADER, "csrf": HEADER}[key]
            if value is None:
                headers.pop(name, None)
            else:
                headers[name] = value
        return headers


def scope_url(path: str, resource: str, name: str = "", group: str = "", **params: str) -> str:
    scope = Scope(target=TARGET, group=group, version="v1", resource=resource, namespace=NAMESPACE)
    extra = "".join(f"&{k}={quote(v, safe='')}" for k, v in params.items())
    return f"{path}?scope={quote(scope.canonical_query(), safe='')}" + (f"&name={name}" if name else "") + extra


@pytest.fixture(scope="module")
def host(kube: KubeSimulator) -> Iterator[Flask]:
    app = make_host(kube, Recorder())
    yield app
    shut_down(app)


@pytest.fixture(scope="module")
def context(host: Flask) -> Context:
    browser = Browser(host, "editor")
    page = browser.open(scope_url("/both", "configmaps", "app-config", column="/metadata/uid"))
    deployments = browser.open(scope_url("/both", "deployments", "web", group="apps"))
    return Context(
        browser,
        page,
        page.component("editor"),
        page.component("list"),
        deployments,
        deployments.component("editor"),
        deployments.component("list"),
    )


@pytest.fixture
def server_errors(debug_logs: CapturedLogs) -> Iterator[CapturedLogs]:
    """Fails the test if any view raised (Flask logs ``Exception on <path>``)."""
    yield debug_logs
    raised = [line for line in debug_logs.lines if "Exception on" in line]
    assert not raised, raised[0][:2000]


def check(cases: list[Case], browser: Browser) -> None:
    for case in cases:
        response = case.send(browser)
        body = response.get_data(as_text=True)
        assert response.status_code == case.status, (
            f"{case.what}: HTTP {response.status_code}, wanted {case.status}: {body[:300]}"
        )
        assert "Traceback" not in body and 'File "' not in body, f"{case.what}: a traceback in the body"


def post(
    path: str, data: dict[str, str] | None = None, headers: Callable[[], dict[str, str]] | None = None, **kwargs: t.Any
) -> Callable[[Browser], TestResponse]:
    if "json" not in kwargs:
        kwargs["data"] = data or {}
    return lambda browser: browser.client.post(path, headers=headers() if headers else {}, **kwargs)


# ----------------------------------------------------------------------------------- streams --


STREAM_QUERIES: t.Final = {
    "no resource": "version=v1",
    "a Kind for a resource": "version=v1&resource=ConfigMap",
    "a namespace that is not UTF-8": "version=v1&resource=configmaps&namespace=%ff%fe",
    "a name too long": "version=v1&resource=configmaps&namespace=demo&name=" + "a" * 300,
    "an unclosed selector": "version=v1&resource=configmaps&namespace=demo&labelSelector=a%20in%20(",
    "an unknown projection": f"target={TARGET}&version=v1&resource=configmaps&namespace=demo&projection=krm-all/v9",
    "an unknown target": "target=nowhere&version=v1&resource=configmaps&namespace=demo",
    "a huge namespace": "version=v1&resource=configmaps&namespace=" + "n" * 20_000,
    "a NUL byte": "version=v1&resource=configmaps&namespace=de%00mo",
}


@pytest.mark.parametrize("query", list(STREAM_QUERIES.values()), ids=list(STREAM_QUERIES))
def test_a_malformed_stream_request_is_one_terminal_scope_error(
    query: str, context: Context, server_errors: CapturedLogs
) -> None:
    stream = context.browser.stream(f"{STREAM_URL}?{query}").until_end()
    assert stream.status_code == 200
    assert event_types(stream) == ["error"] and terminal_code(stream) == "SCOPE_INVALID", stream.text


def test_an_anonymous_stream_or_channel_is_refused_cleanly(
    host: Flask, context: Context, server_errors: CapturedLogs
) -> None:
    anonymous = Browser(host)
    stream = anonymous.stream(f"{STREAM_URL}?{STREAM_QUERIES['no resource']}").until_end()
    assert terminal_code(stream) == "UNAUTHENTICATED"
    channel = anonymous.stream(context.page.channel_url or "").until_end()
    assert channel.status_code == 200 and "krm-close" in channel.text


@pytest.mark.parametrize("page_id", ["nope", "x" * 65, "%00", "%ff", "..%2f..", "a" * 5000])
def test_an_unknown_page_channel_closes_with_a_reason(
    page_id: str, context: Context, server_errors: CapturedLogs
) -> None:
    channel = context.browser.stream(f"/krm/ui/pages/{page_id}/channel").until_end()
    assert channel.status_code in (200, 404)
    if channel.status_code == 200:
        assert "event: krm-close" in channel.text


# ------------------------------------------------------------------------------------- edits --


def edit_cases(c: Context) -> list[Case]:
    edit = f"/krm/ui/components/{c.editor}/edit"
    replicas = f"/krm/ui/components/{c.deployment}/edit"

    def form(**fields: str) -> dict[str, str]:
        return fields

    def h() -> dict[str, str]:
        return c.headers()

    return [
        Case("no page header", post(edit, form(op="revert", path="[]"), lambda: c.headers(page=None)), 404),
        Case("an unknown page", post(edit, form(op="revert", path="[]"), lambda: c.headers(page="nope")), 404),
        Case(
            "an unknown component",
            post("/krm/ui/components/krm-000000000000/edit", form(op="revert", path="[]"), h),
            404,
        ),
        Case(
            "a component id that is markup",
            post("/krm/ui/components/%3Cb%3E/edit", form(op="revert", path="[]"), h),
            404,
        ),
        Case("a list has no fields", post(f"/krm/ui/components/{c.listed}/edit", form(op="revert", path="[]"), h), 400),
        Case("no operation", post(edit, form(path='["data"]'), h), 400),
        Case("an unknown operation", post(edit, form(op="drop", path='["data"]'), h), 400),
        Case("no path", post(edit, form(op="set", value="x"), h), 400),
        Case("a path that is not JSON", post(edit, form(op="set", path="data.greeting", value="x"), h), 400),
        Case("a path that is an object", post(edit, form(op="set", path='{"data": 1}', value="x"), h), 400),
        Case("a path with a float", post(edit, form(op="set", path="[1.5]", value="x"), h), 400),
        Case("a path with NaN", post(edit, form(op="set", path="[NaN]", value="x"), h), 400),
        Case("a path with null", post(edit, form(op="set", path="[null]", value="x"), h), 400),
        Case("no value", post(edit, form(op="set", path='["data", "greeting"]'), h), 400),
        Case("a map set as one value", post(edit, form(op="set", path='["data"]', value="x"), h), 400),
        Case("a read-only path", post(edit, form(op="set", path='["metadata", "uid"]', value="x"), h), 403),
        Case("an empty key", post(edit, form(op="add_key", path='["data"]', key="", value="x"), h), 422),
        Case("a key that exists", post(edit, form(op="add_key", path='["data"]', key="greeting", value="x"), h), 422),
        Case(
            "a key under a text",
            post(edit, form(op="add_key", path='["data", "greeting"]', key="k", value="x"), h),
            409,
        ),
        Case(
            "renaming a missing key",
            post(edit, form(op="rename_key", path='["data"]', key="nope", new_key="x"), h),
            409,
        ),
        Case(
            "renaming to nothing",
            post(edit, form(op="rename_key", path='["data"]', key="greeting", new_key=""), h),
            422,
        ),
        Case(
            "text for a number",
            post(replicas, form(op="set", path='["spec", "replicas"]', value="three"), lambda: c.headers(c.deployment)),
            422,
        ),
        Case(
            "an infinite number",
            post(replicas, form(op="set", path='["spec", "replicas"]', value="1e999"), lambda: c.headers(c.deployment)),
            422,
        ),
        Case(
            "a number past the digit limit",
            post(
                replicas, form(op="set", path='["spec", "replicas"]', value="9" * 4301), lambda: c.headers(c.deployment)
            ),
            422,
        ),
        Case(
            "a negative number past the digit limit",
            post(
                replicas,
                form(op="set", path='["spec", "replicas"]', value="-" + "1" * 9000),
                lambda: c.headers(c.deployment),
            ),
            422,
        ),
        Case(
            "a JSON number past the digit limit",
            post(edit, form(op="set", path='["data"]', value="[" + "9" * 4301 + "]"), h),
            400,
        ),
        Case("JSON instead of a form", post(edit, headers=h, json={"op": "set"}), 400),
        Case("a GET", lambda b: b.client.get(edit, headers=c.headers()), 405),
    ]


def test_malformed_edits_are_refused_precisely(context: Context, server_errors: CapturedLogs) -> None:
    check(edit_cases(context), context.browser)


def test_a_number_past_the_digit_limit_names_the_limit(context: Context, server_errors: CapturedLogs) -> None:
    response = context.browser.post(
        f"/krm/ui/components/{context.deployment}/edit",
        {"op": "set", "path": '["spec", "replicas"]', "value": "9" * 5000},
        context.headers(context.deployment),
    )
    assert response.status_code == 422
    assert "Enter a number of at most 4300 digits." in response.get_data(as_text=True)


# -------------------------------------------------------------------------------- raw bytes --


def raw_request(
    browser: Browser, path: str, *, query: bytes = b"", method: str = "GET", **kwargs: t.Any
) -> TestResponse:
    """A request whose query string holds raw bytes, as a WSGI server hands them over (PEP 3333)."""
    return browser.client.open(
        path, method=method, environ_overrides={"QUERY_STRING": query.decode("latin-1")}, **kwargs
    )


def test_raw_bytes_in_a_query_string_are_refused_on_every_route(context: Context, server_errors: CapturedLogs) -> None:
    c = context
    for who in (Browser(c.browser.app), c.browser):
        answers = {
            "static": raw_request(who, "/krm/static/krm/krm.js", query=b"x=\xff"),
            "edit": raw_request(
                who, f"/krm/ui/components/{c.editor}/edit", query=b"x=\xff", method="POST", headers=c.headers()
            ),
            "action": raw_request(
                who, f"/krm/ui/components/{c.editor}/actions/save", query=b"\xc3", method="POST", headers=c.headers()
            ),
            "review": raw_request(who, f"/krm/review/{c.listed}", query=b"a=\x80", headers=c.headers(c.listed)),
            "native": raw_request(who, f"/k8s/api/v1/namespaces/{NAMESPACE}/configmaps", query=b"watch=\xfe"),
        }
        for what, response in answers.items():
            assert response.status_code == 400, (what, response.status_code)
            assert "The query string is not UTF-8 text." in response.get_data(as_text=True), what
        assert answers["native"].json is not None and answers["native"].json["reason"] == "BadRequest"
        stream = raw_request(who, STREAM_URL, query=b"version=v1&resource=configmaps&namespace=\xff")
        assert stream.status_code == 200 and stream.mimetype == "text/event-stream"
        assert '"code":"SCOPE_INVALID"' in stream.get_data(as_text=True).replace(" ", "")
        channel = raw_request(who, c.page.channel_url or "", query=b"\xff")
        assert channel.status_code == 200 and "event: krm-close" in channel.get_data(as_text=True)


def test_raw_bytes_in_a_path_or_a_form_body_are_refused(context: Context, server_errors: CapturedLogs) -> None:
    c = context
    path = c.browser.client.get("/krm/static/krm/x", environ_overrides={"PATH_INFO": "/krm/static/krm/\xff.js"})
    assert path.status_code == 400 and path.get_data(as_text=True) == "The URL path is not UTF-8 text."
    form = c.browser.client.post(
        f"/krm/ui/components/{c.editor}/edit",
        data=b"op=set&path=%5B%22data%22%5D&value=\xff",
        content_type="application/x-www-form-urlencoded",
        headers=c.headers(),
    )
    assert form.status_code == 400  # shown at the editor
    assert '<p class="krm-outcome-message">The form body is not UTF-8 text.</p>' in form.get_data(as_text=True)


def test_the_example_refuses_raw_bytes_on_its_own_pages_too(example: Flask, server_errors: CapturedLogs) -> None:
    browser = Browser(example)
    browser.open("/sign-in")
    signing_in = raw_request(
        browser,
        "/sign-in",
        query=b"next=\xff",
        method="POST",
        data={"username": "editor", "password": "editor", "krm_csrf_token": browser.csrf_token() or ""},
    )
    assert signing_in.status_code == 400 and "not UTF-8" in signing_in.get_data(as_text=True)
    assert raw_request(browser, "/namespaces/demo", query=b"\xff").status_code == 400


def test_a_huge_edit_is_not_a_server_error(context: Context, server_errors: CapturedLogs) -> None:
    response = context.browser.post(
        f"/krm/ui/components/{context.editor}/edit",
        {"op": "set", "path": '["data", "greeting"]', "value": "x" * 3_000_000},
        context.headers(),
    )
    assert response.status_code in (413, 422)  # over the request limit, or over a ConfigMap's 1 MiB of data
    context.browser.post(f"/krm/ui/components/{context.editor}/edit", {"op": "revert", "path": "[]"}, context.headers())


def test_a_deeply_nested_edit_path_is_refused(context: Context) -> None:
    check(
        [
            Case(
                "a path nested too deep",
                post(
                    f"/krm/ui/components/{context.editor}/edit",
                    {"op": "set", "path": DEEP_JSON, "value": "x"},
                    context.headers,
                ),
                400,
            )
        ],
        context.browser,
    )


NESTED: t.Final = "[" * 65 + "]" * 65
"""One level deeper than flask-krm accepts from a request, yet well within what the parser takes."""


def nested_object(levels: int) -> t.Any:
    value: t.Any = "leaf"
    for _ in range(levels):
        value = {"k": value}
    return value


def test_json_nested_past_the_bound_is_refused_naming_the_bound(
    host: Flask, context: Context, kube: KubeSimulator, server_errors: CapturedLogs
) -> None:
    c = context
    edit, replicas = f"/krm/ui/components/{c.editor}/edit", f"/krm/ui/components/{c.deployment}/edit"
    containers = '["spec", "template", "spec", "containers"]'
    current = read(kube, NAMESPACE, "configmaps", "app-config") or {}
    preconditions = {"uid": current["metadata"]["uid"], "resourceVersion": current["metadata"]["resourceVersion"]}
    cases = [
        Case("a path", post(edit, {"op": "set", "path": NESTED, "value": "x"}, c.headers), 400),
        Case(
            "a structured value",
            post(replicas, {"op": "set", "path": containers, "value": NESTED}, lambda: c.headers(c.deployment)),
            400,
        ),
        Case(
            "a create",
            post(
                f"/krm/review/{c.listed}/create",
                {"body": json.dumps({"metadata": {"name": "deep"}, "data": nested_object(70)})},
                lambda: c.headers(c.listed),
            ),
            400,
        ),
        Case(
            "a native patch",
            lambda b: b.client.patch(
                f"/k8s/api/v1/namespaces/{NAMESPACE}/configmaps/app-config",
                data=json.dumps({"metadata": preconditions, "data": nested_object(70)}),
                content_type="application/merge-patch+json",
                headers=csrf_headers(b.csrf_token()),
            ),
            400,
        ),
    ]
    for case in cases:
        response = case.send(c.browser)
        assert response.status_code == case.status, (case.what, response.status_code)
        assert "deeper than 64 levels" in response.get_data(as_text=True), case.what
    assert read(kube, NAMESPACE, "configmaps", "app-config") == current


def test_numbers_json_cannot_carry_never_reach_a_draft_or_a_write(
    context: Context, kube: KubeSimulator, server_errors: CapturedLogs
) -> None:
    c = context
    replicas = f"/krm/ui/components/{c.deployment}/edit"
    containers = '["spec", "template", "spec", "containers"]'
    current = read(kube, NAMESPACE, "configmaps", "app-config") or {}
    preconditions = {"uid": current["metadata"]["uid"], "resourceVersion": current["metadata"]["resourceVersion"]}
    base = f"/krm/review/{c.listed}"

    def native(number: str) -> Callable[[Browser], TestResponse]:
        body = '{"metadata": ' + json.dumps(preconditions) + ', "data": {"k": ' + number + "}}"
        return lambda b: b.client.patch(
            f"/k8s/api/v1/namespaces/{NAMESPACE}/configmaps/app-config",
            data=body,
            content_type="application/merge-patch+json",
            headers=csrf_headers(b.csrf_token()),
        )

    check(
        [
            Case(
                "NaN in a structured value",
                post(
                    replicas,
                    {"op": "set", "path": containers, "value": '[{"name": NaN}]'},
                    lambda: c.headers(c.deployment),
                ),
                422,
            ),
            Case(
                "an overflowing number in a structured value",
                post(replicas, {"op": "set", "path": containers, "value": "[1e999]"}, lambda: c.headers(c.deployment)),
                422,
            ),
            Case(
                "-Infinity in a create",
                post(
                    f"{base}/create",
                    {"body": '{"metadata": {"name": "inf"}, "data": {"k": -Infinity}}'},
                    lambda: c.headers(c.listed),
                ),
                422,
            ),
            Case(
                "an overflowing number in a create",
                post(
                    f"{base}/create",
                    {"body": '{"metadata": {"name": "inf"}, "data": {"k": 1e400}}'},
                    lambda: c.headers(c.listed),
                ),
                422,
            ),
            Case("NaN in a native patch", native("NaN"), 400),
            Case("Infinity in a native patch", native("Infinity"), 400),
        ],
        c.browser,
    )
    review = c.browser.client.get(base, headers=c.headers(c.listed)).get_data(as_text=True)
    assert 'data-krm-review-kind="create"' not in review
    assert 'data-krm-review-kind="edit"' not in c.browser.client.get(
        f"/krm/review/{c.deployments}", headers=c.headers(c.deployments)
    ).get_data(as_text=True)
    assert read(kube, NAMESPACE, "configmaps", "app-config") == current


def test_a_body_over_the_size_limit_is_refused_before_it_is_read(
    host: Flask, context: Context, kube: KubeSimulator, server_errors: CapturedLogs
) -> None:
    c = context
    current = read(kube, NAMESPACE, "configmaps", "app-config") or {}
    preconditions = {"uid": current["metadata"]["uid"], "resourceVersion": current["metadata"]["resourceVersion"]}
    big = "x" * 5000
    cases = [
        Case(
            "an edit",
            post(
                f"/krm/ui/components/{c.editor}/edit",
                {"op": "set", "path": '["data", "greeting"]', "value": big},
                c.headers,
            ),
            413,
        ),
        Case("a Save", post(f"/krm/ui/components/{c.editor}/actions/save", {"padding": big}, c.headers), 413),
        Case(
            "a create",
            post(
                f"/krm/review/{c.listed}/create",
                {"body": json.dumps({"metadata": {"name": "big"}, "data": {"k": big}})},
                lambda: c.headers(c.listed),
            ),
            413,
        ),
        Case(
            "a native patch",
            lambda b: b.client.patch(
                f"/k8s/api/v1/namespaces/{NAMESPACE}/configmaps/app-config",
                data=json.dumps({"metadata": preconditions, "data": {"k": big}}),
                content_type="application/merge-patch+json",
                headers=csrf_headers(b.csrf_token()),
            ),
            413,
        ),
    ]
    try:
        host.config["KRM_MAX_REQUEST_BYTES"] = 4096
        check(cases, c.browser)
        refused = cases[0].send(c.browser).get_data(as_text=True)
        assert "4096 bytes" in refused
        native = cases[3].send(c.browser)
        assert native.is_json and native.get_json()["reason"] == "RequestEntityTooLarge"
        host.config["MAX_CONTENT_LENGTH"] = 1024  # the application's own, smaller limit applies
        small = {"op": "set", "path": '["data", "greeting"]', "value": "y" * 2000}
        assert c.browser.post(f"/krm/ui/components/{c.editor}/edit", small, c.headers()).status_code == 413
    finally:
        host.config["KRM_MAX_REQUEST_BYTES"] = 3 * 1024 * 1024
        host.config["MAX_CONTENT_LENGTH"] = None
    check(
        [
            Case(
                "an edit within the limit",
                post(
                    f"/krm/ui/components/{c.editor}/edit",
                    {"op": "set", "path": '["data", "greeting"]', "value": big},
                    c.headers,
                ),
                200,
            )
        ],
        c.browser,
    )
    c.browser.post(f"/krm/ui/components/{c.editor}/edit", {"op": "revert", "path": '["data"]'}, c.headers())
    assert read(kube, NAMESPACE, "configmaps", "app-config") == current


# ----------------------------------------------------------------------------------- actions --


def test_malformed_actions_are_refused_precisely(host: Flask, context: Context, server_errors: CapturedLogs) -> None:
    c = context
    save = f"/krm/ui/components/{c.editor}/actions/save"
    check(
        [
            Case("an unknown action", post(f"/krm/ui/components/{c.editor}/actions/explode", {}, c.headers), 404),
            Case(
                "an action name that is markup",
                post(f"/krm/ui/components/{c.editor}/actions/%3Cb%3E", {}, c.headers),
                404,
            ),
            Case("Save on a list", post(f"/krm/ui/components/{c.listed}/actions/save", {}, c.headers), 400),
            Case("Save without a page", post(save, {}, lambda: c.headers(page=None)), 404),
            Case(
                "Save of an unknown component",
                post("/krm/ui/components/krm-000000000000/actions/save", {}, c.headers),
                404,
            ),
            Case("a confirmation with nothing pending", post(save, {"krm_confirm": "yes please"}, c.headers), 200),
        ],
        c.browser,
    )
    signed_out = Browser(host)
    signed_out.client.set_cookie("session", "garbage")
    check([Case("a signed-out Save", post(save, {}, c.headers), 400)], signed_out)  # no session: no CSRF token


def test_signed_out_requests_are_401_not_errors(host: Flask, context: Context, server_errors: CapturedLogs) -> None:
    browser = Browser(host, "editor")
    page = browser.open(scope_url("/both", "configmaps", "app-config", column="/metadata/uid"))
    browser.sign_out()
    headers = page.headers(page.component("editor"))
    check(
        [
            Case(
                "an edit",
                post(
                    f"/krm/ui/components/{page.component('editor')}/edit",
                    {"op": "revert", "path": "[]"},
                    lambda: headers,
                ),
                401,
            ),
            Case(
                "a Save", post(f"/krm/ui/components/{page.component('editor')}/actions/save", {}, lambda: headers), 401
            ),
            Case("a review", lambda b: b.client.get(f"/krm/review/{page.component('list')}", headers=headers), 401),
            Case("a native read", lambda b: b.client.get("/k8s/api/v1/namespaces/demo/configmaps"), 401),
        ],
        browser,
    )


# ------------------------------------------------------------------------------------ review --


def review_cases(c: Context) -> list[Case]:
    base = f"/krm/review/{c.listed}"

    def h() -> dict[str, str]:
        return c.headers(c.listed)

    def body(value: t.Any) -> dict[str, str]:
        return {"body": value if isinstance(value, str) else json.dumps(value)}

    return [
        Case("an unknown list", lambda b: b.client.get("/krm/review/krm-000000000000", headers=h()), 404),
        Case("an editor is not a list", lambda b: b.client.get(f"/krm/review/{c.editor}", headers=h()), 400),
        Case("no page", lambda b: b.client.get(base, headers=c.headers(c.listed, page=None)), 404),
        Case("a create without a body", post(f"{base}/create", {}, h), 400),
        Case("a create that is not JSON", post(f"{base}/create", body("{name: x}"), h), 400),
        Case("a create that is a list", post(f"{base}/create", body([1, 2]), h), 422),
        Case("metadata that is text", post(f"{base}/create", body({"metadata": "x"}), h), 422),
        Case("a name that is a number", post(f"{base}/create", body({"metadata": {"name": 5}}), h), 422),
        Case("a name that is not a name", post(f"{base}/create", body({"metadata": {"name": "Not A Name"}}), h), 422),
        Case("a server-owned field", post(f"{base}/create", body({"metadata": {"name": "x", "uid": "u"}}), h), 422),
        Case("a null", post(f"{base}/create", body({"metadata": {"name": "x"}, "data": {"k": None}}), h), 422),
        Case("another kind", post(f"{base}/create", body({"kind": "Secret", "metadata": {"name": "x"}}), h), 422),
        Case(
            "another namespace",
            post(f"{base}/create", body({"metadata": {"name": "x", "namespace": "kube-system"}}), h),
            422,
        ),
        Case(
            "a kind without a create policy",
            post(
                f"/krm/review/{c.deployments}/create",
                body({"metadata": {"name": "x"}}),
                lambda: c.headers(c.deployments),
            ),
            405,
        ),
        Case("a delete without a uid", post(f"{base}/delete", {}, h), 404),
        Case("a delete of an unknown uid", post(f"{base}/delete", {"uid": "not-a-uid"}, h), 404),
        Case("a discard of an unknown key", post(f"{base}/discard", {"key": "nothing"}, h), 404),
        Case("a Save with nothing pending", post(f"{base}/save", {}, h), 200),
    ]


def test_malformed_review_requests_are_refused_precisely(context: Context, server_errors: CapturedLogs) -> None:
    check(review_cases(context), context.browser)


def test_a_deeply_nested_create_is_refused(context: Context) -> None:
    check(
        [
            Case(
                "a body nested too deep",
                post(
                    f"/krm/review/{context.listed}/create", {"body": DEEP_JSON}, lambda: context.headers(context.listed)
                ),
                400,
            )
        ],
        context.browser,
    )


def test_a_create_with_a_value_json_cannot_carry_is_refused_when_staged(context: Context) -> None:
    base = f"/krm/review/{context.listed}"
    try:
        check(
            [
                Case(
                    "NaN in a create",
                    post(
                        f"{base}/create",
                        {"body": '{"metadata": {"name": "not-a-number"}, "data": {"k": NaN}}'},
                        lambda: context.headers(context.listed),
                    ),
                    422,
                )
            ],
            context.browser,
        )
    finally:
        pending = context.browser.client.get(base, headers=context.headers(context.listed)).get_data(as_text=True)
        for key in re.findall(r'hx-vals=\'\{"key": "([^"]+)"\}\'', pending):
            context.browser.post(f"{base}/discard", {"key": key}, context.headers(context.listed))


# ------------------------------------------------------------------------------ native proxy --


def native_cases(c: Context, kube: KubeSimulator) -> list[Case]:
    base = f"/k8s/api/v1/namespaces/{NAMESPACE}/configmaps"
    current = read(kube, NAMESPACE, "configmaps", "app-config") or {}
    preconditions = {"uid": current["metadata"]["uid"], "resourceVersion": "1"}

    def patch(
        path: str, data: str | bytes, content_type: str = "application/merge-patch+json"
    ) -> Callable[[Browser], TestResponse]:
        return lambda b: b.client.patch(
            path, data=data, content_type=content_type, headers=csrf_headers(b.csrf_token())
        )

    return [
        Case("the API root", lambda b: b.client.get("/k8s/api"), 404),
        Case("a group without a version", lambda b: b.client.get("/k8s/apis/apps"), 404),
        Case("a subresource", lambda b: b.client.get(f"{base}/app-config/status"), 404),
        Case("a relative segment", lambda b: b.client.get(f"/k8s/api/v1/namespaces/{NAMESPACE}/../configmaps"), 404),
        Case(
            "a namespace that is not a name",
            lambda b: b.client.get("/k8s/api/v1/namespaces/Not_A_Name/configmaps"),
            404,
        ),
        Case(
            "a kind the proxy does not serve",
            lambda b: b.client.get(f"/k8s/apis/apps/v1/namespaces/{NAMESPACE}/deployments"),
            403,
        ),
        Case("an unknown parameter", lambda b: b.client.get(f"{base}?fieldSelector=metadata.name%3Dx"), 400),
        Case("a selector that does not parse", lambda b: b.client.get(f"{base}?labelSelector=a%20in%20("), 404),
        Case("a watch of an object URL", lambda b: b.client.get(f"{base}/app-config?watch=true"), 400),
        Case("a timeout that is not a number", lambda b: b.client.get(f"{base}?timeoutSeconds=soon"), 400),
        Case("a DELETE", lambda b: b.client.delete(f"{base}/app-config", headers=csrf_headers(b.csrf_token())), 405),
        Case("a PUT", lambda b: b.client.put(f"{base}/app-config", headers=csrf_headers(b.csrf_token())), 405),
        Case("a JSON patch", patch(f"{base}/app-config", "[]", "application/json-patch+json"), 415),
        Case("a body that is not JSON", patch(f"{base}/app-config", "{data"), 400),
        Case("a body that is not UTF-8", patch(f"{base}/app-config", b"\xff\xfe"), 400),
        Case("a body that is a list", patch(f"{base}/app-config", "[]"), 400),
        Case("no preconditions", patch(f"{base}/app-config", '{"data": {"a": "b"}}'), 422),
        Case(
            "machinery",
            patch(f"{base}/app-config", json.dumps({"metadata": {**preconditions, "managedFields": []}})),
            422,
        ),
        Case("a collection", patch(base, json.dumps({"metadata": preconditions})), 405),
        Case("a query", patch(f"{base}/app-config?dryRun=All", json.dumps({"metadata": preconditions})), 400),
        Case(
            "a stale version",
            patch(f"{base}/app-config", json.dumps({"metadata": preconditions, "data": {"a": "b"}})),
            409,
        ),
        Case("an object that does not exist", patch(f"{base}/missing", json.dumps({"metadata": preconditions})), 404),
        Case(
            "a huge body",
            patch(f"{base}/app-config", json.dumps({"metadata": preconditions, "data": {"k": "x" * 3_000_000}})),
            409,
        ),
    ]


def test_malformed_native_requests_are_refused_precisely(
    context: Context, kube: KubeSimulator, server_errors: CapturedLogs
) -> None:
    check(native_cases(context, kube), context.browser)


def test_a_deeply_nested_native_patch_is_refused(context: Context) -> None:
    check(
        [
            Case(
                "a body nested too deep",
                lambda b: b.client.patch(
                    f"/k8s/api/v1/namespaces/{NAMESPACE}/configmaps/app-config",
                    data=DEEP_JSON,
                    content_type="application/merge-patch+json",
                    headers=csrf_headers(b.csrf_token()),
                ),
                400,
            )
        ],
        context.browser,
    )


# ------------------------------------------------------------------------------- the example --


@pytest.fixture(scope="module")
def example(kube: KubeSimulator) -> Iterator[Flask]:
    app = make_example(kube)
    yield app
    shut_down(app)


def test_the_example_refuses_unknown_pages_precisely(example: Flask, server_errors: CapturedLogs) -> None:
    browser = Browser(example, "editor")
    check(
        [
            Case("an unknown namespace", lambda b: b.client.get("/namespaces/kube-system"), 404),
            Case("an object that does not exist", lambda b: b.client.get("/namespaces/demo/configmaps/missing"), 200),
            Case("an unknown kind", lambda b: b.client.get("/namespaces/demo/pods/x"), 404),
            Case(
                "a sign-in without fields",
                lambda b: b.client.post("/sign-in", data={"krm_csrf_token": b.csrf_token() or ""}),
                200,
            ),
        ],
        browser,
    )
    for elsewhere in (
        "//evil.example/",
        "/\\evil.example",
        "https://evil.example/",
        "/\t/evil.example",
        "javascript:alert(1)",
    ):
        browser.open("/sign-in")
        going = browser.client.post(
            f"/sign-in?next={quote(elsewhere, safe='')}",
            data={"username": "editor", "password": "editor", "krm_csrf_token": browser.csrf_token() or ""},
        )
        location = going.headers.get("Location", "")
        assert going.status_code == 302 and urlsplit(location).netloc == "", (elsewhere, location)  # never another site
        assert location.startswith("/") and not location.startswith(("//", "/\\")), (elsewhere, location)


@pytest.mark.parametrize("name", ["Not-A-Name", "a..b", "a" * 300, "under_score"])
@pytest.mark.parametrize("kind", ["configmaps", "secrets", "deployments", "flunders"])
def test_the_example_refuses_an_object_name_that_is_not_one(
    name: str, kind: str, example: Flask, server_errors: CapturedLogs
) -> None:
    browser = Browser(example, "editor")
    check(
        [Case(f"the {kind} name {name[:20]!r}", lambda b: b.client.get(f"/namespaces/demo/{kind}/{name}"), 404)],
        browser,
    )
