"""The operational endpoints: liveness and readiness probes (``KRM_LIVENESS_PATH``,
``KRM_READINESS_PATH``), after kube-apiserver's ``/livez`` and ``/readyz``, and the Prometheus
metrics (``KRM_METRICS_PATH``, see :mod:`flask_krm.metrics`).

- **Liveness** fails (503) only when this process's event loop is stuck: its ticker
  (:class:`~flask_krm.event_loop.LoopTicker`) woke more than ``KRM_LIVENESS_MAX_LAG`` seconds late,
  or is that overdue now. Redis or an API server being down never fails it: restarting the process
  would not bring them back.
- **Readiness** is 503 until the extension serves (the ticker has ticked in this process) and from
  the first moment of a drain (:meth:`~flask_krm.runtime.KrmRuntime.begin_drain`, which the server
  hooks of :mod:`flask_krm.serving` call on SIGTERM), so no new stream is routed to a process that
  is stopping. Shared dependencies (the draft backend, each target's API server, the watches'
  sync) are checked only under ``?verbose`` and reported, never counted: a Redis or API server
  blip would otherwise take every replica out of the Service at once, where each of them still
  serves what it has (pages keep their drafts and reconnect when the dependency is back).

Both answer ``text/plain``: ``ok``, or with ``?verbose`` one ``[+]name ok`` / ``[-]name failed:
why`` line per check and a last line saying whether the probe passed. They never need a session,
a principal or a CSRF token, and name nothing but configured targets.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from flask import Flask, Response, request

from .concurrency import joinall, spawn
from .runtime import KrmRuntime, runtime

__all__ = ["Check", "liveness", "metrics", "readiness", "register"]

DEPENDENCY_TIMEOUT: t.Final = 2.0
"""Seconds a verbose readiness probe waits for each dependency it asks."""


@dataclass(frozen=True, slots=True)
class Check:
    """One line of a verbose probe. ``counted`` checks decide the status; the others inform."""

    name: str
    ok: bool
    detail: str = ""
    counted: bool = True

    def line(self) -> str:
        detail = f" ({self.detail})" if self.detail else ""
        if self.ok:
            return f"[+]{self.name} ok{detail}"
        note = "" if self.counted else " [not counted]"
        return f"[-]{self.name} failed{detail}{note}"


def _answer(probe: str, checks: list[Check]) -> Response:
    passed = all(check.ok for check in checks if check.counted)
    if "verbose" in request.args:
        lines = [check.line() for check in checks]
        lines.append(f"{probe} check {'passed' if passed else 'failed'}")
        body = "\n".join(lines) + "\n"
    else:
        body = "ok" if passed else "\n".join(check.line() for check in checks if check.counted and not check.ok)
    return Response(body, status=200 if passed else 503, mimetype="text/plain", headers={"Cache-Control": "no-store"})


def _loop_check(krm: KrmRuntime) -> Check:
    ticker = krm.ticker
    if ticker.last_tick is None:
        return Check("event-loop", False, "starting: the ticker has not ticked yet")
    behind = ticker.behind()
    allowed = float(krm.setting("LIVENESS_MAX_LAG"))
    if behind > allowed:
        return Check("event-loop", False, f"{behind:.3f}s behind, more than {allowed:g}s")
    return Check("event-loop", True, f"{behind * 1000:.1f}ms behind")


def liveness() -> Response:
    """The liveness probe: fails only when the event loop is stuck."""
    krm = runtime()
    krm.start_ticker()
    check = _loop_check(krm)
    if krm.shut_down or krm.ticker.last_tick is None:
        check = Check("event-loop", True, "stopping" if krm.shut_down else "starting")
    return _answer("livez", [check])


def readiness() -> Response:
    """The readiness probe: 503 until serving and while draining; dependencies under ``?verbose``."""
    krm = runtime()
    krm.start_ticker()
    checks = [
        Check("shutdown", not krm.draining, "draining: the server is stopping" if krm.draining else ""),
        _loop_check(krm),
    ]
    if "verbose" in request.args:
        checks.extend(_dependency_checks(krm))
    return _answer("readyz", checks)


def _dependency_checks(krm: KrmRuntime) -> list[Check]:
    """What the shared dependencies say now, asked at once, each for at most
    :data:`DEPENDENCY_TIMEOUT` seconds. Reported, never counted."""
    asks: list[tuple[str, t.Callable[[], str]]] = [("drafts", krm.ping_drafts)]
    asks.extend((f"target:{name}", _discovery(krm, name)) for name in sorted(krm.targets))
    jobs = [(name, spawn(ask)) for name, ask in asks]
    joinall([job for _, job in jobs], timeout=DEPENDENCY_TIMEOUT + 0.5)
    checks = []
    for name, job in jobs:
        if not job.ready():
            job.kill(block=False)
            checks.append(Check(name, False, "no answer in time", counted=False))
        elif job.successful():
            checks.append(Check(name, True, str(job.value), counted=False))
        else:
            checks.append(Check(name, False, _reason(job.exception), counted=False))
    checks.append(_watches(krm))
    return checks


def _discovery(krm: KrmRuntime, target: str) -> t.Callable[[], str]:
    def ask() -> str:
        from kubernetes.client import VersionApi

        version = VersionApi(krm.api_clients().service(target)).get_code(_request_timeout=DEPENDENCY_TIMEOUT)
        return f"reachable, {version.git_version}"

    return ask


def _reason(error: BaseException | None) -> str:
    """Why a dependency failed, without its message (which may carry addresses or credentials)."""
    status = getattr(error, "status", None)
    name = type(error).__name__ if error is not None else "unknown"
    return f"unreachable: {name}" + (f" {status}" if isinstance(status, int) and status else "")


def _watches(krm: KrmRuntime) -> Check:
    hub = krm.hub
    if hub is None:
        return Check("watches", True, "none open", counted=False)
    synced, total = hub.synced_count()
    return Check("watches", synced == total, f"{synced} of {total} synced", counted=False)


def metrics() -> Response:
    """The Prometheus text exposition (every worker's values under gunicorn's multiprocess mode)."""
    krm = runtime()
    krm.start_ticker()
    assert krm.metrics is not None
    body, content_type = krm.metrics.exposition()
    return Response(body, status=200, content_type=content_type, headers={"Cache-Control": "no-store"})


def register(app: Flask, liveness_path: str | None, readiness_path: str | None, metrics_path: str | None) -> None:
    """Add the probes and the metrics the configuration names to ``app`` (outside every blueprint:
    no session, no CSRF, no principal)."""
    if metrics_path is not None:
        app.add_url_rule(metrics_path, "krm_metrics", metrics, methods=["GET"])
    if liveness_path is not None:
        app.add_url_rule(liveness_path, "krm_liveness", liveness, methods=["GET"])
    if readiness_path is not None:
        app.add_url_rule(readiness_path, "krm_readiness", readiness, methods=["GET"])
