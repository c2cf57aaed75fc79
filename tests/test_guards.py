"""The request guards of every flask-krm blueprint: size, decoding and credential parameters
refused in the form the view or blueprint declares, the session binding, and the CSRF check."""

from __future__ import annotations

import typing as t

import pytest
from flask import Blueprint, Flask, Response
from flask.testing import FlaskClient

from flask_krm import guards
from flask_krm.csrf import HEADER
from flask_krm.errors import CsrfError
from flask_krm.runtime import KrmRuntime, runtime

Answered = list[tuple[str, int, str, str]]


def form_of(name: str, answered: Answered, *, only: str | None = None) -> guards.RefusalForm:
    """A refusal form that records what it was asked and answers with its name (or declines other kinds)."""

    def form(status: int, message: str, kind: guards.RefusalKind) -> Response | None:
        if only is not None and kind != only:
            return None
        answered.append((name, status, message, kind))
        return Response(f"{name}: {message}", status=status)

    return form


@pytest.fixture
def answered() -> Answered:
    return []


@pytest.fixture
def app(app: Flask, answered: Answered) -> Flask:
    with_form = Blueprint("with_form", __name__, url_prefix="/probe")
    guards.install(with_form, form_of("blueprint", answered))

    @with_form.route("/echo", methods=["GET", "POST"])
    def echo() -> str:
        return "served"

    @with_form.route("/declared", methods=["GET", "POST"])
    @guards.refuses_as(form_of("view", answered, only="refused"))
    def declared() -> str:
        return "served"

    @with_form.get("/scoped")
    @guards.refuses_as(guards.plain_form, checks_parameters=True)
    def scoped() -> str:
        return "served"

    @with_form.get("/sessionless")
    @guards.refuses_as(guards.plain_form, sessionless=True)
    def sessionless() -> str:
        return "served"

    plain = Blueprint("plain", __name__, url_prefix="/plain")
    guards.install(plain)
    plain.add_url_rule("/echo", "echo", lambda: "served", methods=["GET", "POST"])

    app.register_blueprint(with_form)
    app.register_blueprint(plain)
    app.add_url_rule("/token", "token", lambda: runtime().csrf_token())
    return app


def token(client: FlaskClient) -> dict[str, str]:
    return {HEADER: client.get("/token").get_data(as_text=True)}


def test_a_request_no_page_would_send_is_served_when_clean(app: Flask, answered: Answered) -> None:
    client = app.test_client()
    assert client.get("/probe/echo?name=web").get_data(as_text=True) == "served"
    assert client.post("/probe/echo", headers=token(client), data={"a": "é"}).get_data(as_text=True) == "served"
    assert answered == []


@pytest.mark.parametrize(
    ("request_options", "message"),
    [
        ({"environ_overrides": {"QUERY_STRING": "name=\xff"}}, guards.MALFORMED_QUERY),
        ({"environ_overrides": {"SCRIPT_NAME": "/caf\xc3"}}, guards.MALFORMED_PATH),
        ({"query_string": "serverUrl=https://elsewhere"}, guards.CREDENTIAL_PARAMETER_MESSAGE),
        ({"query_string": "Bearer-Token=x"}, guards.CREDENTIAL_PARAMETER_MESSAGE),
    ],
)
def test_an_undecodable_or_credential_carrying_request_is_refused_in_the_blueprints_form(
    app: Flask, answered: Answered, request_options: dict[str, t.Any], message: str
) -> None:
    refused = app.test_client().get("/probe/echo", **request_options)
    assert (refused.status_code, refused.get_data(as_text=True)) == (400, f"blueprint: {message}")
    assert answered == [("blueprint", 400, message, "refused")]


def test_a_form_body_that_is_not_utf8_is_refused_but_another_body_is_the_views(app: Flask, answered: Answered) -> None:
    client = app.test_client()
    headers = token(client)
    refused = client.post(
        "/probe/echo", headers=headers, data=b"a=\xff", content_type="application/x-www-form-urlencoded"
    )
    assert (refused.status_code, answered[-1]) == (400, ("blueprint", 400, guards.MALFORMED_FORM, "refused"))
    served = client.post("/probe/echo", headers=headers, data=b"\xff", content_type="application/octet-stream")
    assert served.get_data(as_text=True) == "served"


