"""A real kube-apiserver backed by etcd, started on loopback ports for the contract suite.

``start_kube_apiserver()`` runs the binaries that ``scripts/kube-binaries`` builds (or reuses),
with a throwaway data directory, self-signed serving certificates, RBAC authorization, a static
token file for the simulator's demo users, its cluster RBAC objects and its Flunder CRD, and yields a handle shaped
like the simulator's: ``name``, ``api_client(user)``, ``kubeconfig_path``, ``supports(...)``,
``version``.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes.client

from flask_krm.testing.simulator import DEMO_USERS, FLUNDER_CRD, User, cluster_rbac_objects

REPO = Path(__file__).resolve().parent.parent
KUBE_BINARIES_SCRIPT = REPO / "scripts" / "kube-binaries"
KUBE_APISERVER_MODULE = REPO / "scripts" / "kube-binaries.d" / "kube-apiserver" / "go.mod"

STARTUP_TIMEOUT = 90.0
STOP_TIMEOUT = 10.0


class RealKubeError(RuntimeError):
    """The real server could not be built, started or prepared; carries the relevant log tail."""


def pinned_kubernetes_version() -> str:
    """The k8s.io/kubernetes version ``scripts/kube-binaries`` builds, e.g. ``v1.37.2``."""
    for line in KUBE_APISERVER_MODULE.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "k8s.io/kubernetes":
            return fields[1]
    raise RealKubeError(f"{KUBE_APISERVER_MODULE} pins no k8s.io/kubernetes version")


def kube_binaries_directory() -> Path:
    """The directory holding ``kube-apiserver`` and ``etcd``, built by the script if missing."""
    result = subprocess.run([str(KUBE_BINARIES_SCRIPT)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RealKubeError(f"scripts/kube-binaries failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return Path(result.stdout.strip().splitlines()[-1])


@dataclass
class KubeApiServer:
    """A running kube-apiserver: the contract suite's ``kube_server`` for the real thing."""

    url: str
    kubeconfig_path: str
    ca_path: str
    version: str
    users: Mapping[str, User]
    name: str = "kube-apiserver"

    def api_client(self, user: str = "admin") -> kubernetes.client.ApiClient:
        """An official-client ``ApiClient`` authenticated as a demo user, verifying the server CA."""
        configuration = kubernetes.client.Configuration()
        configuration.host = self.url
        configuration.ssl_ca_cert = self.ca_path
        configuration.verify_ssl = True
        configuration.api_key = {"authorization": self._token(user)}
        configuration.api_key_prefix = {"authorization": "Bearer"}
        return kubernetes.client.ApiClient(configuration)

    def supports(self, capability: str) -> bool:
        """A real server supports no simulator fault injection."""
        return False

    def _token(self, user: str) -> str:
        try:
            return self.users[user].token
        except KeyError:
            raise RealKubeError(f"no demo user {user!r}; known: {sorted(self.users)}") from None


@contextmanager
def start_kube_apiserver(users: Sequence[User] = DEMO_USERS) -> Iterator[KubeApiServer]:
    """Start etcd and kube-apiserver on free loopback ports; stop both and delete their data."""
    binaries = kube_binaries_directory()
    with ExitStack() as stack:
        workdir = Path(tempfile.mkdtemp(prefix="flask-krm-kube-"))
        stack.callback(shutil.rmtree, workdir, ignore_errors=True)
        etcd_url = _start_etcd(stack, binaries / "etcd", workdir)
        port = _free_port()
        url = f"https://127.0.0.1:{port}"
        token_file = _write_token_file(workdir, users)
        signing_key, public_key = _write_service_account_keys(workdir)
        cert_dir = workdir / "certs"
        apiserver = _spawn(
            stack,
            [
                str(binaries / "kube-apiserver"),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={cert_dir}",
                "--service-cluster-ip-range=10.96.0.0/24",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={public_key}",
                f"--service-account-signing-key-file={signing_key}",
                "--authorization-mode=RBAC",
                f"--token-auth-file={token_file}",
                "--anonymous-auth=false",
                "--profiling=false",
                "--endpoint-reconciler-type=none",
            ],
            workdir / "kube-apiserver.log",
        )
        ca_path = str(cert_dir / "apiserver.crt")
        admin = next(user for user in users if "system:masters" in user.groups)
        probe = _Probe(url, admin.token, cert_dir / "apiserver.crt", [apiserver])
        probe.await_ok("/readyz", STARTUP_TIMEOUT)
        probe.await_ok("/api/v1/namespaces/default", STARTUP_TIMEOUT)
        version = json.loads(probe.get("/version"))["gitVersion"]
        server = KubeApiServer(
            url=url,
            kubeconfig_path=str(_write_kubeconfig(workdir, url, Path(ca_path), users)),
            ca_path=ca_path,
            version=version,
            users={user.name: user for user in users},
        )
        _install_demo_objects(server, admin.name, probe)
        yield server


def _start_etcd(stack: ExitStack, etcd: Path, workdir: Path) -> str:
    client_url = f"http://127.0.0.1:{_free_port()}"
    peer_url = f"http://127.0.0.1:{_free_port()}"
    process = _spawn(
        stack,
        [
            str(etcd),
            "--name=default",
            f"--data-dir={workdir / 'etcd'}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=default={peer_url}",
            "--unsafe-no-fsync",
            "--log-level=warn",
        ],
        workdir / "etcd.log",
    )
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while True:
        try:
            with urllib.request.urlopen(f"{client_url}/health", timeout=2) as response:
                if json.load(response).get("health") == "true":
                    return client_url
        except (OSError, ValueError):
            pass
        process.raise_if_exited()
        if time.monotonic() > deadline:
            raise RealKubeError(f"etcd not healthy after {STARTUP_TIMEOUT:.0f} s\n{process.log_tail()}")
        time.sleep(0.1)


