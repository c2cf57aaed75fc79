"""Browser tests: Debian's Chromium driven by Playwright against a real gevent server.

The server (``serve.py``) runs in its own, gevent-patched process with a Kubernetes simulator;
this process stays unpatched and changes the cluster with the official Kubernetes client, as
another person or a controller would. Every wait is a Playwright condition, never a sleep.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import typing as t
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import kubernetes.client
import kubernetes.config
import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, Playwright, expect, sync_playwright

from tests.browser.host_app import NAMESPACE

ROOT: t.Final = Path(__file__).resolve().parents[2]
CHROMIUM: t.Final = "/usr/bin/chromium"
CHROMIUM_ARGS: t.Final = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.browser
expect.set_options(timeout=10_000)
_names = itertools.count(1)


@dataclass
class Server:
    url: str
    kubeconfig: str
    traffic: Path

    def traffic_bytes(self) -> bytes:
        return self.traffic.read_bytes()


@contextlib.contextmanager
def serving(traffic: Path, kubeconfig: str | None = None, *, bulk: int = 0) -> Iterator[dict[str, str]]:
    """Runs ``serve.py`` until the block ends: the live UI app with its own simulator (holding
    ``bulk`` ConfigMaps in the namespace ``bulk``), or, given the ``kubeconfig`` of a simulator run
    here, the saving app. Gives the ``url`` and ``kubeconfig`` it prints, and its ``pid``."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.browser.serve", str(traffic), *([kubeconfig] if kubeconfig else [])],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "KRM_BROWSER_BULK": str(bulk)},
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.wait(timeout=10)
        raise RuntimeError(f"the browser test server did not start:\n{process.stderr.read() if process.stderr else ''}")
    try:
        yield {**json.loads(line), "pid": str(process.pid)}
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    traffic = tmp_path_factory.mktemp("traffic") / "responses.log"
    with serving(traffic) as info:
        yield Server(info["url"], info["kubeconfig"], traffic)


@pytest.fixture(scope="module")
def core(server: Server) -> kubernetes.client.CoreV1Api:
    """The cluster as an administrator sees it (changes made here are someone else's)."""
    configuration = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(
        config_file=server.kubeconfig, context="admin", client_configuration=configuration, persist_config=False
    )
    return kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(configuration))


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        instance = _launch(playwright)
        yield instance
        instance.close()


def _launch(playwright: Playwright) -> Browser:
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


@pytest.fixture
def context(browser: Browser, server: Server) -> Iterator[BrowserContext]:
    """A signed-in browser profile (one session; its pages are that session's tabs)."""
    ctx = browser.new_context(base_url=server.url)
    page = ctx.new_page()
    page.goto("/login/editor")
    page.close()
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()


def unique(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{next(_names)}"


def new_configmap(core: kubernetes.client.CoreV1Api, prefix: str, data: dict[str, str]) -> str:
    """Creates a ConfigMap with a ``unique(prefix)`` name and ``data``; returns the name."""
    name = unique(prefix)
    create_configmap(core, name, data)
    return name


def create_configmap(core: kubernetes.client.CoreV1Api, name: str, data: dict[str, str], **metadata: t.Any) -> None:
    body: dict[str, t.Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, **metadata},
        "data": data,
    }
    core.create_namespaced_config_map(NAMESPACE, t.cast(t.Any, body))


MERGE_PATCH: t.Final = "application/merge-patch+json"


def patch_data(core: kubernetes.client.CoreV1Api, name: str, data: dict[str, str]) -> None:
    core.patch_namespaced_config_map(name, NAMESPACE, {"data": data}, _content_type=MERGE_PATCH)


def wait_live(page: Page) -> None:
    """The page's stream is live, and an editor on it accepts writes."""
    expect(page.locator(".krm-connection").first).to_have_text("Live")
    for writes in page.locator(".krm-writes").all():
        expect(writes).not_to_have_attribute("disabled", re.compile(".*"))


def goto_live(page: Page, path: str) -> Page:
    """Opens ``path`` in ``page`` and waits until it is live."""
    page.goto(path)
    wait_live(page)
    return page


def value_field(page: Page, key: str) -> Locator:
    return page.get_by_label(f"Value of {key}", exact=True)


def entry(page: Page, key: str) -> Locator:
    return page.locator(".krm-entry").filter(has=value_field(page, key))


def dirty(page: Page, key: str) -> Locator:
    return entry(page, key).locator(".krm-dirty-marker")


def row(page: Page, name: str) -> Locator:
    """The live list's row linking to ``name``."""
    return page.locator("tr", has=page.get_by_role("link", name=name, exact=True))


def type_over(field: Locator, text: str) -> None:
    field.click()
    field.press("ControlOrMeta+a")
    field.press_sequentially(text)
