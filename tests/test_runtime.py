"""The runtime of one application: scopes it serves, who is asking, access decisions, plugged
subscriptions, streams tracked for shutdown, draining, and finding the runtime of an application."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from flask import Flask

from flask_krm import KrmStream, Principal, Scope, ScopeInvalid
from flask_krm.access import Verdict
from flask_krm.errors import Unauthenticated
from flask_krm.ops import Snapshot
from flask_krm.runtime import KrmRuntime, find_runtime, install, runtime
from flask_krm.subscriptions import Refused
from tests.apps import AuthorizerLog, allow, make_app


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


def runtime_of(app: Flask) -> KrmRuntime:
    found = find_runtime(app)
    assert found is not None
    return found


SCOPE = Scope(target="demo", version="v1", resource="configmaps", namespace="app")


def test_the_principal_is_loaded_once_per_request(app: Flask, krm: KrmStream) -> None:
    loaded: list[str] = []

    @krm.principal_loader
    def load() -> Principal | None:
        loaded.append("loaded")
        return Principal("ada")

    with app.test_request_context("/"):
        krm_runtime = runtime_of(app)
        assert krm_runtime.current_principal() == Principal("ada")
        assert krm_runtime.require_principal() == Principal("ada")
    with app.test_request_context("/"):
        krm_runtime.current_principal()
    assert loaded == ["loaded", "loaded"]


def test_nobody_signed_in_is_a_401_and_a_loader_returning_something_else_a_type_error(
    app: Flask, krm: KrmStream
) -> None:
    answers: list[object] = [None, "ada"]
    krm.principal_loader(lambda: answers.pop(0))
    with app.test_request_context("/"), pytest.raises(Unauthenticated):
        runtime_of(app).require_principal()
    with app.test_request_context("/"), pytest.raises(TypeError, match="must return a flask_krm.Principal or None"):
        runtime_of(app).current_principal()


def test_a_decision_asks_the_policy_only_when_told_to(app: Flask, krm: KrmStream) -> None:
    outside = Scope(target="demo", version="v1", resource="configmaps", namespace="kube-system")
    krm_runtime = runtime_of(app)
    assert krm_runtime.decide(Principal("ada"), outside, "krm-full/v1", "watch").allowed
    checked = krm_runtime.decide(Principal("ada"), outside, "krm-full/v1", "watch", check_policy=True)
    assert checked.verdict is Verdict.NOT_SERVED


def test_a_plugged_target_is_served_by_its_source_as_the_authorizer_allows(
    app: Flask, krm: KrmStream, authorizer: AuthorizerLog
) -> None:
    krm.plug_source("demo", lambda scope, projection, principal: [Snapshot(())], app)
    krm_runtime = runtime_of(app)
    authorizer.denied_users.add("mallory")
    with app.app_context():
        refused = krm_runtime.subscribe(Principal("mallory"), SCOPE, "krm-full/v1")
        assert isinstance(refused, Refused) and refused.error.code == "FORBIDDEN"
        served = krm_runtime.subscribe(Principal("ada"), SCOPE, "krm-full/v1")
        assert [e.type for batch in served.batches() for e in batch] == ["reset", "synced"]
        asked = len(authorizer.calls)
        decision = krm_runtime.decide(Principal("ada"), SCOPE, "krm-full/v1", "watch")
        covered = krm_runtime.subscribe(Principal("ada"), SCOPE, "krm-full/v1", decision)
        assert len(authorizer.calls) == asked + 1  # the decision's own question, not another
        covered.close()


def test_streams_are_tracked_until_undone_and_ended_at_shutdown(app: Flask) -> None:
    krm_runtime = runtime_of(app)
    ended: list[str] = []

    class Stream:
        def __init__(self, name: str) -> None:
            self.name = name

        def end_for_shutdown(self) -> None:
            ended.append(self.name)

    undo = krm_runtime.track_stream(Stream("gone"))
    krm_runtime.track_stream(Stream("open"))
    undo()
    krm_runtime.shutdown(1.0)
    assert ended == ["open"]
    krm_runtime.shutdown(1.0)
    assert ended == ["open"]
    with pytest.raises(RuntimeError, match="shut down"):
        krm_runtime.subscribe(Principal("ada"), SCOPE, "krm-full/v1")


def test_draining_is_logged_once_and_no_ticker_starts_after_shutdown(
    app: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    krm_runtime = runtime_of(app)
    with caplog.at_level(logging.INFO, logger="flask_krm"):
        krm_runtime.begin_drain()
        krm_runtime.begin_drain()
    assert krm_runtime.draining
    assert [r.getMessage() for r in caplog.records] == ["draining: readiness fails from now on"]
    krm_runtime.shutdown(1.0)
    krm_runtime.start_ticker()
    assert not krm_runtime.ticker.started


def test_an_application_has_one_runtime_found_in_its_context(app: Flask, tmp_path: Path) -> None:
    krm_runtime = runtime_of(app)
    with app.app_context():
        assert runtime() is krm_runtime
    assert runtime(app) is krm_runtime
    with pytest.raises(RuntimeError, match="already been registered"):
        install(app, krm_runtime)
    plain = Flask(__name__, instance_path=str(tmp_path))
    assert find_runtime(plain) is None
    with pytest.raises(RuntimeError):
        runtime(plain)
