"""A real kube-apiserver backed by etcd, started on loopback ports for the contract suite.

``start_kube_apiserver()`` runs the binaries that ``scripts/kube-binaries`` builds (or reuses)
with a throwaway data directory, self-signed serving certificates, RBAC authorization and a static
token file for the simulator's demo users; it installs the simulator's cluster RBAC objects and
its Flunder CRD, and yields a handle shaped like the simulator's: ``name``, ``api_client(user)``,
``kubeconfig_path``, ``supports(capability)``, ``faults.compact()`` (etcd's compaction) and
``version``.

No controllers run beside the server (no kube-controller-manager): a deleted namespace stays
``Terminating``, owner references are not garbage-collected and Deployments get no status.
"""

from __future__ import annotations

import base64
import ctypes
import json
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes.client

from flask_krm.testing.simulator import DEMO_USERS, FLUNDER_CRD, User, cluster_rbac_objects

REPO = Path(__file__).resolve().parent.parent
KUBE_BINARIES_SCRIPT = REPO / "scripts" / "kube-binaries"
KUBE_APISERVER_MODULE = REPO / "scripts" / "kube-binaries.d" / "kube-apiserver" / "go.mod"

MASTERS = "system:masters"
STARTUP_TIMEOUT = 90.0
STOP_TIMEOUT = 10.0
PR_SET_PDEATHSIG = 1
CLUSTER_COLLECTIONS = {
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "CustomResourceDefinition": "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
}
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


REAL_CAPABILITIES = frozenset({"compaction"})


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
    """The directory holding ``kube-apiserver`` and ``etcd`` (the script builds them if missing)."""
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
    etcd_url: str
    name: str = "kube-apiserver"

    @property
    def faults(self) -> EtcdFaults:
        """Compaction of etcd's history on demand (the only fault a real server offers here)."""
        return EtcdFaults(self.etcd_url)

    def api_client(self, user: str = "admin") -> kubernetes.client.ApiClient:
        """An official-client ``ApiClient`` authenticated as a demo user, verifying the server's CA."""
        configuration = kubernetes.client.Configuration()
        configuration.host = self.url
        configuration.ssl_ca_cert = self.ca_path
        configuration.verify_ssl = True
        configuration.api_key = {"authorization": self._token(user)}
        configuration.api_key_prefix = {"authorization": "Bearer"}
        return kubernetes.client.ApiClient(configuration)

    def supports(self, capability: str) -> bool:
        """Only ``compaction`` (``faults.compact()``); other fault injection exists only in the simulator."""
        return capability in REAL_CAPABILITIES

    def _token(self, user: str) -> str:
        try:
            return self.users[user].token
        except KeyError:
            raise RealKubeError(f"no demo user {user!r}; known: {sorted(self.users)}") from None


@dataclass(frozen=True)
class EtcdFaults:
    """etcd's v3 HTTP/JSON gateway on its client URL, for what the simulator's ``faults`` offer and etcd can do."""

    etcd_url: str

    def revision(self) -> int:
        """etcd's current revision: the newest resourceVersion kube-apiserver has handed out."""
        return int(self._post("/v3/kv/range", {"key": base64.b64encode(b"\0").decode()})["header"]["revision"])

    def compact(self) -> int:
        """Compact etcd's history up to the current revision, physically; returns that revision, below
        which etcd answers ``ErrCompacted`` (kube-apiserver's watch cache keeps its own history)."""
        revision = self.revision()
        self._post("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    def _post(self, path: str, body: Mapping[str, Any]) -> Any:
        request = urllib.request.Request(
            self.etcd_url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            raise RealKubeError(f"etcd {path}: HTTP {error.code} {error.read().decode(errors='replace')}") from None


@contextmanager
def start_kube_apiserver(users: Sequence[User] = DEMO_USERS, *, watch_cache: bool = True) -> Iterator[KubeApiServer]:
    """Start etcd and kube-apiserver on free loopback ports; on exit stop both and delete their data.

    ``users`` become the static token file; the first one in ``system:masters`` prepares the server.
    ``watch_cache=False`` serves every watch and list from etcd (``--watch-cache=false``).
    """
    admin = next((user for user in users if MASTERS in user.groups), None)
    if admin is None:
        raise RealKubeError(f"no user in {MASTERS} among {[user.name for user in users]}")
    binaries = kube_binaries_directory()
    with ExitStack() as stack:
        workdir = Path(tempfile.mkdtemp(prefix="flask-krm-kube-"))
        stack.callback(shutil.rmtree, workdir, ignore_errors=True)
        etcd_url = _start_etcd(stack, binaries / "etcd", workdir)
        port = _free_port()
        url = f"https://127.0.0.1:{port}"
        cert_dir = workdir / "certs"
        signing_key, public_key = _write_service_account_keys(workdir)
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
                f"--token-auth-file={_write_token_file(workdir, users)}",
                "--anonymous-auth=false",
                "--profiling=false",
                # the default "lease" reconciler refuses a loopback advertise address
                "--endpoint-reconciler-type=none",
                f"--watch-cache={str(watch_cache).lower()}",
            ],
            workdir / "kube-apiserver.log",
        )
        ca_path = cert_dir / "apiserver.crt"  # the self-signed serving certificate followed by its CA
        http = _AdminHttp(url, admin.token, ca_path, apiserver)
        http.await_ok("/readyz")
        http.await_ok("/api/v1/namespaces/default")
        _install_demo_objects(http)
        yield KubeApiServer(
            url=url,
            kubeconfig_path=str(_write_kubeconfig(workdir, url, ca_path, users)),
            ca_path=str(ca_path),
            version=str(http.get("/version")["gitVersion"]),
            users={user.name: user for user in users},
            etcd_url=etcd_url,
        )


