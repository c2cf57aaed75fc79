"""The ``kube_server`` the contract scenarios run against: the simulator, or a real kube-apiserver.

Every scenario reaches the server only through the official client, so the same file runs
unchanged against both. The real server's run carries the ``apiserver`` marker (``-m "not
apiserver"`` runs the simulator alone) and its version is printed in the terminal summary. A
handle has ``name``, ``api_client(user)``, ``kubeconfig_path`` and ``supports(capability)``; with
``compaction`` it has ``faults.compact()`` (both do), with ``faults`` every other fault injection
too (the simulator only). ``compactable_server`` starts a fresh server of the same kind whose history
a scenario may compact without taking it from the others. Users: ``admin`` may do anything
(including impersonation); ``viewer`` may read but never write. Scenarios create their own
uniquely named namespaces and objects, so they share one server.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import kubernetes.client
import pytest

from flask_krm.testing.simulator import KubeSimulator
from flask_krm.testing.simulator.faults import Faults

from .kube import request, unique_name

SIMULATOR_CAPABILITIES = frozenset({"faults", "compaction"})


@dataclass
class SimulatorServer:
    """The simulator behind the contract suite's ``kube_server`` handle."""

    simulator: KubeSimulator
    name: str = "simulator"

    @property
    def kubeconfig_path(self) -> str:
        return self.simulator.kubeconfig_path

    @property
    def faults(self) -> Faults:
        return self.simulator.faults

    def api_client(self, user: str = "admin") -> kubernetes.client.ApiClient:
        return self.simulator.api_client(user)

    def supports(self, capability: str) -> bool:
        return capability in SIMULATOR_CAPABILITIES


SIMULATOR_RESOURCE_VERSION_WAIT = 1.0
"""How long the simulator waits for a future resourceVersion before its 504 (kube-apiserver: 3 s)."""


@pytest.fixture(scope="session", params=["simulator", pytest.param("kube-apiserver", marks=pytest.mark.apiserver)])
def kube_server(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "simulator":
        with KubeSimulator(resource_version_wait=SIMULATOR_RESOURCE_VERSION_WAIT) as simulator:
            yield SimulatorServer(simulator)
    else:
        server = request.getfixturevalue("real_kube")
        _report(request.config, f"kube-apiserver version: {server.version}")
        yield server


@pytest.fixture
def compactable_server(kube_server: Any) -> Iterator[Any]:
    """A fresh server of ``kube_server``'s kind, stopped after the test, for compacting its history.

    The real one runs without its watch cache (``--watch-cache=false``), so watches are served from
    etcd and see etcd's compaction: the cache keeps its own history, which it drops only when it holds
    over 100 events older than 75 s.
    """
    if not kube_server.supports("compaction"):
        pytest.skip(f"{kube_server.name} cannot compact its history on demand")
    with ExitStack() as stack:
        if isinstance(kube_server, SimulatorServer):
            yield SimulatorServer(stack.enter_context(KubeSimulator()))
        else:
            from tests.realkube import start_kube_apiserver

            yield stack.enter_context(start_kube_apiserver(watch_cache=False))


REPORTED_LINES = pytest.StashKey[list[str]]()


def _report(config: pytest.Config, line: str) -> None:
    """Keep ``line`` for the terminal summary (shown with or without ``-s``)."""
    config.stash.setdefault(REPORTED_LINES, []).append(line)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Print what the servers reported (the real server's version)."""
    for line in config.stash.get(REPORTED_LINES, []):
        terminalreporter.write_line(line)


@pytest.fixture
def admin(kube_server: Any) -> Iterator[kubernetes.client.ApiClient]:
    with kube_server.api_client("admin") as client:
        yield client


@pytest.fixture
def viewer(kube_server: Any) -> Iterator[kubernetes.client.ApiClient]:
    with kube_server.api_client("viewer") as client:
        yield client


@pytest.fixture
def namespace(admin: kubernetes.client.ApiClient) -> Iterator[str]:
    """A fresh namespace, deleted after the test."""
    name = unique_name("contract")
    created = request(
        admin, "POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    assert created.status == 201, created.body
    yield name
    deleted = request(admin, "DELETE", f"/api/v1/namespaces/{name}")
    assert deleted.status in (200, 404), deleted.body
