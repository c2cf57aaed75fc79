"""The runtime of one application: scopes it serves, who is asking, access decisions, plugged
subscriptions, streams tracked for shutdown, draining, and finding the runtime of an application."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask import Flask

from flask_krm import KrmStream, Scope, ScopeInvalid
from tests.apps import allow, make_app


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("target=demo&version=v1&resource=ConfigMap&namespace=app", "looks like a Kind"),
        ("target=demo&version=v1&resource=configmaps", "a namespace is required"),
        ("target=demo&version=v1&resource=configmaps&namespace=app&token=abc", "'token' parameter is refused"),
    ],
)
def test_scope_from_refuses_with_a_400(app: Flask, krm: KrmStream, query: str, message: str) -> None:
    with app.app_context(), pytest.raises(ScopeInvalid, match=message) as caught:
        krm.runtime().scope_from(query)
    assert caught.value.code == 400


def test_scope_from_refuses_a_target_that_is_not_configured(tmp_path: Path) -> None:
    app = make_app(tmp_path, KRM_TARGETS={})
    krm = KrmStream(app, authorizer=allow)
    with app.app_context(), pytest.raises(ScopeInvalid, match="target 'demo' is not served here"):
        krm.runtime().scope_from("target=demo&version=v1&resource=configmaps&namespace=app")
    krm.plug_source("demo", lambda scope, projection, principal: [], app)
    with app.app_context():
        assert krm.runtime().scope_from(
            {"target": "demo", "version": "v1", "resource": "configmaps", "namespace": "app"}
        ) == Scope(target="demo", version="v1", resource="configmaps", namespace="app")
