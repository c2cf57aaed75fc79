"""Invariant 17 (first half): every state-changing request carries the session's CSRF token.

The rules are enumerated from ``app.url_map`` of the example application and of a minimal host
(the ``krm`` blueprint, the review views and the native proxy), so a state-changing route added
later is covered without editing this file. Each one must refuse a request without the token, with
another session's token, and with the token only in the query string, before it changes anything;
with the session's own token it must get past the check (so the refusals are the check's, not an
accident of the dummy URL).
"""

from __future__ import annotations

import json
import re
import typing as t
from collections.abc import Iterator

import pytest
from flask import Flask
from werkzeug.routing import Rule

from flask_krm.csrf import FIELD, HEADER
from flask_krm.testing.simulator import KubeSimulator

from .hosts import Browser, Recorder, make_host, merge_patch, read, scope_query, shut_down

SAFE_METHODS: t.Final = frozenset({"GET", "HEAD", "OPTIONS"})
DUMMY_VALUES: t.Final = {"path": "api/v1/namespaces/demo/configmaps/app-config"}


@pytest.fixture(scope="module")
def host(kube: KubeSimulator) -> Iterator[Flask]:
    app = make_host(kube, Recorder())
    yield app
    shut_down(app)


def state_changing(app: Flask) -> list[tuple[Rule, str, str]]:
    """Every (rule, method, URL) of ``app`` that may change state, URL variables filled in."""
    out = []
    for rule in app.url_map.iter_rules():
        for method in sorted((rule.methods or set()) - SAFE_METHODS):
            values = {
                name: DUMMY_VALUES.get(rule._converters[name].__class__.__name__.replace("Converter", "").lower(), "x")
                for name in rule.arguments
            }
            url = rule.build(values, append_unknown=False)
            assert url is not None
            out.append((rule, method, url[1]))
    return out


def ready_browser(app: Flask, *, example_app: bool) -> Browser:
    """A browser with a session token: signed in as ``editor`` and one page loaded."""
    browser = Browser(app, "editor")
    if example_app:
        browser.open("/namespaces/demo/configmaps/app-config")
    else:
        browser.open("/list?scope=" + scope_query("demo").replace("&", "%26"))
    assert browser.csrf_token()
    return browser


def send(
    browser: Browser, method: str, url: str, headers: dict[str, str] | None = None, data: dict[str, str] | None = None
) -> t.Any:
    return browser.client.open(url, method=method, headers=headers or {}, data=data or {})


def refused_by_csrf(response: t.Any) -> bool:
    return response.status_code == 400 and "CSRF" in response.get_data(as_text=True)


def test_the_enumeration_sees_every_kind_of_state_changing_route(example: Flask, host: Flask) -> None:
    endpoints = {rule.endpoint for app in (example, host) for rule, _, _ in state_changing(app)}
    assert {"krm.ui_edit", "krm.ui_action"} <= endpoints
    assert {"krm_review.create", "krm_review.delete", "krm_review.discard", "krm_review.save"} <= endpoints
    assert {"accounts.sign_in", "accounts.sign_out", "krm_native.patch"} <= endpoints


@pytest.mark.parametrize("which", ["example", "host"])
def test_every_state_changing_route_refuses_a_missing_or_foreign_token(which: str, example: Flask, host: Flask) -> None:
    app = example if which == "example" else host
    routes = state_changing(app)
    assert routes
    mine = ready_browser(app, example_app=which == "example")
    other = ready_browser(app, example_app=which == "example")
    foreign = other.csrf_token()
    assert foreign and foreign != mine.csrf_token()
    for rule, method, url in routes:
        where = f"{method} {url} ({rule.endpoint})"
        assert refused_by_csrf(send(mine, method, url)), where
        assert refused_by_csrf(send(mine, method, url, headers={HEADER: foreign})), where
        assert refused_by_csrf(send(mine, method, url, data={FIELD: foreign})), where
        assert refused_by_csrf(send(mine, method, f"{url}?{FIELD}={mine.csrf_token()}")), where
        assert refused_by_csrf(send(mine, method, url, headers={HEADER: ""})), where
        # With its own token the request gets past the check (a fresh browser: it may sign out).
        own = ready_browser(app, example_app=which == "example")
        assert not refused_by_csrf(send(own, method, url, headers={HEADER: own.csrf_token() or ""})), where


@pytest.mark.parametrize("which", ["example", "host"])
def test_a_session_that_never_received_a_token_is_refused(which: str, example: Flask, host: Flask) -> None:
    app = example if which == "example" else host
    browser = Browser(app, "editor")
    assert browser.csrf_token() is None
    for rule, method, url in state_changing(app):
        response = send(browser, method, url, headers={HEADER: "guessed"})
        assert refused_by_csrf(response), f"{method} {url} ({rule.endpoint})"
        assert "session token is missing" in response.get_data(as_text=True)


