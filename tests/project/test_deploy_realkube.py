"""``deploy/`` against the real kube-apiserver: the manifests pass a server-side dry run, and the
example runs as a pod would, as its ServiceAccount with exactly the generated RBAC.

The pod is imitated on this machine: the RBAC of ``deploy/base`` is applied for real, a token for
the ServiceAccount is minted with a TokenRequest, and the image's command (the Dockerfile's
``ENTRYPOINT``) runs with the Deployment's environment, ``KUBERNETES_SERVICE_HOST``/``PORT`` and a
service account folder holding ``token``, ``ca.crt`` and ``namespace`` (the target's
``service_account_dir``; a pod has them at ``/var/run/secrets/kubernetes.io/serviceaccount``).
"""

from __future__ import annotations

import json
import secrets
import signal
import socket
import subprocess
import sys
import time
import typing as t
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import kubernetes.client
import pytest
import yaml
from kubernetes.client.exceptions import ApiException
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.example.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.project.deployment import (
    APP,
    APP_NAMESPACE,
    BASE,
    REDIS_OVERLAY,
    ROOT,
    SERVED_NAMESPACE,
    container_environment,
    find,
    flask_krm,
    host_environment,
    image_entrypoint,
    kustomize,
    objects,
)
from tests.realkube import KubeApiServer

pytestmark = [pytest.mark.apiserver, pytest.mark.browser]
WAIT_MS: t.Final = 15_000
RBAC_WAIT: t.Final = 20.0
DEPLOYMENT: t.Final = "web"
CONFIGMAP: t.Final = "app-config"
SSAR: t.Final = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


def kubectl(kube: KubeApiServer, *arguments: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", kube.kubeconfig_path, "--context", "admin", *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def create(call: t.Callable[[], object]) -> None:
    """Create something that a previous run in this session may have created already."""
    try:
        call()
    except ApiException as error:
        if error.status != 409:
            raise


def deployment(name: str) -> dict[str, t.Any]:
    labels = {"app": name}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }


@pytest.fixture(scope="module")
def namespaces(real_kube: KubeApiServer) -> KubeApiServer:
    """The application's namespace and the one it serves, with a ConfigMap and a Deployment."""
    with real_kube.api_client("admin") as admin:
        core, apps = kubernetes.client.CoreV1Api(admin), kubernetes.client.AppsV1Api(admin)
        for name in (APP_NAMESPACE, SERVED_NAMESPACE):
            create(lambda name=name: core.create_namespace({"metadata": {"name": name}}))
        create(
            lambda: core.create_namespaced_config_map(
                SERVED_NAMESPACE, {"metadata": {"name": CONFIGMAP}, "data": {"greeting": "hello"}}
            )
        )
        create(lambda: apps.create_namespaced_deployment(SERVED_NAMESPACE, deployment(DEPLOYMENT)))
    return real_kube


@pytest.mark.parametrize("directory", [BASE, REDIS_OVERLAY], ids=["base", "redis-overlay"])
def test_deploy_renders_and_passes_a_server_side_dry_run_apply(namespaces: KubeApiServer, directory: Path) -> None:
    rendered = kustomize(directory)
    applied = kubectl(namespaces, "apply", "--server-side", "--dry-run=server", "-f", "-", stdin=rendered)
    assert applied.returncode == 0, applied.stderr
    lines = applied.stdout.splitlines()
    assert len(lines) == len(objects(rendered))
    assert all(line.endswith("serverside-applied (server dry run)") for line in lines), applied.stdout
    with namespaces.api_client("admin") as admin:  # a dry run stores nothing
        with pytest.raises(ApiException) as missing:
            kubernetes.client.AppsV1Api(admin).read_namespaced_deployment(APP, APP_NAMESPACE)
    assert missing.value.status == 404


def test_the_rbac_of_an_impersonating_configuration_passes_a_server_side_dry_run(namespaces: KubeApiServer) -> None:
    """The example's default: it impersonates the signed-in person (a ClusterRole, people's Roles)."""
    env = host_environment(
        {"FLASK_KRM_TARGETS": json.dumps({"cluster": {"kubeconfig": namespaces.kubeconfig_path}})},
        FLASK_EXAMPLE_NAMESPACES=json.dumps([SERVED_NAMESPACE]),
    )
    printed = flask_krm(env, "krm", "rbac", "--namespace", APP_NAMESPACE, "--name", "impersonating-example")
    assert printed.returncode == 0, printed.stderr
    assert [o["kind"] for o in objects(printed.stdout)] == ["ClusterRole", "ClusterRoleBinding", "Role"]
    applied = kubectl(namespaces, "apply", "--server-side", "--dry-run=server", "-f", "-", stdin=printed.stdout)
    assert applied.returncode == 0, applied.stderr
    assert len(applied.stdout.splitlines()) == 3


