"""``KubeSimulator``: the in-memory Kubernetes API server on a free loopback port."""

from __future__ import annotations

import contextlib
import socket
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import kubernetes.client
import kubernetes.config
from gevent.pywsgi import WSGIHandler, WSGIServer

from ... import concurrency
from .api import CONNECTION, HEADER_LINES, ApiServer
from .authentication import Authenticator, User
from .catalog import CUSTOM_RESOURCE_DEFINITIONS, DEFAULT_CATALOG, FLUNDER_CRD, NAMESPACES, RBAC_GROUP, established
from .demo import DemoController
from .faults import Faults, FaultState
from .hub_thread import HubThread
from .identities import DEMO_USERS, cluster_rbac_objects
from .kubeconfig import write_kubeconfig
from .rbac import RbacAuthorizer
from .registry import Registry, now
from .store import ObjectStore
from .tls import ServingCertificate, issue_serving_certificate
from .watch import ConnectionDropped, WatchSettings

T = TypeVar("T")


class _Handler(WSGIHandler):  # type: ignore[misc]
    """pywsgi handler that can refuse connections and abort a response without finishing it."""

    def handle(self) -> None:
        application: ApiServer = self.server.application
        if application.faults.refusing() and not application.faults.refuse_with_503:
            return  # the server closes the socket without reading the request
        # headers and body go out in separate writes: without this, Nagle plus delayed ACKs cost 40 ms a response
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().handle()

    def get_environ(self) -> dict[str, Any]:
        environ: dict[str, Any] = super().get_environ()
        environ[HEADER_LINES] = list(self.headers.items())
        environ[CONNECTION] = self.socket
        return environ

    def handle_error(self, kind: type[BaseException], value: BaseException, traceback: TracebackType | None) -> None:
        if issubclass(kind, ConnectionDropped):
            self.close_connection = True
            return
        super().handle_error(kind, value, traceback)


TLS_HANDSHAKE_RECORD = b"\x16"
"""The first byte a TLS client sends (the record type of its ClientHello)."""

PLAIN_HTTP_REFUSAL = b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
"""What kube-apiserver (Go's TLS server) answers a plain HTTP request on its HTTPS port."""


class _TlsServer(WSGIServer):  # type: ignore[misc]
    """pywsgi over TLS: a failed handshake ends its connection quietly, plain HTTP gets a 400, as from Go's server."""

    def wrap_socket_and_handle(self, client_socket: socket.socket, address: Any) -> Any:
        try:
            first = client_socket.recv(1, socket.MSG_PEEK)
            if first != TLS_HANDSHAKE_RECORD:
                if first:
                    _refuse_plain_http(client_socket)
                return None
            tls_socket = self.wrap_socket(client_socket, **self.ssl_args)
        except OSError:  # ssl.SSLError included: a failed handshake, or the client went away
            return None
        with contextlib.closing(tls_socket):
            return self.handle(tls_socket, address)


def _refuse_plain_http(client_socket: socket.socket) -> None:
    """Answer, then read what the client still sends before closing (closing on unread data would reset the answer)."""
    with contextlib.suppress(OSError):
        client_socket.sendall(PLAIN_HTTP_REFUSAL)
        client_socket.shutdown(socket.SHUT_WR)
        client_socket.settimeout(1.0)
        while client_socket.recv(65536):
            pass


def build_server(
    users: Sequence[User], history_window: int | None, watch_settings: WatchSettings, resource_version_wait: float = 3.0
) -> ApiServer:
    """An ``ApiServer`` with its store, the standard namespaces, the Flunder CRD and the demo users' cluster RBAC."""
    store = ObjectStore(history_window)
    registry = Registry(store)
    application = ApiServer(
        DEFAULT_CATALOG,
        store,
        registry,
        Authenticator(users),
        RbacAuthorizer(store),
        watch_settings,
        FaultState(),
        resource_version_wait,
    )
    for resource_object in cluster_rbac_objects():
        resource = next(t for t in DEFAULT_CATALOG.types if t.kind == resource_object["kind"])
        registry.create(resource, "", resource_object)
    registry.create(CUSTOM_RESOURCE_DEFINITIONS, "", established(FLUNDER_CRD, now()))
    for namespace in ("default", "kube-system", "kube-public"):
        registry.create(NAMESPACES, "", {"metadata": {"name": namespace}})
    return application


def compact_periodically(store: ObjectStore, interval: float) -> None:
    """kube-apiserver's etcd compaction: every ``interval``, forget the history up to the previous tick's version."""
    previous = store.resource_version
    while True:
        concurrency.sleep(interval)
        store.compact_to(previous)
        previous = store.resource_version


