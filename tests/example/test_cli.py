"""``flask krm check`` and ``flask krm streams``, on the example application."""

from __future__ import annotations

import http.cookiejar
import json
import re
import socket
import subprocess
import sys
import threading
import typing as t
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from flask import Flask

from example_app import create_app
from flask_krm.cli import format_status, krm_cli
from flask_krm.testing import KubeSimulator

from .conftest import ROOT, Example, clean_environment

CSRF_FIELD: t.Final = re.compile(r'name="krm_csrf_token" value="([^"]+)"')


@pytest.fixture
def kube() -> Iterator[KubeSimulator]:
    with KubeSimulator(demo=True, demo_tick=None) as simulator:
        yield simulator


def example(tmp_path: Path, context: str | None, kubeconfig: str, **config: t.Any) -> Flask:
    target: dict[str, str] = {"kubeconfig": kubeconfig}
    if context:
        target["context"] = context
    app = create_app({"KRM_TARGETS": {"cluster": target}, **config})
    app.instance_path = str(tmp_path)
    return app


def check(app: Flask) -> tuple[int, str]:
    result = app.test_cli_runner().invoke(krm_cli, ["check", "--timeout", "5"])
    return result.exit_code, result.output


def test_check_passes_for_the_example_on_the_simulator(kube: KubeSimulator, tmp_path: Path) -> None:
    code, output = check(example(tmp_path, "admin", kube.kubeconfig_path))
    assert code == 0, output
    assert "Everything needed is in place." in output
    assert "KRM_SCOPE_POLICY = targets cluster; resources configmaps, secrets, deployments.apps," in output
    assert "ok   the API server answers (HTTP 200, Kubernetes v" in output
    assert "note reads and writes impersonate each person" in output  # what the client loader answered
    assert "ok   users at the cluster scope: impersonate granted" in output
    assert "FAIL" not in output


def test_check_asks_for_every_verb_the_service_identity_needs(kube: KubeSimulator, tmp_path: Path) -> None:
    code, output = check(example(tmp_path, "admin", kube.kubeconfig_path, EXAMPLE_IMPERSONATE=False))
    assert code == 0, output
    assert "note the target's own identity reads and writes" in output
    assert (
        "ok   flunders.wardle.example.com (wardle.example.com/v1alpha1) in demo:"
        " get, list, watch, patch, delete granted"
    ) in output
    assert "ok   configmaps (v1) in demo-staging: get, list, watch, create, patch, delete granted" in output
    assert "impersonate" not in output


def test_check_fails_when_the_identity_may_not_impersonate(kube: KubeSimulator, tmp_path: Path) -> None:
    kube.add_user("nobody")
    code, output = check(example(tmp_path, "nobody", kube.kubeconfig_path))
    assert code == 1
    assert "FAIL users at the cluster scope: impersonate not granted" in output
    assert "1 problem found" in output


def test_check_names_the_writes_a_reader_may_not_make(kube: KubeSimulator, tmp_path: Path) -> None:
    code, output = check(example(tmp_path, "viewer", kube.kubeconfig_path, EXAMPLE_IMPERSONATE=False))
    assert code == 1, output
    assert "FAIL secrets (v1) in demo-staging: patch, delete not granted (granted: get, list, watch)" in output
    assert "FAIL configmaps (v1) in demo: create, patch, delete not granted (granted: get, list, watch)" in output
    assert re.search(r"^8 problems found$", output, re.MULTILINE)


def test_check_reports_an_unreachable_api_server_and_a_missing_resource(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "gone",
                "clusters": [{"name": "gone", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "gone", "user": {"token": "x"}}],
                "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "gone"}}],
            }
        )
    )
    code, output = check(example(tmp_path, None, str(kubeconfig)))
    assert code == 1
    assert "Target cluster (kubeconfig " in output and ", current context)" in output
    assert "FAIL the API server does not answer" in output


def test_check_reports_configuration_mistakes(tmp_path: Path) -> None:
    app = create_app({"KRM_TARGETS": {}})
    app.config["KRM_QUEUE_DEPTH"] = 0  # a use-time key changed on the running application
    code, output = check(app)
    assert code == 1
    assert "FAIL KRM_QUEUE_DEPTH must be a positive integer, got 0" in output
    assert "FAIL the scope policy serves target 'cluster', which KRM_TARGETS does not configure" in output


def rbac(app: Flask, *arguments: str) -> tuple[int, str]:
    result = app.test_cli_runner().invoke(krm_cli, ["rbac", *arguments])
    return result.exit_code, result.output


def test_rbac_for_an_impersonating_host_grants_only_impersonation_and_prints_the_peoples_roles(
    kube: KubeSimulator, tmp_path: Path
) -> None:
    code, output = rbac(example(tmp_path, "admin", kube.kubeconfig_path), "--namespace", "tools")
    assert code == 0, output
    assert output.startswith("# RBAC for target 'cluster'")
    assert "# ServiceAccount tools/flask-krm: reads and writes impersonate each person." in output
    documents = [d for d in yaml.safe_load_all(output) if d]
    assert [(d["kind"], d["metadata"]["name"], d["metadata"].get("namespace")) for d in documents] == [
        ("ClusterRole", "flask-krm", None),
        ("ClusterRoleBinding", "flask-krm", None),
        ("Role", "flask-krm-people", "demo"),
        ("Role", "flask-krm-people", "demo-staging"),
    ]
    assert documents[0]["rules"] == [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"]}]
    assert documents[1]["subjects"] == [{"kind": "ServiceAccount", "name": "flask-krm", "namespace": "tools"}]


def test_rbac_for_the_services_own_identity_names_every_verb_per_resource(kube: KubeSimulator, tmp_path: Path) -> None:
    app = example(tmp_path, "admin", kube.kubeconfig_path, EXAMPLE_NAMESPACES=("demo",))
    code, output = rbac(app, "--identity", "service", "--service-account", "app", "--name", "app-editor")
    assert code == 0, output
    role, binding = (d for d in yaml.safe_load_all(output) if d)
    assert (role["kind"], role["metadata"]) == ("Role", {"name": "app-editor", "namespace": "demo"})
    assert {rule["resources"][0]: rule["verbs"] for rule in role["rules"]} == {
        "configmaps": ["get", "list", "watch", "create", "patch", "delete"],  # the review list creates these
        "secrets": ["get", "list", "watch", "patch", "delete"],
        "deployments": ["get", "list", "watch", "patch", "delete"],
        "flunders": ["get", "list", "watch", "patch", "delete"],
    }
    assert binding["roleRef"]["name"] == "app-editor"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "app", "namespace": "default"}]


