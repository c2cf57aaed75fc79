"""The example's host code on its own: authorization, the save hook, audit, sign-in and pages.

These run in this (unpatched) process with Flask's test client; nothing here opens a stream.
"""

from __future__ import annotations

import re
import typing as t
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from example_app import create_app
from example_app.access import authorize
from example_app.accounts import ACCOUNTS
from example_app.audit import audit_log
from example_app.kinds import CONFIGMAPS, DEPLOYMENTS, SECRETS, scope_policy
from example_app.saving import limit_replicas
from flask_krm import Principal, Scope
from flask_krm.save.audit import AuditRecord, ObjectIdentity
from flask_krm.save.outcomes import OutcomeKind
from flask_krm.save.publish import write_attempted
from flask_krm.save.writer import SaveRefused, WriteRequest, WriteResult
from flask_krm.store import SaveIntent

CSRF_FIELD: t.Final = re.compile(r'name="krm_csrf_token" value="([^"]+)"')
SCOPE: t.Final = CONFIGMAPS.scope("cluster", "demo")


@pytest.fixture
def app(tmp_path: Path) -> Flask:
    app = create_app({"TESTING": True, "KRM_TARGETS": {"cluster": {"kubeconfig": str(tmp_path / "unused")}}})
    app.instance_path = str(tmp_path)
    return app


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def principal(name: str) -> Principal:
    return Principal(name=name, user=ACCOUNTS[name])


@pytest.mark.parametrize(
    ("user", "projection", "verb", "allowed"),
    [
        ("viewer", "krm-full/v1", "watch", True),
        ("viewer", "krm-spec/v1", "get", True),
        ("viewer", "krm-full/v1", "patch", False),
        ("viewer", "krm-full/v1", "create", False),
        ("viewer", "krm-full/v1", "delete", False),
        ("editor", "krm-full/v1", "patch", True),
        ("editor", "krm-spec/v1", "create", True),
        ("editor", "krm-full/v1", "delete", True),
        ("editor", "krm-raw/v1", "watch", False),
        ("viewer", "krm-raw/v1", "get", False),
        ("editor", "krm-full/v1", "escalate", False),
    ],
)
def test_the_authorizer_lets_everyone_read_editors_write_and_nobody_see_raw(
    user: str, projection: str, verb: str, allowed: bool
) -> None:
    assert authorize(principal(user), SCOPE, projection, verb) is allowed


def test_the_authorizer_refuses_a_principal_that_is_not_one_of_our_accounts() -> None:
    assert authorize(Principal(name="editor"), SCOPE, "krm-full/v1", "watch") is False


def test_the_scope_policy_serves_the_example_kinds_in_its_namespaces_only() -> None:
    policy = scope_policy("cluster", ["demo"])
    assert policy.permits(DEPLOYMENTS.scope("cluster", "demo", "web"))
    assert policy.permits(SECRETS.scope("cluster", "demo"))
    assert not policy.permits(CONFIGMAPS.scope("cluster", "kube-system"))
    assert not policy.permits(CONFIGMAPS.scope("other", "demo"))
    assert not policy.permits(Scope(target="cluster", version="v1", resource="pods", namespace="demo"))


def write_request(operation: t.Literal["patch", "create"], document: dict[str, t.Any]) -> WriteRequest:
    intent = SaveIntent("uid-1", "7", document) if operation == "patch" else None
    return WriteRequest(
        operation,
        principal("editor"),
        DEPLOYMENTS.scope("cluster", "demo", "web"),
        "krm-spec/v1",
        t.cast(t.Any, None),
        intent=intent,
        body=document if operation == "create" else None,
    )


def recording_writer(written: list[WriteRequest]) -> t.Callable[[WriteRequest], WriteResult]:
    """A stand-in for the default conditional write: it records the request and reports success."""

    def write(request: WriteRequest) -> WriteResult:
        written.append(request)
        return WriteResult(200, written_version="8")

    return write


def test_the_save_hook_refuses_too_many_replicas_before_any_write() -> None:
    written: list[WriteRequest] = []
    hook = limit_replicas(10, write=recording_writer(written))
    with pytest.raises(SaveRefused) as refused:
        hook(write_request("patch", {"spec": {"replicas": 11}}))
    assert refused.value.kind is OutcomeKind.REFUSED
    assert "at most 10 replicas" in refused.value.detail
    with pytest.raises(SaveRefused):
        hook(write_request("create", {"metadata": {"name": "x"}, "spec": {"replicas": 50}}))
    assert written == []


