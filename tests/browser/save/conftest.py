"""The fixtures of the saving browser tests: the saving host app (``host_app.create_app(saving=True)``)
on its server, and the simulator it saves to.

It holds no tests; the tests next to it use its fixtures. Unlike the live UI tests'
server, the Kubernetes simulator runs in the test process (its own thread and hub), so a test can
inject faults (a lost response, a webhook-style mutation, dropped watches) and count the writes
that reach it; the application runs in a gevent-patched child process (``serve.py`` given the
simulator's kubeconfig).
"""

from __future__ import annotations

import json
import threading
import typing as t
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import kubernetes.client
import pytest
from playwright.sync_api import Browser, Page

from flask_krm.testing import KubeSimulator
from flask_krm.testing.simulator import WriteRequest
from tests.browser.conftest import Server, serving
from tests.browser.host_app import AUDIT_SUFFIX, NAMESPACE
from tests.browser.proxy import TcpProxy

SignedIn = Callable[[str], Page]


@dataclass
class SaveServer(Server):
    """The running host app and the simulator it saves to."""

    kube: KubeSimulator

    def saves(self, name: str) -> list[dict[str, t.Any]]:
        """The accepted writes to objects named ``name``, in order, as the app's audit recorded them."""
        path = Path(str(self.traffic) + AUDIT_SUFFIX)
        lines = path.read_text().splitlines() if path.exists() else []
        return [record for record in map(json.loads, lines) if record["name"] == name]


@pytest.fixture(scope="module")
def kube() -> Iterator[KubeSimulator]:
    with KubeSimulator(demo=True, demo_tick=None) as simulator:
        yield simulator


@pytest.fixture(scope="module")
def save_server(kube: KubeSimulator, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaveServer]:
    traffic = tmp_path_factory.mktemp("save-traffic") / "responses.log"
    with serving(traffic, kube.kubeconfig_path) as info:
        yield SaveServer(info["url"], info["kubeconfig"], traffic, kube)


@pytest.fixture(scope="module")
def core(kube: KubeSimulator) -> kubernetes.client.CoreV1Api:
    """ConfigMaps and Secrets as an administrator sees them (changes made here are someone else's)."""
    return kubernetes.client.CoreV1Api(kube.api_client("admin"))


def configmap_uid(core: kubernetes.client.CoreV1Api, name: str) -> str:
    """The uid of the ConfigMap ``name`` now."""
    metadata = core.read_namespaced_config_map(name, NAMESPACE).metadata
    assert metadata is not None and metadata.uid
    return str(metadata.uid)


@pytest.fixture(scope="module")
def apps(kube: KubeSimulator) -> kubernetes.client.AppsV1Api:
    return kubernetes.client.AppsV1Api(kube.api_client("admin"))


@pytest.fixture
def signed_in(browser: Browser, save_server: SaveServer) -> Iterator[SignedIn]:
    """``signed_in(user)``: a new page of a browser profile signed in as ``user``."""
    contexts = []

    def open_as(user: str) -> Page:
        context = browser.new_context(base_url=save_server.url)
        contexts.append(context)
        page = context.new_page()
        page.goto(f"/login/{user}")
        return page

    yield open_as
    for context in contexts:
        context.close()


@dataclass
class WriteCounter:
    """Counts the writes (by verb) that reach the simulator for one object name; a dry run (the
    cluster's check of a draft) writes nothing and is not counted."""

    name: str
    verbs: list[str]
    _lock: threading.Lock

    def __call__(self, request: WriteRequest) -> None:
        if request.name == self.name and not request.dry_run:
            with self._lock:
                self.verbs.append(request.verb)

    def count(self, verb: str = "patch") -> int:
        with self._lock:
            return self.verbs.count(verb)


@pytest.fixture
def count_writes(kube: KubeSimulator) -> Iterator[Callable[[str], WriteCounter]]:
    """``count_writes(name)``: a counter of the writes to ``name`` admitted by the simulator."""
    removers = []
    faults = kube.faults
    assert faults is not None

    def start(name: str) -> WriteCounter:
        counter = WriteCounter(name, [], threading.Lock())
        removers.append(faults.mutate_writes(counter))
        return counter

    yield start
    for remove in removers:
        remove()


@pytest.fixture
def proxy(save_server: SaveServer) -> Iterator[TcpProxy]:
    """A TCP proxy in front of the app (``proxy.url``), which a test cuts and restores."""
    with TcpProxy(save_server.url) as running:
        yield running


@pytest.fixture
def through_proxy(browser: Browser, proxy: TcpProxy) -> Iterator[Page]:
    """A page of a profile signed in as the editor, reaching the app only through ``proxy``."""
    context = browser.new_context(base_url=proxy.url)
    page = context.new_page()
    page.goto("/login/editor")
    yield page
    context.close()
