"""The upstream tests run in a gevent monkey-patched pytest process of their own.

The reflector and the hub block on real sockets through urllib3, which cooperate with other
greenlets only in a process that gevent patched before ``ssl``, ``urllib3`` and ``kubernetes`` were
imported. Patching the shared pytest process from here would come too late for that, and would
change every other suite run in the same process (``tests/flask`` asserts behaviour of an unpatched
process). So, in an unpatched pytest process, the tests of this folder are not run in-process:
the first of them starts one child ``pytest`` that patches itself first thing and runs every
selected test of this folder; each test's setup, call and teardown reports come back and are
reported here as that test's own (tracebacks included). In a patched process (that child, or a
suite run under ``python -c "from gevent import monkey; monkey.patch_all(); ..."``) the tests simply
run.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import gevent
import gevent.monkey
import greenlet
import pytest
from _pytest.reports import TestReport

from flask_krm.testing.simulator import KubeSimulator
from flask_krm.upstream.authz import allow_all
from flask_krm.upstream.clients import ApiClients, Kubeconfig
from flask_krm.upstream.hub import Hub
from flask_krm.upstream.reflector import Backoff, WatchSettings

from .cluster import Cluster, kubeconfig_via
from .proxy import Proxy

PATCHED: Final = gevent.monkey.is_module_patched("socket")
HERE: Final = Path(__file__).parent
REPORTS_ENV: Final = "FLASK_KRM_UPSTREAM_REPORTS"
CHILD_TIMEOUT: Final = 600.0
_CHILD_MAIN: Final = (
    "from gevent import monkey; monkey.patch_all()\n"
    "import sys, pytest\n"
    "sys.exit(pytest.main(sys.argv[1:]))\n"
)
_results: dict[str, list[TestReport]] | None = None

FAST: Final = WatchSettings(backoff=Backoff(initial=0.05, maximum=0.3))
"""Watch settings that retry quickly."""

HubFactory = Callable[..., Hub]


def _ours(item: pytest.Item) -> bool:
    return HERE in Path(str(item.path)).parents


def _run_child(session: pytest.Session) -> dict[str, list[TestReport]]:
    """Run every selected test of this folder in one patched child; their reports by node id."""
    config = session.config
    nodeids = [item.nodeid for item in session.items if _ours(item)]
    with tempfile.TemporaryDirectory() as tmp:
        reports_path = Path(tmp) / "reports.jsonl"
        env = {**os.environ, REPORTS_ENV: str(reports_path)}
        command = [sys.executable, "-c", _CHILD_MAIN, "-q", "-p", "no:cacheprovider", *nodeids]
        try:
            done = subprocess.run(
                command, cwd=config.rootpath, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT
            )
            output = done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            output = f"the patched child pytest did not finish within {CHILD_TIMEOUT:.0f} s\n{exc.stdout or ''}"
        results: dict[str, list[TestReport]] = {}
        if reports_path.exists():
            for line in reports_path.read_text().splitlines():
                report = config.hook.pytest_report_from_serializable(config=config, data=json.loads(line))
                results.setdefault(report.nodeid, []).append(report)
    for item in session.items:
        if _ours(item) and not any(r.when == "call" for r in results.get(item.nodeid, [])):
            results[item.nodeid] = [
                TestReport(
                    item.nodeid,
                    item.location,
                    {},
                    "failed",
                    f"the patched child pytest reported nothing for this test; its output:\n{output[-8000:]}",
                    "call",
                )
            ]
    return results


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """In an unpatched process, report this folder's tests from the patched child's run."""
    global _results
    if PATCHED or not _ours(item):
        return None
    if _results is None:
        _results = _run_child(item.session)
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in _results.get(item.nodeid, []):
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def pytest_runtest_logreport(report: TestReport) -> None:
    """In the patched child, hand every report of this folder's tests back to the parent."""
    path = os.environ.get(REPORTS_ENV)
    if not PATCHED or not path or not report.nodeid.startswith("tests/upstream/"):
        return
    config = _CONFIG[0]
    data = config.hook.pytest_report_to_serializable(config=config, report=report)
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(data) + "\n")


_CONFIG: list[pytest.Config] = []


def pytest_configure(config: pytest.Config) -> None:
    _CONFIG.append(config)


def live_greenlets() -> list[greenlet.greenlet]:
    """Every greenlet of this thread's gevent hub that is running or waiting to run (the simulator
    serves from a thread of its own, with its own hub). The hub freezes long-lived objects, which
    hides them from ``gc.get_objects``: they are unfrozen first."""
    gc.unfreeze()
    gc.collect()
    hub = gevent.get_hub()
    return [
        obj
        for obj in gc.get_objects()
        if isinstance(obj, greenlet.greenlet)
        and obj.parent is hub
        and not obj.dead
        and (bool(obj) or getattr(obj, "started", False))
    ]


# --------------------------------------------------------------------------------- fixtures --


@pytest.fixture
def kube() -> Iterator[KubeSimulator]:
    """A running simulator with the namespace ``app``."""
    with KubeSimulator() as simulator:
        Cluster(simulator).create_namespace("app")
        yield simulator


@pytest.fixture
def cluster(kube: KubeSimulator) -> Cluster:
    """Writes to the simulator as ``admin``."""
    return Cluster(kube)


@pytest.fixture
def proxy(kube: KubeSimulator) -> Iterator[Proxy]:
    """A recording, fault-injecting proxy in front of ``kube``."""
    with Proxy(kube.url) as running:
        yield running


@pytest.fixture
def make_hub(kube: KubeSimulator) -> Iterator[HubFactory]:
    """Hubs on the simulator (``via``: a proxy URL; ``context``: the service identity)."""
    hubs: list[Hub] = []

    def make(*, via: str | None = None, context: str = "admin", tmp: Path | None = None, **options: Any) -> Hub:
        path = kube.kubeconfig_path if via is None else kubeconfig_via(kube, via, tmp or Path(kube.kubeconfig_path).parent)
        clients = ApiClients({"sim": Kubeconfig(path, context=context)}, pool_maxsize=16)
        options.setdefault("authorizer", allow_all)
        options.setdefault("settings", FAST)
        options.setdefault("linger", 0)
        hub = Hub(clients, options.pop("authorizer"), **options)
        hubs.append(hub)
        return hub

    yield make
    for hub in hubs:
        hub.shutdown(timeout=1)
        hub.clients.close()