@pytest.mark.parametrize(
    "document",
    [
        {"spec": {"replicas": 10}},
        {"spec": {"replicas": None}},
        {"spec": None},
        {"data": {"a": "b"}},
        {"spec": {"replicas": True}},
    ],
)
def test_the_save_hook_delegates_everything_else(document: dict[str, t.Any]) -> None:
    written: list[WriteRequest] = []
    hook = limit_replicas(10, write=recording_writer(written))
    assert hook(write_request("patch", document)) == WriteResult(200, written_version="8")
    assert len(written) == 1


def test_the_audit_page_lists_write_attempts_with_their_outcome_and_diff(app: Flask, client: FlaskClient) -> None:
    record = AuditRecord(
        principal="editor",
        target="cluster",
        operation="patch",
        identity=ObjectIdentity("v1", "Secret", "db-credentials", "demo", "uid-9"),
        outcome="saved-pending",
        diff=(
            {"op": "replace", "path": "/metadata/labels/tier", "value": "<b>gold</b>"},
            {"op": "add", "path": "/data/password", "redacted": True},
        ),
        redacted_paths=("/data/password",),
        resource_version="12",
    )
    write_attempted.send(app, record=record)
    write_attempted.send(Flask("another"), record=record)  # another application's writes are not ours
    assert [entry.record for entry in audit_log(app).entries()] == [record]
    sign_in(client, "viewer")
    page = client.get("/audit").get_data(as_text=True)
    assert "Secret demo/db-credentials" in page and ">Saved</span>" in page and "version 12" in page
    assert 'data-outcome="saved"' in page, "an accepted write is final: saved, not saved-pending"
    assert 'replace /metadata/labels/tier = "\\u003cb\\u003egold\\u003c/b\\u003e"' in page
    assert "add /data/password (value withheld)" in page
    assert "<b>gold</b>" not in page


def csrf_token(client: FlaskClient) -> str:
    found = CSRF_FIELD.search(client.get("/sign-in").get_data(as_text=True))
    assert found
    return found.group(1)


def sign_in(client: FlaskClient, user: str, password: str | None = None, next_url: str = "") -> t.Any:
    return client.post(
        "/sign-in" + (f"?next={next_url}" if next_url else ""),
        data={
            "username": user,
            "password": user if password is None else password,
            "krm_csrf_token": csrf_token(client),
        },
    )


def test_pages_need_a_signed_in_account(client: FlaskClient) -> None:
    answer = client.get("/namespaces/demo")
    assert answer.status_code == 302 and answer.location.startswith("/sign-in?next=")


def test_sign_in_checks_the_password_and_the_csrf_token(client: FlaskClient) -> None:
    assert "Unknown user name or wrong password." in sign_in(client, "editor", "nope").get_data(as_text=True)
    assert client.post("/sign-in", data={"username": "editor", "password": "editor"}).status_code == 400
    answer = sign_in(client, "editor", next_url="/audit")
    assert answer.status_code == 302 and answer.location == "/audit"
    assert "Signed in as <strong>editor</strong>" in client.get("/audit").get_data(as_text=True)


@pytest.mark.parametrize("next_url", ["https://evil.example/", "//evil.example/x", "javascript:alert(1)"])
def test_sign_in_never_redirects_off_site(client: FlaskClient, next_url: str) -> None:
    answer = sign_in(client, "viewer", next_url=next_url)
    assert answer.status_code == 302 and answer.location == "/"


def test_sign_out_is_a_post_with_the_csrf_token(client: FlaskClient) -> None:
    sign_in(client, "editor")
    assert client.get("/sign-out").status_code == 405
    assert client.post("/sign-out").status_code == 400
    assert client.post("/sign-out", data={"krm_csrf_token": csrf_token(client)}).status_code == 302
    assert client.get("/audit").status_code == 302


def test_a_namespace_the_example_does_not_serve_is_not_found(client: FlaskClient) -> None:
    sign_in(client, "editor")
    answer = client.get("/namespaces/kube-system/configmaps/x")
    assert answer.status_code == 404
    assert "is not served by this application" in answer.get_data(as_text=True)


def test_configuration_comes_from_defaults_environment_and_the_factory_argument(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLASK_EXAMPLE_NAMESPACES", '["team-a"]')
    monkeypatch.setenv("FLASK_EXAMPLE_MAX_REPLICAS", "3")
    app = create_app({"EXAMPLE_MAX_REPLICAS": 4})
    assert app.config["EXAMPLE_NAMESPACES"] == ["team-a"]
    assert app.config["EXAMPLE_MAX_REPLICAS"] == 4
    assert app.config["KRM_SCOPE_POLICY"].namespaces == frozenset({"team-a"})
    assert len(app.config["SECRET_KEY"]) == 64 and create_app().config["SECRET_KEY"] != app.config["SECRET_KEY"]