def outcome_of(response: t.Any, component_id: str) -> str:
    """The outcome kind an editor refusal renders in ``component_id``'s outcome region."""
    found = re.search(
        rf'<hx-partial hx-target="#{component_id}-outcome">\s*<div [^>]*data-krm-outcome="([a-z-]+)"',
        response.get_data(as_text=True),
    )
    assert found, response.get_data(as_text=True)
    return found.group(1)


def test_a_forged_post_is_refused_in_each_route_familys_form(host: Flask, kube: KubeSimulator) -> None:
    """One forged request (another session's token) per family of state-changing routes: the
    editor's field edits, YAML edits and actions (at the editor, ending the page's session), the
    review views (plain text) and the native proxy (a Kubernetes ``Status``). None changes anything."""
    before = read(kube, "demo", "configmaps", "app-config")
    assert before is not None
    browser = Browser(host, "editor")
    both = "/both?scope=" + scope_query("demo").replace("&", "%26") + "&name=app-config"
    page = browser.open(both)
    editor, listed = page.component("editor"), page.component("list")
    other = Browser(host, "editor")
    other.open("/list?scope=" + scope_query("demo").replace("&", "%26"))
    forged = other.csrf_token()
    assert forged and forged != browser.csrf_token()

    def forge(component_id: str) -> dict[str, str]:
        return {**page.headers(component_id), HEADER: forged or ""}

    yaml_text = "apiVersion: v1\nkind: ConfigMap\ndata:\n  forged: 'yes'\n"
    for route, form in (
        ("edit", {"op": "add_key", "path": '["data"]', "key": "forged", "value": "yes"}),
        ("yaml", {"before": yaml_text, "yaml": yaml_text}),
        ("actions/save", {}),
    ):
        answer = browser.post(f"/krm/ui/components/{editor}/{route}", form, forge(editor))
        assert answer.status_code == 400 and answer.mimetype == "text/html", route
        assert outcome_of(answer, editor) == "session-ended", route
        assert "The CSRF token is invalid" in answer.get_data(as_text=True), route
        assert "X-KRM-Session-Ended" in answer.headers, route

    review = browser.post(f"/krm/review/{listed}/delete", {"uid": before["metadata"]["uid"]}, forge(listed))
    assert review.status_code == 400 and review.mimetype == "text/plain"
    assert review.get_data(as_text=True) == "The CSRF token is invalid: reload the page and retry."

    native = browser.client.patch(
        "/k8s/api/v1/namespaces/demo/configmaps/app-config",
        data=json.dumps({"metadata": {"uid": before["metadata"]["uid"]}, "data": {"forged": "yes"}}),
        headers={"Content-Type": "application/merge-patch+json", HEADER: forged},
    )
    assert native.status_code == 400 and native.mimetype == "application/json"
    status = native.get_json()
    assert status["kind"] == "Status" and status["reason"] == "BadRequest"
    assert status["message"] == "The CSRF token is invalid: reload the page and retry."

    after = read(kube, "demo", "configmaps", "app-config")
    assert after is not None
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert "forged" not in browser.open(both).html


def test_sign_in_and_sign_out_change_nothing_without_the_token(example: Flask) -> None:
    browser = Browser(example)
    browser.open("/sign-in")
    refused = browser.post("/sign-in", {"username": "editor", "password": "editor"})
    assert refused_by_csrf(refused)
    assert example.test_client().get("/namespaces/demo").status_code == 302
    assert browser.client.get("/namespaces/demo").status_code == 302  # still signed out

    token = browser.csrf_token()
    assert token is not None
    assert browser.post("/sign-in", {"username": "editor", "password": "editor", FIELD: token}).status_code == 302
    assert browser.client.get("/namespaces/demo").status_code == 200
    assert refused_by_csrf(browser.post("/sign-out"))
    assert browser.client.get("/namespaces/demo").status_code == 200  # still signed in
    signed_in_token = browser.csrf_token()
    assert signed_in_token is not None
    assert browser.post("/sign-out", {FIELD: signed_in_token}).status_code == 302
    assert browser.client.get("/namespaces/demo").status_code == 302