@dataclass
class _Running:
    """A started server process and the file its output goes to."""

    program: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def raise_if_exited(self) -> None:
        if self.process.poll() is not None:
            raise RealKubeError(f"{self.program} exited with {self.process.returncode}\n{self.log_tail()}")

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


def _die_with_parent() -> None:
    """In the child: be killed when the test process dies, so no server outlives a killed run."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _spawn(stack: ExitStack, argv: list[str], log_path: Path) -> _Running:
    """Start a server in its own session (Ctrl-C reaches only pytest, which then stops it in order)."""
    log = stack.enter_context(open(log_path, "wb"))
    process = subprocess.Popen(
        argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent
    )
    running = _Running(Path(argv[0]).name, process, log_path)
    stack.callback(running.stop)
    return running


def _poll(ready: Callable[[], bool], running: _Running, what: str) -> None:
    """Call ``ready`` until it is true; fail at once if the process exits, or after the timeout."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not ready():
        running.raise_if_exited()
        if time.monotonic() > deadline:
            raise RealKubeError(f"{what} after {STARTUP_TIMEOUT:.0f} s\n{running.log_tail()}")
        time.sleep(0.1)


def _start_etcd(stack: ExitStack, etcd: Path, workdir: Path) -> str:
    client_url = f"http://127.0.0.1:{_free_port()}"
    peer_url = f"http://127.0.0.1:{_free_port()}"
    running = _spawn(
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

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"{client_url}/health", timeout=2) as response:
                return bool(json.load(response).get("health") == "true")
        except (OSError, ValueError):
            return False

    _poll(healthy, running, "etcd is not healthy")
    return client_url


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _write_token_file(workdir: Path, users: Sequence[User]) -> Path:
    """kube-apiserver's static token CSV: token, user name, uid (the name, as in the simulator), groups."""
    path = workdir / "tokens.csv"
    path.write_text("".join(f'{user.token},{user.name},{user.name},"{",".join(user.groups)}"\n' for user in users))
    return path


def _write_service_account_keys(workdir: Path) -> tuple[Path, Path]:
    """A fresh P-256 key for signing service account tokens, and its public key: (private, public)."""
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
    """One cluster (with its CA inline) and one token context per user; the first user is current."""
    ca_data = base64.b64encode(ca_path.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kube-apiserver", "cluster": {"server": url, "certificate-authority-data": ca_data}}],
        "users": [{"name": user.name, "user": {"token": user.token}} for user in users],
        "contexts": [
            {"name": user.name, "context": {"cluster": "kube-apiserver", "user": user.name}} for user in users
        ],
        "current-context": users[0].name,
    }
    path = workdir / "kubeconfig"
    path.write_text(json.dumps(config, indent=2) + "\n")
    path.chmod(0o600)
    return path


class _AdminHttp:
    """Plain JSON requests to the server as the admin user, for starting and preparing it."""

    def __init__(self, url: str, token: str, ca_path: Path, running: _Running) -> None:
        self._url = url
        self._token = token
        self._ca_path = ca_path
        self.running = running
        self._context: ssl.SSLContext | None = None

    def get(self, path: str) -> Any:
        return json.loads(self._send(urllib.request.Request(self._url + path)))

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        request = urllib.request.Request(
            self._url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        return json.loads(self._send(request))

    def await_ok(self, path: str) -> None:
        """Wait until ``GET path`` answers 2xx (the serving certificate appears once the server runs)."""

        def ok() -> bool:
            if not self._ca_path.exists():
                return False
            try:
                self._send(urllib.request.Request(self._url + path))
                return True
            except OSError:
                return False

        _poll(ok, self.running, f"GET {path} is not OK")

    def _send(self, request: urllib.request.Request) -> bytes:
        if self._context is None:
            self._context = ssl.create_default_context(cafile=str(self._ca_path))
        request.add_header("Authorization", f"Bearer {self._token}")
        with urllib.request.urlopen(request, timeout=10, context=self._context) as response:
            return bytes(response.read())


def _install_demo_objects(http: _AdminHttp) -> None:
    """The simulator's cluster RBAC objects and Flunder CRD, served and in effect on return."""
    rbac_objects = cluster_rbac_objects()
    for resource_object in [*rbac_objects, FLUNDER_CRD]:
        try:
            http.post(CLUSTER_COLLECTIONS[resource_object["kind"]], resource_object)
        except urllib.error.HTTPError as error:
            raise RealKubeError(
                f"creating {resource_object['kind']} {resource_object['metadata']['name']}: "
                f"HTTP {error.code} {error.read().decode(errors='replace')}"
            ) from None
    spec = FLUNDER_CRD["spec"]
    http.await_ok(f"/apis/{spec['group']}/{spec['versions'][0]['name']}/{spec['names']['plural']}")
    rules = {obj["metadata"]["name"]: obj["rules"] for obj in rbac_objects if obj["kind"] == "ClusterRole"}
    for binding in (obj for obj in rbac_objects if obj["kind"] == "ClusterRoleBinding"):
        rule = rules[binding["roleRef"]["name"]][0]
        for subject in binding["subjects"]:
            _await_allowed(http, subject["name"], rule["verbs"][-1], rule["apiGroups"][0], rule["resources"][0])


def _await_allowed(http: _AdminHttp, user: str, verb: str, group: str, resource: str) -> None:
    """RBAC reads bindings through an informer: wait until a new binding is in effect."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": user, "resourceAttributes": {"verb": verb, "group": group, "resource": resource}},
    }
    _poll(
        lambda: bool(http.post(SUBJECT_ACCESS_REVIEWS, review)["status"].get("allowed")),
        http.running,
        f"RBAC does not allow {user} to {verb} {resource}",
    )