def install_rbac(registry: Registry, objects: Sequence[Mapping[str, Any]]) -> None:
    """Create Roles, ClusterRoles and their bindings (and any namespace a namespaced one names)."""
    for obj in objects:
        resource = next(t for t in DEFAULT_CATALOG.types if t.group == RBAC_GROUP and t.kind == obj.get("kind"))
        namespace = str(obj.get("metadata", {}).get("namespace", "")) if resource.namespaced else ""
        if namespace and registry.store.get(NAMESPACES, "", namespace) is None:
            registry.create(NAMESPACES, "", {"metadata": {"name": namespace}})
        registry.create(resource, namespace, obj)


CREATE_CHUNK = 100
"""Objects :meth:`KubeSimulator.create_objects` creates per call onto the simulator's hub."""


class KubeSimulator:
    """A Kubernetes API server in memory, served over HTTPS on 127.0.0.1 from its own thread.

    Use as a context manager: ``with KubeSimulator() as kube: kube.api_client("admin")``. ``users``
    are the token users (the demo users by default); ``rbac`` are extra Role, ClusterRole, RoleBinding
    and ClusterRoleBinding objects created at start-up (RBAC can also be changed through the API).

    History: every change since start-up is kept until compaction, as etcd does: every
    ``compaction_interval`` seconds (kube-apiserver's default: 5 minutes; ``None``: never) and on
    ``faults.compact()``; ``history_window`` instead keeps only that many changes.
    ``resource_version_wait``: how long a read at a future resourceVersion waits for it before the
    504 (kube-apiserver: 3 s; tests may shorten it).

    TLS: each simulator makes its own certificate authority and serving certificate (for 127.0.0.1
    and ``localhost``); the kubeconfig it writes trusts that CA (``certificate-authority-data``), so
    the official client and kubectl verify the server as they verify a real cluster. ``ca_pem``
    holds the CA certificate for other clients.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        users: Sequence[User] = DEMO_USERS,
        rbac: Sequence[Mapping[str, Any]] = (),
        history_window: int | None = None,
        compaction_interval: float | None = 300.0,
        resource_version_wait: float = 3.0,
        bookmark_interval: float = 60.0,
        demo: bool = False,
        demo_tick: float | None = 1.0,
        competing_edits: bool = False,
        kubeconfig_path: str | Path | None = None,
    ) -> None:
        self._port = port
        self._users = list(users)
        self._rbac = [dict(obj) for obj in rbac]
        self._history_window = history_window
        self._compaction_interval = compaction_interval
        self._resource_version_wait = resource_version_wait
        self._compactor: concurrency.Greenlet | None = None
        self._watch_settings = WatchSettings(bookmark_interval=bookmark_interval)
        self._demo_options = (demo, demo_tick, competing_edits)
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self._kubeconfig_path = Path(kubeconfig_path) if kubeconfig_path else None
        self._thread: HubThread | None = None
        self._server: _TlsServer | None = None
        self.application: ApiServer | None = None
        self._faults: Faults | None = None
        self.demo: DemoController | None = None
        self.url = ""
        self._certificate: ServingCertificate | None = None

    # lifecycle

    def start(self) -> KubeSimulator:
        """Start serving; returns once the port is bound and the kubeconfig is written."""
        if self._kubeconfig_path is None:
            self._tempdir = tempfile.TemporaryDirectory(prefix="krm-simulator-")
            self._kubeconfig_path = Path(self._tempdir.name) / "kubeconfig"
        self._thread = HubThread(self._serve, self._shutdown)
        self._thread.start()
        assert self.application is not None
        self._faults = Faults(
            self.application.faults,
            self.application.store,
            self.application.registry,
            self.application.watchers,
            self.call,
        )
        return self

    def _serve(self) -> None:
        self.application = build_server(
            self._users, self._history_window, self._watch_settings, self._resource_version_wait
        )
        demo, tick, competing_edits = self._demo_options
        if demo:
            self.demo = DemoController(self.application.registry, tick=tick, competing_edits=competing_edits)
            self.demo.seed()
            self.demo.start()
        install_rbac(self.application.registry, self._rbac)
        if self._compaction_interval is not None:
            self._compactor = concurrency.spawn(compact_periodically, self.application.store, self._compaction_interval)
        self._certificate = issue_serving_certificate()
        self._server = _TlsServer(
            ("127.0.0.1", self._port),
            self.application,
            handler_class=_Handler,
            log=None,
            ssl_context=self._certificate.server_context(),
        )
        self._server.start()
        port = self._server.server_port
        self.url = f"https://127.0.0.1:{port}"
        self.application.address = f"127.0.0.1:{port}"
        self._write_kubeconfig()

    def _write_kubeconfig(self) -> None:
        assert self._kubeconfig_path is not None and self._certificate is not None
        write_kubeconfig(self._kubeconfig_path, self.url, self._certificate.ca_pem, self._users, self._users[0].name)

    def _shutdown(self) -> None:
        if self._compactor is not None:
            self._compactor.kill(block=False)
        if self.demo is not None:
            self.demo.stop()
        if self.application is not None:
            self.application.end_watches()
        if self._server is not None:
            self._server.stop(timeout=0)

    def stop(self) -> None:
        """Stop serving, end open watches and remove the temporary kubeconfig."""
        if self._thread is not None:
            self._thread.stop()
            self._thread = None
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    def __enter__(self) -> KubeSimulator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # use

    @property
    def faults(self) -> Faults:
        """Fault injection for the running server."""
        if self._faults is None:
            raise RuntimeError("the simulator is not running")
        return self._faults

    @property
    def kubeconfig_path(self) -> str:
        """Where the kubeconfig is."""
        return str(self._kubeconfig_path)

    @property
    def ca_pem(self) -> bytes:
        """The PEM certificate of the CA that signed the serving certificate (what the kubeconfig trusts)."""
        if self._certificate is None:
            raise RuntimeError("the simulator is not running")
        return self._certificate.ca_pem

    @property
    def port(self) -> int:
        """The port on 127.0.0.1."""
        return int(self.url.rsplit(":", 1)[1])

    def api_client(self, user: str = "admin") -> kubernetes.client.ApiClient:
        """An official ``ApiClient`` configured from the kubeconfig context of ``user``."""
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=self.kubeconfig_path, context=user, client_configuration=configuration, persist_config=False
        )
        return kubernetes.client.ApiClient(configuration)

    def add_user(self, name: str, groups: Sequence[str] = ()) -> User:
        """Add a token user (and its kubeconfig context); returns it."""
        user = User(name, f"{name}-token", tuple(groups))
        assert self.application is not None and self._kubeconfig_path is not None
        application = self.application
        self.call(lambda: application.authenticator.add(user))
        self._users.append(user)
        self._write_kubeconfig()
        return user

    def demo_step(self, steps: int = 1) -> None:
        """Run the demo controller ``steps`` times now (with ``demo=True``; ``demo_tick=None`` leaves it to the test)."""
        demo = self.demo
        assert demo is not None, "the simulator was started without demo=True"
        for _ in range(steps):
            self.call(demo.step)

    def create_objects(self, objects: Sequence[Mapping[str, Any]]) -> int:
        """Create ``objects`` straight in the store, as the system would through the API (namespaces
        they name are made when missing), without a request each: for tests and benchmarks that
        need thousands. Each needs ``apiVersion``, ``kind`` and ``metadata.name``. Returns how many
        were created; a refused one raises the API's error."""
        application = self.application
        assert application is not None, "the simulator is not running"
        registry = application.registry

        def create(chunk: Sequence[Mapping[str, Any]]) -> None:
            for obj in chunk:
                group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
                resource = next(
                    t
                    for t in DEFAULT_CATALOG.types
                    if (t.group, t.version, t.kind) == (group, version, obj.get("kind"))
                )
                namespace = str(obj.get("metadata", {}).get("namespace", "")) if resource.namespaced else ""
                if namespace and registry.store.get(NAMESPACES, "", namespace) is None:
                    registry.create(NAMESPACES, "", {"metadata": {"name": namespace}})
                registry.create(resource, namespace, obj)

        for start in range(0, len(objects), CREATE_CHUNK):  # each call well inside the hub call's timeout
            chunk = objects[start : start + CREATE_CHUNK]
            self.call(lambda chunk=chunk: create(chunk))  # type: ignore[misc]
        return len(objects)

    def open_watches(self) -> int:
        """How many watch requests are being served right now (closed client connections are noticed at once)."""
        application = self.application
        assert application is not None, "the simulator is not running"
        return self.call(lambda: len(application.watchers))

    def call(self, function: Callable[[], T]) -> T:
        """Run ``function()`` on the server's hub (where the store lives) and return its result."""
        assert self._thread is not None, "the simulator is not running"
        return self._thread.call(function)
