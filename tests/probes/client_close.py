"""Serves the JSON stream endpoint with gevent's pywsgi over HTTP/1.1 and closes a client's socket.

Run by ``tests/test_sse_response_release.py`` as ``python -m tests.probes.client_close`` (the hub needs a
gevent-patched process). Prints one JSON line describing what happened.
"""

from gevent import monkey

monkey.patch_all()

import json  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import typing as t  # noqa: E402

import gevent  # noqa: E402
import gevent.event  # noqa: E402
from gevent.pywsgi import WSGIServer  # noqa: E402

from flask_krm import signals  # noqa: E402
from flask_krm.testing import KubeSimulator  # noqa: E402
from tests.probes.harness import allowing_krm, demo_app  # noqa: E402

HEARTBEAT = 30.0
URL = "/krm/resource-stream/v1?target=sim&version=v1&resource=configmaps&namespace=demo"


def main() -> int:
    seen: dict[str, t.Any] = {}
    with KubeSimulator(demo=True, demo_tick=None) as kube:
        app = demo_app(kube.kubeconfig_path, KRM_HEARTBEAT_INTERVAL=HEARTBEAT)
        krm = allowing_krm(app)
        closed = gevent.event.AsyncResult()
        signals.stream_closed.connect(
            lambda sender, reason, **kw: closed.set((time.monotonic(), reason)), app, weak=False
        )
        server = WSGIServer(("127.0.0.1", 0), app, log=None)
        server.start()
        client = socket.create_connection(("127.0.0.1", server.server_port))
        client.sendall(f"GET {URL} HTTP/1.1\r\nHost: probe\r\n\r\n".encode())
        received = b""
        with gevent.Timeout(20):
            while b'"type":"synced"' not in received:
                received += client.recv(65536)
        head, _, body = received.partition(b"\r\n\r\n")
        seen["status"] = head.split(b"\r\n")[0].decode()
        seen["headers"] = sorted(line.decode().lower() for line in head.split(b"\r\n")[1:])
        seen["body_starts"] = body[:40].decode()
        watch_count = krm.runtime(app).hub.watch_count  # type: ignore[union-attr]
        seen["watches_before"] = watch_count
        gevent.sleep(0.2)  # idle: nothing to write
        client.close()
        started = time.monotonic()
        with gevent.Timeout(HEARTBEAT * 2):
            at, reason = closed.get()
        seen["released_after_s"] = round(at - started, 3)
        seen["reason"] = reason
        gevent.sleep(0.1)
        seen["watches_after"] = krm.runtime(app).hub.watch_count  # type: ignore[union-attr]
        seen["heartbeat_s"] = HEARTBEAT
        krm.shutdown(app)
        server.stop(timeout=1)
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
