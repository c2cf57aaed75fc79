"""Host hooks: decorators, required hooks, the principal loader, the authorizer and client loader."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
from flask import Flask

from flask_krm import KrmStream, Principal, Scope
from flask_krm.hooks import MissingHook
from tests.apps import allow, make_app

SCOPE = Scope(target="demo", version="v1", resource="configmaps", namespace="app")


def test_decorators_return_the_function_unchanged() -> None:
    krm = KrmStream()

    def load() -> Principal | None:
        return None

    def allow(principal: Principal, scope: Scope, projection: str, verb: str) -> bool:
        return True

    def client(target: str, principal: Principal) -> t.Any:
        return object()

    def save(request: t.Any) -> t.Any:
        return None

    assert krm.principal_loader(load) is load
    assert krm.authorizer(allow) is allow
    assert krm.client_loader(client) is client
    assert krm.save_hook(save) is save
    assert krm.hooks.saver is save


def test_missing_authorizer_fails_init_app_naming_the_decorator(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    with pytest.raises(MissingHook, match=r"@krm\.authorizer") as caught:
        KrmStream(app)
    assert isinstance(caught.value, RuntimeError)
    assert "krm" not in app.extensions and "krm" not in app.blueprints


def test_an_authorizer_registered_before_init_app_satisfies_it(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    krm = KrmStream()

    @krm.authorizer
    def authorize(principal: Principal, scope: Scope, projection: str, verb: str) -> bool:
        return principal.name == "admin"

    krm.init_app(app)
    with app.app_context():
        assert krm.runtime().decide(Principal("admin"), SCOPE, "krm-full/v1", "watch").allowed
        assert not krm.runtime().decide(Principal("viewer"), SCOPE, "krm-full/v1", "watch").allowed


def test_missing_client_loader_names_the_decorator(app: Flask, krm: KrmStream) -> None:
    with pytest.raises(RuntimeError, match=r"@krm\.client_loader"):
        krm.runtime().client_for("demo", Principal("admin"))


def test_client_loader_receives_target_and_principal(app: Flask, krm: KrmStream) -> None:
    seen: list[tuple[str, Principal]] = []
    sentinel = object()

    @krm.client_loader
    def load(target: str, principal: Principal) -> t.Any:
        seen.append((target, principal))
        return sentinel

    assert krm.runtime().client_for("demo", Principal("editor")) is sentinel
    assert seen == [("demo", Principal("editor"))]


def test_no_save_hook_means_the_default_conditional_write(krm: KrmStream) -> None:
    from flask_krm.save.writer import default_save

    assert krm.hooks.saver is default_save


def test_custom_principal_loader_is_called_once_per_request(app: Flask, krm: KrmStream) -> None:
    calls: list[int] = []

    @krm.principal_loader
    def load() -> Principal:
        calls.append(1)
        return Principal("svc", groups=("ops",))

    with app.test_request_context():
        assert krm.runtime().current_principal() == Principal("svc", groups=("ops",))
        assert krm.runtime().require_principal().groups == ("ops",)
    assert calls == [1]


def test_principal_loader_must_return_a_principal(app: Flask, krm: KrmStream) -> None:
    krm.principal_loader(lambda: "admin")  # type: ignore[type-var]
    with app.test_request_context(), pytest.raises(TypeError, match="must return a flask_krm.Principal or None"):
        krm.runtime().current_principal()


def test_a_refusal_is_forbidden_with_the_verb(app: Flask, krm: KrmStream, authorizer: object) -> None:
    from flask_krm import ScopeDenied

    authorizer.denied_users.add("viewer")  # type: ignore[attr-defined]
    assert krm.runtime().decide(Principal("editor"), SCOPE, "krm-full/v1", "patch").allowed
    refused = krm.runtime().decide(Principal("viewer"), SCOPE, "krm-full/v1", "patch")
    assert not refused.allowed
    with pytest.raises(ScopeDenied, match="You may not patch") as caught:
        raise refused.http_error()
    assert caught.value.code == 403


def test_only_a_true_result_allows(app: Flask, krm: KrmStream) -> None:
    krm.authorizer(lambda *args: "yes")  # type: ignore[type-var]
    assert krm.runtime().decide(Principal("editor"), SCOPE, "krm-full/v1", "watch").allowed is False


KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {token: t0ken}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
"""


def test_a_client_loader_answering_none_means_the_target_service_client(tmp_path: Path) -> None:
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    app = make_app(tmp_path, KRM_TARGETS={"demo": {"kubeconfig": str(tmp_path / "kubeconfig"), "context": "ctx"}})
    krm = KrmStream(app, authorizer=allow, client_loader=lambda target, principal: None)
    with app.app_context():
        client = krm.runtime().client_for("demo", Principal("editor"))
    assert client is krm.runtime(app).api_clients().service("demo")
    assert client.configuration.host == "http://127.0.0.1:1"
    krm.shutdown(app)
