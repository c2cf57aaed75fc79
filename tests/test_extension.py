"""Registration: factory pattern, double registration, several apps, unregistered use, shutdown."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask import Flask

from flask_krm import KrmStream
from flask_krm.runtime import KrmRuntime
from tests.apps import allow, make_app


def test_factory_pattern_registers_under_krm(tmp_path: Path) -> None:
    krm = KrmStream(authorizer=allow)
    app = make_app(tmp_path)
    krm.init_app(app)
    assert app.extensions["krm"] is krm.runtime(app)
    assert "krm" in app.blueprints
    assert {r.rule for r in app.url_map.iter_rules() if r.endpoint == "krm.resource_stream"} == {
        "/krm/resource-stream/v1"
    }
    assert app.jinja_env.globals["krm_csrf_token"] is not None


def test_url_prefix_is_configurable(tmp_path: Path) -> None:
    app = make_app(tmp_path, KRM_URL_PREFIX="/live")
    KrmStream(app, authorizer=allow)
    rules = {r.rule for r in app.url_map.iter_rules() if r.endpoint == "krm.resource_stream"}
    assert rules == {"/live/resource-stream/v1"}


def test_registering_twice_on_one_app_is_an_error(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    KrmStream(app, authorizer=allow)
    with pytest.raises(RuntimeError, match="already been registered"):
        KrmStream(app, authorizer=allow)


def test_one_instance_serves_two_apps_with_separate_state(tmp_path: Path) -> None:
    krm = KrmStream(authorizer=allow)
    first = make_app(tmp_path / "a", KRM_URL_PREFIX="/one")
    second = make_app(tmp_path / "b", KRM_URL_PREFIX="/two")
    krm.init_app(first)
    krm.init_app(second)
    assert krm.runtime(first) is not krm.runtime(second)
    assert krm.runtime(first).url_prefix == "/one"
    with second.app_context():
        assert krm.runtime().url_prefix == "/two"
    assert first.test_client().get("/two/resource-stream/v1").status_code == 404
    assert second.test_client().get("/two/resource-stream/v1").status_code == 200


def test_unregistered_app_is_a_clear_error(tmp_path: Path) -> None:
    krm = KrmStream(authorizer=allow)
    app = Flask("other", instance_path=str(tmp_path))
    with app.app_context(), pytest.raises(RuntimeError, match="forget to call 'init_app'"):
        krm.runtime()
    with pytest.raises(RuntimeError, match="application context"):
        krm.runtime()


def test_init_app_spawns_nothing(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    krm = KrmStream(app, authorizer=allow)
    state: KrmRuntime = krm.runtime(app)
    assert len(state.group) == 0
    assert len(state.drafts) == 0


def test_shutdown_is_idempotent_and_refuses_later_streams(app: Flask, krm: KrmStream) -> None:
    krm.shutdown(app)
    krm.shutdown(app)
    assert krm.runtime(app).shut_down
    client = app.test_client()
    client.get("/login/admin")
    response = client.get("/krm/resource-stream/v1?target=demo&version=v1&resource=configmaps&namespace=app")
    assert response.data == (
        b'data: {"seq":1,"type":"error","code":"INTERNAL","message":"the server is shutting down","terminal":true}\n\n'
    )


def test_init_app_adds_the_krm_command_group(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    assert "krm" not in app.cli.commands
    KrmStream(app, authorizer=allow)
    result = app.test_cli_runner().invoke(args=["krm", "--help"])
    assert result.exit_code == 0
    assert "check" in result.output and "streams" in result.output


def test_registered_hooks_names_only_what_the_host_registered(tmp_path: Path) -> None:
    def authorize(*args: object) -> bool:
        return True

    krm = KrmStream(make_app(tmp_path), authorizer=authorize)
    hooks = krm.hooks.registered()
    assert hooks.authorizer is authorize
    assert hooks.principal_loader is None and hooks.client_loader is None and hooks.save_hook is None


def public_members(obj: object) -> set[str]:
    """The public names of an object: its class's and its own attributes."""
    return {name for name in [*dir(type(obj)), *vars(obj)] if not name.startswith("_")}


def test_the_extension_is_the_host_face_with_at_most_15_public_members(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    krm = KrmStream(app, authorizer=allow)
    members = public_members(krm)
    assert len(members) <= 15, sorted(members)
    # what it does not mirror is reached through the runtime
    assert not members & {"current_principal", "decide", "subscribe", "setting", "api_clients", "greenlets"}
    assert {"current_principal", "decide", "subscribe", "setting", "api_clients", "group"} <= public_members(
        krm.runtime(app)
    )


def test_the_runtime_outside_a_context_is_the_only_app_served(tmp_path: Path) -> None:
    krm = KrmStream(authorizer=allow)
    first = make_app(tmp_path / "a")
    krm.init_app(first)
    assert krm.runtime() is first.extensions["krm"]
    krm.init_app(make_app(tmp_path / "b"))
    with pytest.raises(RuntimeError, match="application context"):
        krm.runtime()