def test_a_view_that_checks_its_own_parameters_gets_them(app: Flask, answered: Answered) -> None:
    client = app.test_client()
    assert client.get("/probe/scoped?token=x").get_data(as_text=True) == "served"
    assert client.get("/probe/scoped", environ_overrides={"QUERY_STRING": "token=\xff"}).status_code == 400
    assert answered == []  # the view's own (plain) form answered


def test_the_views_form_comes_first_and_a_form_declining_falls_to_the_blueprints(
    app: Flask, answered: Answered
) -> None:
    client = app.test_client()
    refused = client.get("/probe/declared?kubeconfig=x")
    assert refused.get_data(as_text=True) == f"view: {guards.CREDENTIAL_PARAMETER_MESSAGE}"
    csrf = client.post("/probe/declared")  # the view's form answers "refused" only
    assert csrf.status_code == 400 and csrf.get_data(as_text=True).startswith("blueprint: The CSRF")
    assert [kind for _, _, _, kind in answered] == ["refused", "csrf"]


def test_without_a_form_refusals_are_plain_text_and_csrf_raises_for_the_host(app: Flask) -> None:
    caught: list[CsrfError] = []

    @app.errorhandler(CsrfError)
    def host_answer(error: CsrfError) -> tuple[str, int]:
        caught.append(error)
        return "the host's page", 400

    client = app.test_client()
    refused = client.get("/plain/echo?impersonate-user=admin")
    assert (refused.status_code, refused.mimetype) == (400, "text/plain")
    assert refused.get_data(as_text=True) == guards.CREDENTIAL_PARAMETER_MESSAGE
    assert refused.headers["Cache-Control"] == "no-store"
    assert client.post("/plain/echo").get_data(as_text=True) == "the host's page"
    assert len(caught) == 1
    assert client.post("/plain/echo", headers=token(client)).get_data(as_text=True) == "served"


def test_a_body_over_the_limit_is_413_in_the_blueprints_form(app: Flask, answered: Answered) -> None:
    app.config["KRM_MAX_REQUEST_BYTES"] = 64
    client = app.test_client()
    headers = token(client)
    refused = client.post("/probe/echo", headers=headers, data={"padding": "x" * 100})
    assert refused.status_code == 413
    assert answered == [("blueprint", 413, "The request body is larger than 64 bytes.", "too-large")]
    assert client.post("/probe/echo", headers=headers, data={"padding": "x" * 10}).status_code == 200
    assert client.get("/probe/echo", data="x" * 100).status_code == 200  # a GET's body is not state-changing


def test_the_applications_smaller_limit_wins(app: Flask, answered: Answered) -> None:
    app.config.update(KRM_MAX_REQUEST_BYTES=1000, MAX_CONTENT_LENGTH=32)
    client = app.test_client()
    assert client.post("/probe/echo", headers=token(client), data={"padding": "x" * 100}).status_code == 413
    assert answered[-1][2] == "The request body is larger than 32 bytes."


def test_the_session_follows_the_principal_except_for_a_sessionless_view(
    app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    followed: list[str] = []
    monkeypatch.setattr(KrmRuntime, "follow_principal", lambda self: followed.append("followed") or False)
    client = app.test_client()
    client.get("/probe/echo")
    assert followed == ["followed"]
    client.get("/probe/sessionless")
    assert followed == ["followed"]


def test_a_failing_principal_loader_is_left_to_the_view(app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(self: KrmRuntime) -> bool:
        raise RuntimeError("the user store is down")

    monkeypatch.setattr(KrmRuntime, "follow_principal", fails)
    assert app.test_client().get("/probe/echo").get_data(as_text=True) == "served"


def test_a_host_can_refuse_undecodable_requests_application_wide(app: Flask) -> None:
    app.add_url_rule("/host", "host", lambda: "host view")
    app.before_request(guards.refuse_malformed_request)
    client = app.test_client()
    assert client.get("/host?q=ok").get_data(as_text=True) == "host view"
    refused = client.get("/host", environ_overrides={"QUERY_STRING": "q=\xfe"})
    assert (refused.status_code, refused.get_data(as_text=True)) == (400, guards.MALFORMED_QUERY)
