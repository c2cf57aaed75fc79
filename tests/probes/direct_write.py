"""Serves the JSON stream endpoint with gevent's pywsgi, over HTTP/1.1 (chunked) and HTTP/1.0 (raw),
through a middleware, over TLS and with the server driver off, while ConfigMaps change, and records
the exact bytes each client received.

Run by ``tests/test_pywsgi_driver.py`` as ``python -m tests.probes.direct_write`` (the hub needs a
gevent-patched process). Prints one JSON line describing what happened.
"""

from gevent import monkey

monkey.patch_all()

import json  # noqa: E402
import socket  # noqa: E402
import ssl  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import typing as t  # noqa: E402
from pathlib import Path  # noqa: E402

import gevent  # noqa: E402
from gevent.pywsgi import WSGIServer  # noqa: E402
from kubernetes.client import CoreV1Api  # noqa: E402

import flask_krm.pywsgi_driver as pywsgi_driver  # noqa: E402
from flask_krm.testing import KubeSimulator  # noqa: E402
from flask_krm.testing.simulator.tls import issue_serving_certificate  # noqa: E402
from flask_krm.upstream.collector import PROCESS_POLICY  # noqa: E402
from tests.probes.harness import allowing_krm, demo_app  # noqa: E402

URL = "/krm/resource-stream/v1?target=sim&version=v1&resource=configmaps&namespace=demo"
CHANGES = 30


def _connect(port: int, version: str, tls: ssl.SSLContext | None = None) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", port))
    if tls is not None:
        client = tls.wrap_socket(client, server_hostname="127.0.0.1")
    client.sendall(f"GET {URL} {version}\r\nHost: probe\r\n\r\n".encode())
    return client


def _tls_server(app: t.Any, folder: Path) -> tuple[WSGIServer, ssl.SSLContext]:
    """pywsgi serving ``app`` over TLS, and a client context trusting its certificate."""
    issued = issue_serving_certificate()
    (folder / "cert.pem").write_bytes(issued.certificate_pem)
    (folder / "key.pem").write_bytes(issued.key_pem)
    server = WSGIServer(
        ("127.0.0.1", 0), app, log=None, certfile=str(folder / "cert.pem"), keyfile=str(folder / "key.pem")
    )
    client = ssl.create_default_context(cadata=issued.ca_pem.decode())
    return server, client


def _passthrough(app: t.Any) -> t.Any:
    """A middleware that iterates the body itself (and could change the chunks)."""

    def middleware(environ: dict[str, t.Any], start_response: t.Any) -> t.Iterator[bytes]:
        body = app(environ, start_response)
        try:
            yield from body
        finally:
            body.close()

    return middleware


def main() -> int:
    seen: dict[str, t.Any] = {}
    sends = [0]
    send = pywsgi_driver.send

    def counted(fd: int, parts: tuple[bytes, ...], timeout: float | None = None) -> int:
        sends[0] += 1
        return send(fd, parts, timeout)

    pywsgi_driver.send = counted  # type: ignore[assignment]
    with KubeSimulator(demo=True, demo_tick=None) as kube:
        app = demo_app(kube.kubeconfig_path, KRM_HEARTBEAT_INTERVAL=30.0)
        krm = allowing_krm(app)
        server = WSGIServer(("127.0.0.1", 0), app, log=None)
        server.start()
        wrapped = WSGIServer(("127.0.0.1", 0), _passthrough(app), log=None)
        wrapped.start()
        folder = tempfile.TemporaryDirectory()
        secure, trusting = _tls_server(app, Path(folder.name))
        secure.start()
        core = CoreV1Api(kube.api_client("admin"))
        name = core.list_namespaced_config_map("demo").items[0].metadata.name
        clients = {}
        received: dict[str, bytes] = {}

        def read(version: str, until: bytes, count: int = 1) -> None:
            with gevent.Timeout(30):
                while received[version].count(until) < count:
                    data = clients[version].recv(65536)
                    assert data, "the server closed the stream"
                    received[version] += data

        app.config["KRM_SERVER_DRIVER"] = False  # read when the stream's response is made
        driverless = _connect(server.server_port, "HTTP/1.1")
        received["driver off"] = b""
        clients["driver off"] = driverless
        read("driver off", b'"type":"synced"')
        seen["collector_policy_without_the_driver"] = PROCESS_POLICY.enabled
        app.config["KRM_SERVER_DRIVER"] = True
        for version, port in (("HTTP/1.1", server.server_port), ("HTTP/1.0", server.server_port)):
            clients[version] = _connect(port, version)
        clients["middleware"] = _connect(wrapped.server_port, "HTTP/1.1")
        clients["tls"] = _connect(secure.server_port, "HTTP/1.1", trusting)
        received.update({version: b"" for version in clients if version not in received})
        for version in clients:
            read(version, b'"type":"synced"')
        seen["collector_policy_with_the_driver"] = PROCESS_POLICY.enabled
        clients["driver off"] = clients.pop("driver off")  # closed last: it makes no direct sends
        for n in range(CHANGES):
            core.patch_namespaced_config_map(name, "demo", {"data": {"probe": f"v{n}"}})
        direct = 0
        for version in clients:
            read(version, b'"type":"modified"', CHANGES)
            clients[version].close()
            if version == "HTTP/1.0":
                direct = sends[0]  # the two streams served by pywsgi itself are complete
        seen["streams"] = {version: data.decode() for version, data in received.items()}
        seen["direct_sends"] = direct
        seen["sends_with_middleware_or_tls"] = sends[0] - direct
        seen["changes"] = CHANGES
        krm.shutdown(app)
        server.stop(timeout=1)
        wrapped.stop(timeout=1)
        secure.stop(timeout=1)
        folder.cleanup()
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
