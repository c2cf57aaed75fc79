"""Serving a flask-krm host: graceful stops under gunicorn's gevent worker and gevent's WSGI server,
and Prometheus metrics across gunicorn workers.

A stop (SIGTERM) must not wait for open streams, which never end by themselves: gunicorn's gevent
worker waits its whole ``graceful_timeout`` for them and then kills them, so pages would get no
ending and every restart would take the full timeout. Here, the moment SIGTERM arrives:

1. readiness fails (:meth:`~flask_krm.runtime.KrmRuntime.begin_drain`);
2. every stream is ended (:meth:`~flask_krm.runtime.KrmRuntime.shutdown`, in a greenlet): with a
   shared draft backend a page stream ends with ``retry`` and the browser reconnects to another
   worker, drafts intact; with the memory backend each editor with unsaved changes shows them for
   copy-out, then the page closes; JSON streams end with their terminal ``INTERNAL`` event;
3. after ``KRM_DRAIN_DELAY`` seconds (requests still accepted, readiness 503, new streams told to
   go elsewhere) the server stops accepting, and exits once its last response is written: within
   a second or two, far inside ``graceful_timeout``.

gunicorn: name these functions as the hooks of a config file::

    from flask_krm.serving import child_exit, on_starting, post_worker_init, worker_exit, worker_int

This module imports nothing at import time but the standard library, since gunicorn's master reads
the config file unpatched (importing ``ssl`` there breaks TLS in the patched workers). With
``PROMETHEUS_MULTIPROC_DIR`` set, :func:`on_starting` empties that folder and :func:`child_exit`
marks a dead worker's files, so gauges count live workers only.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import typing as t
from pathlib import Path

if t.TYPE_CHECKING:
    from flask import Flask
    from gevent.pywsgi import WSGIServer

    from .runtime import KrmRuntime

__all__ = ["child_exit", "drain", "on_starting", "post_worker_init", "stop_server", "worker_exit", "worker_int"]

logger = logging.getLogger("flask_krm")

MULTIPROC_ENV: t.Final = "PROMETHEUS_MULTIPROC_DIR"


def _runtime(app: t.Any) -> KrmRuntime | None:
    from flask import Flask

    from .runtime import find_runtime

    return find_runtime(app) if isinstance(app, Flask) else None


def drain(app: Flask, *, timeout: float | None = None) -> None:
    """Stop serving ``app``'s streams: readiness fails at once, then every stream ends and every
    watch stops (:meth:`~flask_krm.KrmStream.shutdown`, waiting up to ``timeout``). Blocks: call
    it from a greenlet of its own when a server must go on meanwhile."""
    krm = _runtime(app)
    if krm is not None:
        krm.begin_drain()
        krm.shutdown(timeout)


# -- gunicorn -----------------------------------------------------------------------------------


def on_starting(server: t.Any) -> None:
    """gunicorn master hook: empty ``PROMETHEUS_MULTIPROC_DIR`` (a previous run's files would be
    merged into this one's metrics)."""
    folder = os.environ.get(MULTIPROC_ENV)
    if not folder:
        return
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    for entry in path.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def post_worker_init(worker: t.Any) -> None:
    """gunicorn worker hook: start the event loop's ticker and drain on SIGTERM (see the module)."""
    krm = _runtime(getattr(worker, "wsgi", None))
    if krm is None:
        return
    krm.start_ticker()
    stop_worker = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum: int, frame: t.Any) -> None:
        from .concurrency import spawn

        krm.begin_drain()  # at once: the next probe already fails
        spawn(_stop_worker, krm, stop_worker, signum, frame)

    signal.signal(signal.SIGTERM, on_sigterm)


def _stop_worker(krm: KrmRuntime, stop_worker: t.Any, signum: int, frame: t.Any) -> None:
    from .concurrency import spawn_later

    delay = float(krm.setting("DRAIN_DELAY"))
    stopping = spawn_later(delay, _call, stop_worker, signum, frame)
    try:
        krm.shutdown()
    finally:
        stopping.join()


def _call(handler: t.Any, signum: int, frame: t.Any) -> None:
    if callable(handler):
        handler(signum, frame)


def worker_int(worker: t.Any) -> None:
    """gunicorn worker hook (SIGINT, SIGQUIT: a quick stop): end the streams, waiting at most a
    second."""
    krm = _runtime(getattr(worker, "wsgi", None))
    if krm is not None:
        krm.begin_drain()
        krm.shutdown(1.0)


def worker_exit(server: t.Any, worker: t.Any) -> None:
    """gunicorn worker hook: make sure everything is stopped (nothing left after a drain)."""
    krm = _runtime(getattr(worker, "wsgi", None))
    if krm is not None:
        krm.shutdown()


def child_exit(server: t.Any, worker: t.Any) -> None:
    """gunicorn master hook: a worker is gone; its live gauges stop counting."""
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]


# -- gevent's WSGI server -------------------------------------------------------------------------


def stop_server(app: Flask, server: WSGIServer, *, timeout: float = 2.0) -> None:
    """Stop a gevent ``WSGIServer`` serving ``app`` gracefully (call it on SIGTERM, from a greenlet):
    readiness fails, every stream ends, then the server stops, waiting at most ``timeout`` seconds
    for its connections."""
    drain(app, timeout=timeout)
    server.stop(timeout=timeout)