@dataclass
class _Running:
    """A started server process and the file its output goes to."""

    process: subprocess.Popen[bytes]
    log_path: Path

    def raise_if_exited(self) -> None:
        if self.process.poll() is not None:
            raise RealKubeError(f"{self.process.args[0]} exited with {self.process.returncode}\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _spawn(stack: ExitStack, argv: list[str], log_path: Path) -> _Running:
    log = stack.enter_context(open(log_path, "wb"))
    running = _Running(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True), log_path)
    stack.callback(running.stop)
    return running


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _write_token_file(workdir: Path, users: Sequence[User]) -> Path:
    path = workdir / "tokens.csv"
    rows = [f'{user.token},{user.name},{user.name},"{",".join(user.groups)}"' for user in users]
    path.write_text("\n".join(rows) + "\n")
    return path


def _write_service_account_keys(workdir: Path) -> tuple[Path, Path]:
    """A fresh P-256 signing key for service account tokens and its public key (private, public)."""
    private, public = workdir / "service-account.key", workdir / "service-account.pub"
    for command in (
        ["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(private)],
        ["openssl", "pkey", "-in", str(private), "-pubout", "-out", str(public)],
    ):
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RealKubeError(f"{' '.join(command[:2])} could not write the service account keys:\n{result.stderr}")
    return private, public


def _write_kubeconfig(workdir: Path, url: str, ca_path: Path, users: Sequence[User]) -> Path:
    ca_data = base64.b64encode(ca_path.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kube-apiserver", "cluster": {"server": url, "certificate-authority-data": ca_data}}],
        "users": [{"name": user.name, "user": {"token": user.token}} for user in users],
        "contexts": [{"name": user.name, "context": {"cluster": "kube-apiserver", "user": user.name}} for user in users],
        "current-context": users[0].name,
    }
    path = workdir / "kubeconfig"
    path.write_text(json.dumps(config, indent=2))
    return path


class _Probe:
    """Plain HTTPS requests to the server as the admin, failing fast when a process dies."""

    def __init__(self, url: str, token: str, ca_path: Path, processes: Sequence[_Running]) -> None:
        self._url = url
        self._token = token
        self._ca_path = ca_path
        self._processes = processes
        self._context: ssl.SSLContext | None = None

    def get(self, path: str) -> bytes:
        if self._context is None:
            self._context = ssl.create_default_context(cafile=str(self._ca_path))
        request = urllib.request.Request(self._url + path, headers={"Authorization": f"Bearer {self._token}"})
        with urllib.request.urlopen(request, timeout=5, context=self._context) as response:
            return bytes(response.read())

    def await_ok(self, path: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last_error = "no answer"
        while True:
            if self._ca_path.exists():
                try:
                    self.get(path)
                    return
                except urllib.error.HTTPError as error:
                    last_error = f"HTTP {error.code}"
                except (OSError, ssl.SSLError) as error:
                    last_error = str(error)
            for process in self._processes:
                process.raise_if_exited()
            if time.monotonic() > deadline:
                tail = self._processes[0].log_tail()
                raise RealKubeError(f"GET {path} not OK after {timeout:.0f} s ({last_error})\n{tail}")
            time.sleep(0.1)


def _install_demo_objects(server: KubeApiServer, admin: str, probe: _Probe) -> None:
    """The simulator's cluster RBAC objects and Flunder CRD, in effect and served on return."""
    rbac_objects = cluster_rbac_objects()
    with server.api_client(admin) as client:
        rbac = kubernetes.client.RbacAuthorizationV1Api(client)
        create = {"ClusterRole": rbac.create_cluster_role, "ClusterRoleBinding": rbac.create_cluster_role_binding}
        for rbac_object in rbac_objects:
            create[rbac_object["kind"]](rbac_object)
        kubernetes.client.ApiextensionsV1Api(client).create_custom_resource_definition(FLUNDER_CRD)
        spec = FLUNDER_CRD["spec"]
        probe.await_ok(f"/apis/{spec['group']}/{spec['versions'][0]['name']}/{spec['names']['plural']}", STARTUP_TIMEOUT)
        rules = {obj["metadata"]["name"]: obj["rules"] for obj in rbac_objects if obj["kind"] == "ClusterRole"}
        authorization = kubernetes.client.AuthorizationV1Api(client)
        for binding in (obj for obj in rbac_objects if obj["kind"] == "ClusterRoleBinding"):
            rule = rules[binding["roleRef"]["name"]][0]
            for subject in binding["subjects"]:
                _await_allowed(authorization, subject["name"], rule["verbs"][-1], rule["apiGroups"][0], rule["resources"][0])


def _await_allowed(api: kubernetes.client.AuthorizationV1Api, user: str, verb: str, group: str, resource: str) -> None:
    """RBAC reads bindings through an informer: wait until a new binding is in effect."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": user, "resourceAttributes": {"verb": verb, "group": group, "resource": resource}},
    }
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not api.create_subject_access_review(review).status.allowed:
        if time.monotonic() > deadline:
            raise RealKubeError(f"RBAC never allowed {user} to {verb} {resource}")
        time.sleep(0.05)
