"""Serves the browser tests' host app on a real gevent server, against a Kubernetes simulator.

Run as ``python -m tests.browser.serve TRAFFIC_LOG [KUBECONFIG]``: the process patches itself with
gevent first (the hub needs it) and serves the host app with ``gevent.pywsgi`` on a free 127.0.0.1
port. Without KUBECONFIG it starts a ``KubeSimulator`` with the demo objects itself and serves the
live UI app; with KUBECONFIG (a simulator the caller runs) it serves the saving app. It prints one
JSON line with the app's URL and the simulator's kubeconfig. With ``KRM_BROWSER_BULK=N`` in its
environment, its own simulator also holds N ConfigMaps in the namespace ``bulk``. Every byte of every response body
(pages, static files, edits, the SSE streams) is appended to TRAFFIC_LOG as it is sent. SIGTERM or
SIGINT stops it cleanly. The saving app also records its accepted writes (:func:`recording_saves`).
"""

from gevent import monkey

monkey.patch_all()

import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import typing as t  # noqa: E402
from collections.abc import Iterable, Iterator  # noqa: E402

import gevent  # noqa: E402
import gevent.event  # noqa: E402
from gevent.pywsgi import WSGIServer  # noqa: E402

from flask_krm import signals  # noqa: E402
from flask_krm.testing import KubeSimulator  # noqa: E402
from tests.browser.host_app import AUDIT_SUFFIX, bulk_configmaps, create_app  # noqa: E402

WSGIApp = t.Callable[[dict[str, t.Any], t.Callable[..., t.Any]], Iterable[bytes]]


class TrafficRecorder:
    """WSGI middleware appending every response body chunk to a file, flushed as it goes."""

    def __init__(self, app: WSGIApp, path: str) -> None:
        self.app = app
        self.log = open(path, "ab", buffering=0)  # noqa: SIM115 - open for the server's lifetime

    def __call__(self, environ: dict[str, t.Any], start_response: t.Callable[..., t.Any]) -> Iterator[bytes]:
        self.log.write(f"\n=== {environ['REQUEST_METHOD']} {environ.get('PATH_INFO', '')}\n".encode())
        body = self.app(environ, start_response)
        try:
            for chunk in body:
                self.log.write(chunk)
                yield chunk
        finally:
            close = getattr(body, "close", None)
            if callable(close):
                close()


@contextlib.contextmanager
def recording_saves(path: str) -> Iterator[None]:
    """Appends every accepted write's audit fields (``flask_krm.signals.saved``) to ``path``:
    ``{"principal", "operation", "name", "fields"}`` per line."""
    log = open(path, "a", buffering=1)  # noqa: SIM115 - closed when the block ends

    def record(sender: object, **audit: t.Any) -> None:
        line = {
            "principal": audit["principal"].name,
            "operation": audit["operation"],
            "name": audit["identity"].name,
            "fields": list(audit["fields"]),
        }
        log.write(json.dumps(line) + "\n")

    signals.saved.connect(record, weak=False)
    try:
        yield
    finally:
        signals.saved.disconnect(record)
        log.close()


def main() -> int:
    traffic, given = sys.argv[1], sys.argv[2:]
    stopping = gevent.event.Event()
    with contextlib.ExitStack() as stack:
        saving = bool(given)  # a simulator run by the caller is the saving tests' own
        if saving:
            kubeconfig = given[0]
        else:
            kube = stack.enter_context(KubeSimulator(demo=True, demo_tick=None))
            kube.create_objects(bulk_configmaps(int(os.environ.get("KRM_BROWSER_BULK") or 0)))
            kubeconfig = kube.kubeconfig_path
        app, krm = create_app(kubeconfig, tempfile.mkdtemp(prefix="krm-browser-"), saving=saving)
        if saving:
            stack.enter_context(recording_saves(traffic + AUDIT_SUFFIX))
        server = WSGIServer(("127.0.0.1", 0), TrafficRecorder(app, traffic), log=None)
        server.start()
        for signum in (signal.SIGTERM, signal.SIGINT):
            gevent.signal_handler(signum, stopping.set)
        print(json.dumps({"url": f"http://127.0.0.1:{server.server_port}", "kubeconfig": kubeconfig}), flush=True)
        stopping.wait()
        krm.shutdown(app, timeout=2)
        server.stop(timeout=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
