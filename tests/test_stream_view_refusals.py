"""Refusals of the JSON stream endpoint: one terminal error event with seq 1, over HTTP 200."""

from __future__ import annotations

import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_krm import KrmStream, Principal, Scope
from flask_krm.sse import HEADERS
from tests.apps import AuthorizerLog

URL = "/krm/resource-stream/v1"
GOOD = "target=demo&version=v1&resource=configmaps&namespace=app"


def refusal_bytes(code: str, message: str) -> bytes:
    return b'data: {"seq":1,"type":"error","code":"%s","message":"%s","terminal":true}\n\n' % (
        code.encode(),
        message.encode(),
    )


def assert_refusal(response: object, code: str, message: str) -> None:
    assert response.status_code == 200  # type: ignore[attr-defined]
    assert response.mimetype == "text/event-stream"  # type: ignore[attr-defined]
    for name, value in HEADERS:
        assert response.headers[name] == value  # type: ignore[attr-defined]
    assert response.data == refusal_bytes(code, message)  # type: ignore[attr-defined]


@pytest.fixture
def signed_in(app: Flask) -> FlaskClient:
    client = app.test_client()
    client.get("/login/editor")
    return client


def test_anonymous_caller_is_unauthenticated(app: Flask, authorizer: AuthorizerLog) -> None:
    assert_refusal(app.test_client().get(f"{URL}?{GOOD}"), "UNAUTHENTICATED", "sign in to open this stream")
    assert authorizer.calls == []


def test_authentication_comes_before_scope_validation(app: Flask) -> None:
    response = app.test_client().get(f"{URL}?server=https://10.0.0.1&resource=ConfigMap")
    assert_refusal(response, "UNAUTHENTICATED", "sign in to open this stream")


def test_a_failing_principal_loader_is_forbidden_with_a_generic_message(app: Flask, krm: KrmStream) -> None:
    @krm.principal_loader
    def broken() -> Principal:
        raise LookupError("database password is hunter2")

    response = app.test_client().get(f"{URL}?{GOOD}")
    assert_refusal(response, "FORBIDDEN", "the caller could not be identified")
    assert b"hunter2" not in response.data


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            f"{GOOD}&apiServer=https://10.0.0.1",
            "the 'apiServer' parameter is refused: a scope never carries an API-server address, an endpoint"
            " or a credential (name a target instead)",
        ),
        (
            "target=demo&version=v1&namespace=app",
            "resource is required (the lowercase plural API name, such as configmaps); there is no default",
        ),
        (
            "target=demo&version=v1&resource=configmaps&namespace=..",
            "namespace '..' is not a valid namespace name: at most 63 characters of lowercase letters, digits"
            " and '-', starting and ending with a letter or digit",
        ),
        ("target=prod&version=v1&resource=configmaps&namespace=app", "target 'prod' is not served here"),
        ("target=demo&version=v1&resource=pods&namespace=app", "resource 'pods' is not served here"),
        (
            "target=demo&version=v1&resource=configmaps&namespace=kube-system",
            "namespace 'kube-system' is not served here for 'configmaps'",
        ),
        (
            f"{GOOD}&projection=krm-status/v1",
            "projection 'krm-status/v1' is unknown; use one of krm-raw/v1, krm-full/v1, krm-spec/v1",
        ),
    ],
)
def test_scope_refusals_are_scope_invalid(
    signed_in: FlaskClient, authorizer: AuthorizerLog, query: str, message: str
) -> None:
    assert_refusal(signed_in.get(f"{URL}?{query}"), "SCOPE_INVALID", message)
    assert authorizer.calls == []


def test_the_authorizer_sees_the_exact_scope_projection_and_verb(
    signed_in: FlaskClient, authorizer: AuthorizerLog
) -> None:
    authorizer.denied_users.add("editor")
    response = signed_in.get(f"{URL}?{GOOD}&labelSelector=&projection=krm-spec/v1")
    assert_refusal(response, "FORBIDDEN", "this stream is not permitted for the signed-in principal")
    assert [(p.name, s, proj, verb) for p, s, proj, verb in authorizer.calls] == [
        ("editor", Scope(target="demo", version="v1", resource="configmaps", namespace="app"), "krm-spec/v1", "watch")
    ]


def test_the_default_projection_is_authorized_when_none_is_requested(
    app: Flask, signed_in: FlaskClient, authorizer: AuthorizerLog
) -> None:
    authorizer.denied_users.add("editor")
    app.config["KRM_PROJECTION"] = "krm-spec/v1"
    signed_in.get(f"{URL}?{GOOD}")
    assert authorizer.calls[-1][2] == "krm-spec/v1"


def test_a_failing_authorizer_is_a_terminal_internal_error(app: Flask, krm: KrmStream, signed_in: FlaskClient) -> None:
    @krm.authorizer
    def broken(principal: Principal, scope: Scope, projection: str, verb: str) -> bool:
        raise ConnectionError("authz backend down at 10.0.0.7")

    response = signed_in.get(f"{URL}?{GOOD}")
    assert_refusal(response, "INTERNAL", "the authorization check failed")
    assert b"10.0.0.7" not in response.data


def test_the_endpoint_only_answers_get(signed_in: FlaskClient) -> None:
    assert signed_in.post(f"{URL}?{GOOD}").status_code == 405
