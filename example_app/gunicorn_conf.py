"""gunicorn settings for serving the example (or any flask-krm host) with gevent workers.

``gunicorn --config example_app/gunicorn_conf.py 'example_app:create_app()'``. The gevent worker
patches each worker process before it loads the application (so never use ``--preload``). Each
worker serves ``flask krm streams`` from its own status socket. On SIGTERM a worker drains at once
(:mod:`flask_krm.serving`): readiness fails, every open page and JSON stream gets its ending, and
the worker exits within a couple of seconds instead of waiting out ``graceful_timeout``. With
``PROMETHEUS_MULTIPROC_DIR`` set (and ``FLASK_KRM_METRICS_PATH``), the metrics of every worker are
served together.

This file is read by gunicorn's master process, which gevent does not patch: it imports nothing
that uses ``ssl`` (Flask, the Kubernetes client). A module holding ``ssl.SSLContext`` from before
the worker patches ``ssl`` makes every TLS connection to the API server fail with
``RecursionError``. The hooks import what they need; they run in the patched worker.
"""

from __future__ import annotations

import typing as t

from flask_krm import serving

if t.TYPE_CHECKING:
    from flask import Flask

worker_class = "gevent"
workers = 1  # more need KRM_DRAFTS_URL (drafts in Redis): then any worker serves any request
worker_connections = 2000  # every open page holds one connection
graceful_timeout = 10

on_starting = serving.on_starting
child_exit = serving.child_exit
worker_int = serving.worker_int


def _app(worker: t.Any) -> Flask | None:
    from flask import Flask

    app = getattr(worker, "wsgi", None)
    return app if isinstance(app, Flask) and "krm" in app.extensions else None


STATUS_ATTRIBUTE: t.Final = "krm_status_server"
"""The worker attribute holding its :class:`~flask_krm.cli.StatusServer` (each worker has its own)."""


def post_worker_init(worker: t.Any) -> None:
    """Drain on SIGTERM, and serve this worker's streams to ``flask krm streams``."""
    from flask_krm.cli import StatusServer

    serving.post_worker_init(worker)
    app = _app(worker)
    if app is not None:
        setattr(worker, STATUS_ATTRIBUTE, StatusServer(app).start())


def worker_exit(server: t.Any, worker: t.Any) -> None:
    """Make sure every stream and watch is stopped, and close the status socket."""
    from flask_krm.cli import StatusServer

    serving.worker_exit(server, worker)
    status = getattr(worker, STATUS_ATTRIBUTE, None)
    if isinstance(status, StatusServer):
        status.stop()
