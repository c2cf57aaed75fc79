"""The upstream tests run in a gevent-patched pytest process (see :mod:`tests.patched`): the
reflector and the hub block on real sockets through urllib3."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import gevent
import greenlet
import pytest

from flask_krm.testing.simulator import KubeSimulator
from flask_krm.upstream.authz import allow_all
from flask_krm.upstream.clients import ApiClients, Kubeconfig
from flask_krm.upstream.hub import Hub
from flask_krm.upstream.reflector import Backoff, WatchSettings
from tests.patched import PatchedFolder

from .cluster import Cluster, kubeconfig_via
from .proxy import Proxy

pytest_runtest_protocol, pytest_runtest_logreport, pytest_configure = PatchedFolder(
    Path(__file__).parent, timeout=600.0
).hooks()

FAST: Final = WatchSettings(backoff=Backoff(initial=0.05, maximum=0.3))
"""Watch settings that retry quickly."""

HubFactory = Callable[..., Hub]


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
    with Proxy(kube.url, kube.ca_pem) as running:
        yield running


@pytest.fixture
def make_hub(kube: KubeSimulator) -> Iterator[HubFactory]:
    """Hubs on the simulator (``via``: a proxy URL; ``context``: the service identity)."""
    hubs: list[Hub] = []

    def make(*, via: str | None = None, context: str = "admin", tmp: Path | None = None, **options: Any) -> Hub:
        path = (
            kube.kubeconfig_path if via is None else kubeconfig_via(kube, via, tmp or Path(kube.kubeconfig_path).parent)
        )
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
