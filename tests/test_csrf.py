"""CSRF: every state-changing request to the blueprint carries the session's token."""

from __future__ import annotations

import re

import pytest
from flask import Flask, render_template_string
from flask.testing import FlaskClient

from flask_krm import CsrfError, KrmStream
from flask_krm.csrf import FIELD, HEADER


@pytest.fixture
def app(app: Flask) -> Flask:
    # A view whose endpoint belongs to the ``krm`` blueprint, so the blueprint's hooks apply to it.
    app.add_url_rule("/krm/test-echo", "krm.test_echo", lambda: "changed", methods=["POST", "DELETE"])

    @app.get("/page")
    def page() -> str:
        return render_template_string("<meta name=csrf content='{{ krm_csrf_token() }}'>")

    return app


def page_token(client: FlaskClient) -> str:
    match = re.search(r"content='([^']+)'", client.get("/page").get_data(as_text=True))
    assert match is not None
    return match.group(1)


def test_the_template_global_gives_a_stable_token_per_session(app: Flask, krm: KrmStream) -> None:
    client = app.test_client()
    token = page_token(client)
    assert len(token) >= 40
    assert page_token(client) == token
    assert page_token(app.test_client()) != token
    with client.session_transaction() as session:
        assert session["_krm_csrf"] == token


def test_the_header_or_the_form_field_is_accepted(app: Flask) -> None:
    client = app.test_client()
    token = page_token(client)
    assert client.post("/krm/test-echo", headers={HEADER: token}).data == b"changed"
    assert client.post("/krm/test-echo", data={FIELD: token}).data == b"changed"
    assert client.delete("/krm/test-echo", headers={HEADER: token}).data == b"changed"


@pytest.mark.parametrize(
    ("load_page", "headers", "message"),
    [
        (False, {HEADER: "anything"}, "The CSRF session token is missing"),
        (True, {}, "The CSRF token is missing: send it in the X-KRM-CSRF header or the krm_csrf_token field."),
        (True, {HEADER: "forged"}, "The CSRF token is invalid: reload the page and retry."),
    ],
)
def test_refusals_are_400_with_a_clear_message(
    app: Flask, load_page: bool, headers: dict[str, str], message: str
) -> None:
    client = app.test_client()
    if load_page:
        page_token(client)
    response = client.post("/krm/test-echo", headers=headers)
    assert response.status_code == 400
    assert message in response.get_data(as_text=True)
    assert "Traceback" not in response.get_data(as_text=True)


def test_another_sessions_token_is_refused(app: Flask) -> None:
    victim = app.test_client()
    attacker = app.test_client()
    stolen = page_token(victim)
    page_token(attacker)
    assert attacker.post("/krm/test-echo", headers={HEADER: stolen}).status_code == 400


def test_refusal_is_a_typed_error_hosts_can_handle(app: Flask) -> None:
    @app.errorhandler(CsrfError)
    def handle(error: CsrfError) -> tuple[str, int]:
        return f"csrf: {error.description}", 400

    response = app.test_client().post("/krm/test-echo")
    assert response.get_data(as_text=True).startswith("csrf: The CSRF session token is missing")


def test_every_state_changing_route_of_the_blueprint_is_protected(app: Flask) -> None:
    client = app.test_client()
    page_token(client)
    checked = 0
    for rule in app.url_map.iter_rules():
        if not rule.endpoint.startswith("krm.") or rule.methods is None:
            continue
        for method in sorted(rule.methods & {"POST", "PUT", "PATCH", "DELETE"}):
            url = rule.rule
            for argument in rule.arguments:
                url = re.sub(r"<(?:[^:<>]+:)?%s>" % argument, "1", url)
            response = client.open(url, method=method)
            assert response.status_code == 400, (method, rule.rule)
            assert "CSRF token is missing" in response.get_data(as_text=True)
            checked += 1
    assert checked >= 2


def test_a_token_issued_before_a_sign_in_is_refused_after_it(app: Flask) -> None:
    client = app.test_client()
    anonymous = page_token(client)
    assert client.post("/krm/test-echo", headers={HEADER: anonymous}).data == b"changed"
    client.get("/login/editor")
    refused = client.post("/krm/test-echo", headers={HEADER: anonymous})
    assert refused.status_code == 400
    assert "The CSRF token was issued before the current sign-in" in refused.get_data(as_text=True)
    signed_in = page_token(client)
    assert signed_in != anonymous
    assert client.post("/krm/test-echo", headers={HEADER: signed_in}).data == b"changed"

    client.get("/logout")
    assert page_token(client) == signed_in  # signing out keeps the token: a signed-out request is told so
    client.get("/login/editor")
    assert refused_by_principal_change(client, signed_in)  # signing in again, even as the same principal,
    again = page_token(client)  # starts clean
    assert again not in (signed_in, anonymous)
    client.get("/login/viewer")
    assert refused_by_principal_change(client, again)
    assert page_token(client) not in (signed_in, anonymous, again)


def refused_by_principal_change(client: FlaskClient, token: str) -> bool:
    response = client.post("/krm/test-echo", data={FIELD: token})
    return response.status_code == 400 and "before the current sign-in" in response.get_data(as_text=True)


def test_a_body_over_the_request_size_limit_is_413_on_the_blueprint(app: Flask) -> None:
    app.add_url_rule("/host-echo", "host_echo", lambda: "host", methods=["POST"])
    app.config["KRM_MAX_REQUEST_BYTES"] = 100
    client = app.test_client()
    token = page_token(client)
    refused = client.post("/krm/test-echo", headers={HEADER: token}, data={"padding": "x" * 200})
    assert refused.status_code == 413
    assert refused.get_data(as_text=True) == "The request body is larger than 100 bytes."
    refused = client.post("/krm/test-echo", data={FIELD: token, "padding": "x" * 200})  # the token in the body too
    assert refused.status_code == 413
    assert client.post("/krm/test-echo", headers={HEADER: token}, data={"padding": "x" * 50}).data == b"changed"
    assert client.get("/page").status_code == 200
    assert client.post("/host-echo", data={"padding": "x" * 200}).data == b"host"  # the host's routes are the host's