def test_rbac_says_what_it_cannot_tell(tmp_path: Path) -> None:
    in_cluster = create_app({"KRM_TARGETS": {"cluster": {"in_cluster": True, "service_account_dir": str(tmp_path)}}})
    code, output = rbac(in_cluster)  # impersonation needs the target's client, which has no token here
    assert code == 1
    assert "say whom requests act as with --identity service, impersonation or own-credentials" in output
    code, output = rbac(in_cluster, "--target", "elsewhere")
    assert code == 2
    assert "the scope policy serves no target 'elsewhere'" in output


def test_check_refuses_an_application_without_flask_krm() -> None:
    result = Flask("plain").test_cli_runner().invoke(krm_cli, ["check"])
    assert result.exit_code == 1
    assert "this application does not use flask-krm" in result.output


def test_streams_says_when_no_server_runs(tmp_path: Path) -> None:
    app = create_app()
    app.instance_path = str(tmp_path)
    result = app.test_cli_runner().invoke(krm_cli, ["streams"])
    assert result.exit_code == 1
    assert f"no running server found: no status socket in {tmp_path}" in result.output


def sign_in(url: str, user: str) -> urllib.request.OpenerDirector:
    """A cookie-keeping HTTP client signed in to the example as ``user`` (landing on the audit page,
    which has no live components)."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    form = opener.open(f"{url}/sign-in", timeout=10).read().decode()
    token = CSRF_FIELD.search(form)
    assert token, form
    body = urllib.parse.urlencode({"username": user, "password": user, "krm_csrf_token": token.group(1)}).encode()
    landed = opener.open(f"{url}/sign-in?next=/audit", data=body, timeout=10)
    assert landed.geturl().endswith("/audit")
    return opener


def test_streams_lists_a_running_servers_watches_and_page_channels(example_server: Example) -> None:
    browser = sign_in(example_server.url, "editor")
    page = browser.open(f"{example_server.url}/namespaces/demo/configmaps/app-config", timeout=10).read().decode()
    channel_url = re.search(r'hx-sse:connect="([^"]+)"', page)
    assert channel_url, page
    channel = browser.open(example_server.url + channel_url.group(1), timeout=30)
    connected = threading.Event()
    received: list[bytes] = []

    def read_channel() -> None:
        received.append(channel.readline())
        connected.set()
        while line := channel.readline():
            received.append(line)

    reader = threading.Thread(target=read_channel)
    reader.start()
    assert connected.wait(timeout=10)
    done = subprocess.run(
        [sys.executable, "-m", "flask", "--app", "example_app", "krm", "streams"],
        cwd=ROOT,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert example_server.stop() == 0  # a clean shutdown ends the page's channel for good
    reader.join(timeout=10)
    assert not reader.is_alive()
    channel.close()
    assert b"event: krm-close\n" in received and b"data: The server is restarting" in b"".join(received)

    assert done.returncode == 0, done.stderr
    section = next(s for s in done.stdout.split("Server process ") if s.startswith(f"{example_server.process.pid}\n"))
    assert section.splitlines()[1:] == [
        "  Upstream watches: 1",
        section.splitlines()[2],
        "  Page channels: 1",
        "    editor: cluster: configmaps in demo named app-config [editor, krm-full/v1]",
        "  JSON streams: 0",
    ]
    assert re.fullmatch(r"    cluster: configmaps in demo named app-config \(open \d+s\)", section.splitlines()[2])


def test_streams_formats_json_streams_with_their_age() -> None:
    status = {
        "pid": 7,
        "watches": [],
        "pages": [],
        "streams": [
            {
                "scope": {"target": "t", "group": "apps", "version": "v1", "resource": "deployments", "namespace": "n"},
                "since": 100.0,
                "principal": "ada",
                "projection": "krm-spec/v1",
            }
        ],
    }
    lines = list(format_status(status, now=165.0))
    assert lines == [
        "Server process 7",
        "  Upstream watches: 0",
        "  Page channels: 0",
        "  JSON streams: 1",
        "    ada: t: deployments.apps in n [krm-spec/v1] (open 1m05s)",
    ]


def test_streams_removes_the_socket_of_a_server_that_died_without_cleaning_up(tmp_path: Path) -> None:
    dead_pid = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_pid.wait(timeout=30)
    stale = tmp_path / f"krm-status-{dead_pid.pid}.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(stale))  # bound, never served: what a killed server leaves behind
    app = create_app()
    app.instance_path = str(tmp_path)
    result = app.test_cli_runner().invoke(krm_cli, ["streams"])
    assert result.exit_code == 1
    assert f"krm-status-{dead_pid.pid}.sock: removed; its server process is gone" in result.output
    assert not stale.exists()
