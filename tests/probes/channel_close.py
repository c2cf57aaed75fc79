"""Serves a page with a live list under gevent's pywsgi over HTTP/1.1, opens its page channel and
closes the client's socket while the channel is idle.

Run by ``tests/test_sse_response_release.py`` as ``python -m tests.probes.channel_close`` (the hub needs a
gevent-patched process). Prints one JSON line describing what happened.
"""

from gevent import monkey

monkey.patch_all()

import json  # noqa: E402
import re  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import typing as t  # noqa: E402

import gevent  # noqa: E402
from flask import render_template_string  # noqa: E402
from gevent.pywsgi import WSGIServer  # noqa: E402

from flask_krm.testing import KubeSimulator  # noqa: E402
from tests.probes.harness import allowing_krm, demo_app  # noqa: E402

HEARTBEAT = 30.0
PAGE = (
    '{% import "krm/_macros.html" as krm %}<html><head>{{ krm_script() }}</head><body>'
    '{{ krm.list("target=sim&version=v1&resource=configmaps&namespace=demo") }}</body></html>'
)


def _get(port: int, path: str, cookie: str = "") -> tuple[socket.socket, bytes]:
    """Send a GET; the socket and what arrived up to the end of the response head and a bit."""
    client = socket.create_connection(("127.0.0.1", port))
    extra = f"Cookie: {cookie}\r\n" if cookie else ""
    client.sendall(f"GET {path} HTTP/1.1\r\nHost: probe\r\n{extra}\r\n".encode())
    return client, client.recv(262144)


def main() -> int:
    seen: dict[str, t.Any] = {}
    with KubeSimulator(demo=True, demo_tick=None) as kube:
        app = demo_app(kube.kubeconfig_path, KRM_HEARTBEAT_INTERVAL=HEARTBEAT)
        app.add_url_rule("/", "page", lambda: render_template_string(PAGE))
        krm = allowing_krm(app)
        server = WSGIServer(("127.0.0.1", 0), app, log=None)
        server.start()
        port = server.server_port
        page_socket, page = _get(port, "/")
        with gevent.Timeout(20):
            while b"</html>" not in page:
                page += page_socket.recv(262144)
        page_socket.close()
        cookie = re.search(rb"Set-Cookie: ([^;]+);", page, re.IGNORECASE)
        channel = re.search(rb'hx-sse:connect="([^"]+)"', page)
        assert cookie is not None and channel is not None, page[:2000]
        client, received = _get(port, channel.group(1).decode().replace("&amp;", "&"), cookie.group(1).decode())
        with gevent.Timeout(20):
            while b": connected" not in received:
                received += client.recv(65536)
        seen["status"] = received.split(b"\r\n")[0].decode()
        seen["channels_before"] = len(krm.runtime(app).streams)
        gevent.sleep(0.2)  # idle: nothing to write
        client.close()
        started = time.monotonic()
        with gevent.Timeout(HEARTBEAT * 2):
            while krm.runtime(app).streams:
                gevent.sleep(0.005)
        seen["released_after_s"] = round(time.monotonic() - started, 3)
        seen["heartbeat_s"] = HEARTBEAT
        krm.shutdown(app)
        server.stop(timeout=1)
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