@dataclass
class Pod:
    """What a pod of the Deployment would have: its environment and its service account folder."""

    kube: KubeApiServer
    token: str
    env: dict[str, str]

    def api_client(self) -> kubernetes.client.ApiClient:
        """The official client acting as the pod's ServiceAccount."""
        configuration = kubernetes.client.Configuration()
        configuration.host = self.kube.url
        configuration.ssl_ca_cert = self.kube.ca_path
        configuration.api_key = {"authorization": self.token}
        configuration.api_key_prefix = {"authorization": "Bearer"}
        return kubernetes.client.ApiClient(configuration)

    def may(self, verb: str, group: str, resource: str, namespace: str) -> bool:
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {
                "resourceAttributes": {"verb": verb, "group": group, "resource": resource, "namespace": namespace}
            },
        }
        with self.api_client() as api:
            answer = kubernetes.client.AuthorizationV1Api(api).create_self_subject_access_review(review)
        return bool(answer.status.allowed)

    def await_access(self, verb: str, group: str, resource: str, allowed: bool) -> None:
        """RBAC reads roles through an informer: wait until a change is in effect."""
        deadline = time.monotonic() + RBAC_WAIT
        while self.may(verb, group, resource, SERVED_NAMESPACE) != allowed:
            assert time.monotonic() < deadline, f"{verb} {resource} still {'denied' if allowed else 'allowed'}"
            time.sleep(0.1)


