"""The ``flask krm`` commands' own logic, without a cluster: the configuration check, the RBAC
YAML, the stream tracker, the status snapshot and its lines, and status socket housekeeping (the
commands against the example and the simulator are in ``tests/example/test_cli.py``)."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import click
import pytest
import yaml
from flask import Flask

from flask_krm import KrmStream, Principal, Scope, signals
from flask_krm.cli import (
    StreamTracker,
    check_configuration,
    format_status,
    rbac_yaml,
    remove_if_stale,
    runtime_of,
    snapshot,
    socket_path,
    socket_pid,
    status_sockets,
)
from tests.apps import allow, make_app

CONFIGMAPS = Scope(target="demo", version="v1", resource="configmaps", namespace="app")
SECRETS = Scope(target="demo", version="v1", resource="secrets", namespace="app")


def findings(app: Flask) -> list[tuple[str, str]]:
    with app.app_context():
        return [(f.status, f.text) for f in check_configuration(app, runtime_of(app)).findings]


def test_the_check_lists_every_setting_and_fails_without_a_client_loader_for_configured_targets(app: Flask) -> None:
    found = findings(app)
    assert ("ok", "authorizer registered") in found
    assert ("FAIL", "no client loader: Kubernetes targets need @krm.client_loader") in found
    assert ("ok", "save hook: the default conditional write") in found
    assert ("ok", "KRM_TARGETS = demo") in found
    policy = next(text for status, text in found if text.startswith("KRM_SCOPE_POLICY = "))
    assert policy == (
        "KRM_SCOPE_POLICY = targets demo; resources configmaps, secrets, deployments.apps; namespaces app"
    )
    assert not [text for status, text in found if status == "FAIL" and "scope policy" in text]


def test_the_check_names_a_bad_value_and_a_policy_at_odds_with_the_targets(tmp_path: Path) -> None:
    app = make_app(tmp_path, KRM_TARGETS={"other": {"kubeconfig": "x"}})
    KrmStream(app, authorizer=allow)
    app.config["KRM_HEARTBEAT_INTERVAL"] = "often"  # changed after init_app checked it
    found = findings(app)
    assert any(status == "FAIL" and "KRM_HEARTBEAT_INTERVAL" in text for status, text in found)
    assert ("FAIL", "the scope policy serves target 'demo', which KRM_TARGETS does not configure") in found
    assert ("note", "target 'other' is configured but the scope policy does not serve it") in found


def test_the_commands_refuse_an_application_without_flask_krm(tmp_path: Path) -> None:
    with pytest.raises(click.ClickException, match="does not use flask-krm"):
        runtime_of(Flask(__name__, instance_path=str(tmp_path)))


def test_rbac_yaml_is_comments_then_one_document_per_object() -> None:
    objects = [{"kind": "Role", "metadata": {"name": "a"}}, {"kind": "RoleBinding", "metadata": {"name": "b"}}]
    text = rbac_yaml(objects, ["for the editors", "", "apply with kubectl"])
    assert text.startswith("# for the editors\n#\n# apply with kubectl\n---\nkind: Role\n")
    assert list(yaml.safe_load_all(text)) == objects
    assert rbac_yaml([], ["nothing needed"]) == "# nothing needed\n"


def test_the_tracker_counts_each_open_stream_and_watch_of_its_application(app: Flask) -> None:
    other = Flask("other")
    tracker = StreamTracker(app)
    try:
        ada = Principal("ada")
        for sender in (app, app, other):
            signals.stream_opened.send(sender, principal=ada, scope=CONFIGMAPS, projection="krm-full/v1")
        signals.watch_started.send(app, target="demo", scope=SECRETS)
        assert [(s.principal, s.scope, s.projection) for s in tracker.streams()] == [
            ("ada", CONFIGMAPS.to_wire(), "krm-full/v1")
        ] * 2
        assert [w.scope for w in tracker.watches()] == [SECRETS.to_wire()]
        signals.stream_closed.send(app, principal=ada, scope=CONFIGMAPS, projection="krm-full/v1", reason="ended")
        assert len(tracker.streams()) == 1
        signals.stream_closed.send(app, principal=ada, scope=CONFIGMAPS, projection="krm-full/v1", reason="ended")
        signals.stream_closed.send(app, principal=ada, scope=CONFIGMAPS, projection="krm-full/v1", reason="ended")
        signals.watch_stopped.send(app, target="demo", scope=SECRETS)
        assert tracker.streams() == [] and tracker.watches() == []
    finally:
        tracker.disconnect()
    signals.watch_started.send(app, target="demo", scope=SECRETS)
    assert tracker.watches() == []


def test_the_snapshot_holds_the_process_its_watches_streams_and_pages(app: Flask) -> None:
    tracker = StreamTracker(app)
    try:
        signals.watch_started.send(app, target="demo", scope=SECRETS)
        with app.app_context():
            status = snapshot(app, tracker)
    finally:
        tracker.disconnect()
    assert status["pages"] == [] and status["streams"] == []
    assert [w["scope"] for w in status["watches"]] == [SECRETS.to_wire()]
    assert isinstance(status["pid"], int)


def test_the_status_lines_name_watches_and_pages_with_their_ages() -> None:
    status = {
        "pid": 9,
        "watches": [{"scope": {"target": "t", "resource": "configmaps", "name": "web"}, "since": 0.0}],
        "pages": [
            {
                "principal": "ada",
                "components": [{"scope": CONFIGMAPS.to_wire(), "kind": "list", "projection": "krm-full/v1"}],
            },
            {"principal": "bob", "components": []},
        ],
        "streams": [],
    }
    assert list(format_status(status, now=3725.0)) == [
        "Server process 9",
        "  Upstream watches: 1",
        "    t: configmaps named web (open 62m05s)",
        "  Page channels: 2",
        "    ada: demo: configmaps in app [list, krm-full/v1]",
        "    bob: no components",
        "  JSON streams: 0",
    ]
    assert list(format_status({"pid": 1}, now=0.0))[1:] == [
        "  Upstream watches: 0",
        "  Page channels: 0",
        "  JSON streams: 0",
    ]


def test_a_status_socket_is_named_after_its_process(tmp_path: Path) -> None:
    app = Flask(__name__, instance_path=str(tmp_path))
    path = socket_path(app, pid=4242)
    assert path.parent == tmp_path
    assert socket_pid(path) == 4242
    assert socket_pid(tmp_path / "krm-status-abc.sock") is None
    assert socket_pid(tmp_path / "other-4242.sock") is None


def test_only_sockets_are_status_sockets_and_a_dead_servers_is_removed(tmp_path: Path) -> None:
    app = Flask(__name__, instance_path=str(tmp_path))
    finished = subprocess.Popen(["true"])
    finished.wait()
    dead, alive = socket_path(app, finished.pid), socket_path(app)
    listeners = []
    for path in (dead, alive):
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        listeners.append(listener)
    socket_path(app, 7).write_text("not a socket")
    try:
        assert status_sockets(app) == sorted([dead, alive])
        assert remove_if_stale(dead) and not dead.exists()
        assert not remove_if_stale(alive) and alive.exists()
        assert not remove_if_stale(tmp_path / "unrelated.sock")
    finally:
        for listener in listeners:
            listener.close()
    assert status_sockets(Flask(__name__, instance_path=str(tmp_path / "missing"))) == []