def test_the_token_is_replaced_at_sign_in(example: Flask) -> None:
    """A token known before the sign-in (an anonymous visitor's, perhaps planted by someone else)
    is worth nothing after it: the signed-in pages carry a new one and the old one is refused."""
    browser = Browser(example)
    browser.open("/sign-in")
    anonymous = browser.csrf_token()
    assert anonymous is not None
    assert browser.post("/sign-in", {"username": "editor", "password": "editor", FIELD: anonymous}).status_code == 302
    page = browser.open("/namespaces/demo/configmaps/app-config")
    signed_in = browser.csrf_token()
    assert signed_in and signed_in != anonymous
    assert signed_in in page.html and anonymous not in page.html
    editor = page.component("editor")
    form = {"op": "add_key", "path": '["data"]', "key": "stale-token", "value": "forged"}
    stale = {**page.headers(editor), HEADER: anonymous}
    assert refused_by_csrf(browser.post(f"/krm/ui/components/{editor}/edit", form, stale))
    assert refused_by_csrf(browser.post("/sign-out", {FIELD: anonymous}))
    assert "stale-token" not in browser.open("/namespaces/demo/configmaps/app-config").html
    fresh = {**form, "key": "fresh-token"}
    assert browser.post(f"/krm/ui/components/{editor}/edit", fresh, page.headers(editor)).status_code == 200
    assert (
        browser.post(
            f"/krm/ui/components/{editor}/edit", {"op": "revert", "path": '["data"]'}, page.headers(editor)
        ).status_code
        == 200
    )


def test_a_request_right_after_another_principal_signs_in_refuses_the_old_token(host: Flask) -> None:
    """The principal changes between two requests (no page loaded in between): the first
    state-changing request already refuses the token issued to the previous principal."""
    browser = Browser(host, "editor")
    page = browser.open("/list?scope=" + scope_query("demo").replace("&", "%26"))
    listed = page.component("list")
    token = browser.csrf_token()
    browser.sign_in("viewer")
    answer = browser.post(f"/krm/review/{listed}/save", {}, page.headers(listed))
    assert refused_by_csrf(answer) and "sign-in" in answer.get_data(as_text=True)
    assert browser.csrf_token() is None  # dropped: the next page makes a new one
    browser.open("/list?scope=" + scope_query("demo").replace("&", "%26"))
    assert browser.csrf_token() not in (None, token)


def test_signing_out_keeps_the_token_so_a_signed_out_request_says_so(host: Flask) -> None:
    browser = Browser(host, "editor")
    page = browser.open("/list?scope=" + scope_query("demo").replace("&", "%26"))
    listed = page.component("list")
    token = browser.csrf_token()
    browser.sign_out()
    assert browser.post(f"/krm/review/{listed}/save", {}, page.headers(listed)).status_code == 401
    assert browser.csrf_token() == token


def test_an_edit_without_the_token_leaves_the_draft_alone(example: Flask) -> None:
    browser = Browser(example, "editor")
    page = browser.open("/namespaces/demo/configmaps/app-config")
    editor = page.component("editor")
    headers = page.headers(editor)
    form = {"op": "add_key", "path": '["data"]', "key": "csrf-probe", "value": "forged"}
    forged = {k: v for k, v in headers.items() if k != HEADER}
    assert refused_by_csrf(browser.post(f"/krm/ui/components/{editor}/edit", form, forged))
    again = browser.open("/namespaces/demo/configmaps/app-config")
    assert "csrf-probe" not in again.html
    assert browser.post(f"/krm/ui/components/{editor}/edit", form, headers).status_code == 200
    assert "csrf-probe" in browser.open("/namespaces/demo/configmaps/app-config").html


def test_a_token_is_never_sent_to_another_session(example: Flask, kube: KubeSimulator) -> None:
    first, second = Browser(example, "editor"), Browser(example, "editor")
    first_page = first.open("/namespaces/demo/configmaps/app-config")
    second_page = second.open("/namespaces/demo/configmaps/app-config")
    tokens = (first.csrf_token(), second.csrf_token())
    assert tokens[0] and tokens[1] and tokens[0] != tokens[1]
    assert tokens[0] in first_page.html and tokens[1] in second_page.html
    channels = (first_page.channel(), second_page.channel())
    try:
        for channel in channels:
            channel.until_text(": connected")
        merge_patch(kube, "demo", "configmaps", "app-config", {"data": {"csrf-round": "shared fragment"}})
        for channel in channels:
            channel.until_text("csrf-round")  # a shared, cached editor body reached both sessions
        assert tokens[0] not in second_page.html + channels[1].text
        assert tokens[1] not in first_page.html + channels[0].text
    finally:
        for channel in channels:
            channel.close()


def session_cookie(app: Flask) -> str:
    browser = Browser(app)
    response = browser.client.get("/sign-in")
    cookies = [
        value for name, value in response.headers.items() if name == "Set-Cookie" and value.startswith("session=")
    ]
    assert cookies, response.headers
    return cookies[0]


def test_the_example_session_cookie_is_out_of_scripts_reach(example: Flask) -> None:
    assert "HttpOnly" in session_cookie(example)


def test_the_example_session_cookie_is_same_site(example: Flask) -> None:
    assert re.search(r"SameSite=(Lax|Strict)", session_cookie(example))