def rbac_of_base() -> list[dict[str, t.Any]]:
    """The ServiceAccount and the RBAC objects of ``deploy/base``."""
    kinds = {"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}
    return [o for o in objects(kustomize(BASE)) if o["kind"] in kinds]


@pytest.fixture(scope="module")
def pod(namespaces: KubeApiServer, tmp_path_factory: pytest.TempPathFactory) -> Pod:
    kube = namespaces
    applied = kubectl(kube, "apply", "-f", "-", stdin=yaml.safe_dump_all(rbac_of_base()))
    assert applied.returncode == 0, applied.stderr
    with kube.api_client("admin") as admin:
        minted = kubernetes.client.CoreV1Api(admin).create_namespaced_service_account_token(
            APP, APP_NAMESPACE, {"spec": {"audiences": [], "expirationSeconds": 3600}}
        )
    folder = tmp_path_factory.mktemp("serviceaccount")
    (folder / "token").write_text(minted.status.token)
    (folder / "ca.crt").write_bytes(Path(kube.ca_path).read_bytes())
    (folder / "namespace").write_text(APP_NAMESPACE)
    deployment_env = container_environment(objects(kustomize(BASE)))
    target = json.loads(deployment_env["FLASK_KRM_TARGETS"])
    target["cluster"]["service_account_dir"] = str(folder)
    env = host_environment(
        deployment_env,
        FLASK_KRM_TARGETS=json.dumps(target),
        FLASK_SECRET_KEY=secrets.token_hex(32),
        KUBERNETES_SERVICE_HOST="127.0.0.1",
        KUBERNETES_SERVICE_PORT=kube.url.rsplit(":", 1)[1],
    )
    made = Pod(kube, minted.status.token, env)
    made.await_access("patch", "apps", "deployments", allowed=True)
    return made


def test_check_reports_every_needed_verb_granted(pod: Pod) -> None:
    checked = flask_krm(pod.env, "krm", "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    output = checked.stdout
    assert "Target cluster (in-cluster service account)" in output
    assert "note the target's own identity reads and writes" in output
    assert "ok   configmaps (v1) in demo: get, list, watch, create, patch, delete granted" in output
    assert "ok   deployments.apps (apps/v1) in demo: get, list, watch, patch, delete granted" in output
    assert "ok   flunders.wardle.example.com (wardle.example.com/v1alpha1) in demo: get, list, watch, patch" in output
    assert "Everything needed is in place." in output


def test_kubernetes_refuses_the_service_account_what_the_configuration_does_not_need(pod: Pod) -> None:
    with pod.api_client() as api:
        core, apps = kubernetes.client.CoreV1Api(api), kubernetes.client.AppsV1Api(api)
        assert core.read_namespaced_config_map(CONFIGMAP, SERVED_NAMESPACE).data == {"greeting": "hello"}
        refused = []
        for write in (
            lambda: core.create_namespaced_config_map("default", {"metadata": {"name": "outside"}}),
            lambda: core.list_namespaced_config_map(APP_NAMESPACE),
            lambda: apps.create_namespaced_deployment(SERVED_NAMESPACE, deployment("new")),
            lambda: core.list_namespaced_pod(SERVED_NAMESPACE),
        ):
            with pytest.raises(ApiException) as caught:
                write()
            refused.append(caught.value.status)
    assert refused == [403, 403, 403, 403]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def served(pod: Pod, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The image's command, on a free loopback port, in the pod's environment; its base URL."""
    port = free_port()
    command = [str(Path(sys.executable).parent / "gunicorn"), *image_entrypoint()[1:]]
    command[command.index("0.0.0.0:8000")] = f"127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("gunicorn") / "gunicorn.log"
    with log.open("wb") as output:
        process = subprocess.Popen(command, cwd=ROOT, env=pod.env, stdout=output, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()[-4000:]
            assert time.monotonic() < deadline, log.read_text()[-4000:]
            try:
                with urllib.request.urlopen(f"{url}/sign-in", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except (OSError, urllib.error.URLError):
                time.sleep(0.2)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


def sign_in(browser: Browser, url: str, user: str) -> Page:
    page = browser.new_context(base_url=url, viewport={"width": 390, "height": 844}).new_page()
    page.goto("/sign-in")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", user)
    page.click("button[type=submit]")
    expect(page.locator("header.site .who strong")).to_have_text(user, timeout=WAIT_MS)
    return page


def press_save(page: Page) -> t.Any:
    outcome = page.locator(".krm-editor .krm-outcome [data-krm-outcome]")
    page.click(".krm-action-save")
    return outcome


def test_the_pages_list_watch_and_save_as_the_service_account(pod: Pod, served: str, browser: Browser) -> None:
    page = sign_in(browser, served, "editor")
    page.goto(f"/namespaces/{SERVED_NAMESPACE}")
    expect(page.get_by_text(CONFIGMAP, exact=True).first).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_text(DEPLOYMENT, exact=True).first).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".krm-connection").first).to_have_text("Live", timeout=WAIT_MS)
    with pod.kube.api_client("admin") as admin:  # someone else adds a ConfigMap: the list follows
        kubernetes.client.CoreV1Api(admin).create_namespaced_config_map(
            SERVED_NAMESPACE, {"metadata": {"name": "added-live"}, "data": {"k": "v"}}
        )
    expect(page.get_by_text("added-live", exact=True).first).to_be_visible(timeout=WAIT_MS)

    page.goto(f"/namespaces/{SERVED_NAMESPACE}/deployments/{DEPLOYMENT}")
    expect(page.locator(".krm-editor .krm-connection")).to_have_text("Live", timeout=WAIT_MS)
    replicas = page.get_by_role("spinbutton", name="Replicas", exact=True)
    expect(replicas).to_have_value("2", timeout=WAIT_MS)
    replicas.fill("3")
    expect(press_save(page)).to_have_attribute("data-krm-outcome", "saved", timeout=WAIT_MS)
    with pod.kube.api_client("admin") as admin:
        saved = kubernetes.client.AppsV1Api(admin).read_namespaced_deployment(DEPLOYMENT, SERVED_NAMESPACE)
    assert saved.spec.replicas == 3


def test_with_one_verb_removed_check_names_it_and_the_refused_save_is_shown(
    pod: Pod, served: str, browser: Browser
) -> None:
    role = find(rbac_of_base(), "Role")
    without_patch = json.loads(json.dumps(role))
    for rule in without_patch["rules"]:
        if rule["resources"] == ["deployments"]:
            rule["verbs"].remove("patch")
    try:
        replaced = kubectl(pod.kube, "apply", "-f", "-", stdin=yaml.safe_dump(without_patch))
        assert replaced.returncode == 0, replaced.stderr
        pod.await_access("patch", "apps", "deployments", allowed=False)

        checked = flask_krm(pod.env, "krm", "check")
        assert checked.returncode == 1, checked.stdout
        assert (
            "FAIL deployments.apps (apps/v1) in demo: patch not granted (granted: get, list, watch, delete)"
        ) in checked.stdout
        assert "1 problem found" in checked.stdout

        page = sign_in(browser, served, "editor")
        page.goto(f"/namespaces/{SERVED_NAMESPACE}/deployments/{DEPLOYMENT}")
        expect(page.locator(".krm-editor .krm-connection")).to_have_text("Live", timeout=WAIT_MS)
        replicas = page.get_by_role("spinbutton", name="Replicas", exact=True)
        expect(replicas).to_have_value("3", timeout=WAIT_MS)
        replicas.fill("5")
        expect(press_save(page)).to_have_attribute("data-krm-outcome", "access-denied", timeout=WAIT_MS)
        shown = page.locator(".krm-editor .krm-outcome")
        expect(shown).to_contain_text("You do not have permission to make this change. Your edits are still here.")
        expect(shown).to_contain_text(
            'User "system:serviceaccount:flask-krm:flask-krm-example" cannot patch resource "deployments"'
        )
        expect(replicas).to_have_value("5")  # the draft stays
        page.screenshot(path="/tmp/flask-krm-rbac-refused-save.png", full_page=True)
        with pod.kube.api_client("admin") as admin:
            kept = kubernetes.client.AppsV1Api(admin).read_namespaced_deployment(DEPLOYMENT, SERVED_NAMESPACE)
        assert kept.spec.replicas == 3
    finally:
        restored = kubectl(pod.kube, "apply", "-f", "-", stdin=yaml.safe_dump(role))
        assert restored.returncode == 0, restored.stderr
