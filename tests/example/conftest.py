"""The example application as a person starts it: a process serving it, read through its banner.

Servers run in child processes (they patch themselves with gevent); this process stays unpatched
and changes the cluster with the official Kubernetes client, as someone else would. Every wait
is bounded: the banner within :data:`START_TIMEOUT`, everything else by Playwright's timeouts.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
import typing as t
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import gevent.monkey
import kubernetes.client
import kubernetes.config
import pytest
from playwright.sync_api import Browser, sync_playwright

ROOT: t.Final = Path(__file__).resolve().parents[2]

# host_suite/ needs a gevent-patched process: test_host_suite.py runs it in one.
collect_ignore = [] if gevent.monkey.is_module_patched("socket") else ["host_suite"]
START_TIMEOUT: t.Final = 180.0
"""Seconds to wait for the banner; ``scripts/run-example`` runs ``scripts/bootstrap`` first."""
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


@dataclass
class Example:
    """A running example server: its process, what its banner said, and its output files."""

    process: subprocess.Popen[bytes]
    banner: list[str]
    url: str
    kubeconfig: str
    stderr: Path

    def admin_api(self) -> kubernetes.client.ApiClient:
        """The simulator as its administrator sees it (changes made with it are someone else's)."""
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(
            config_file=self.kubeconfig, context="admin", client_configuration=configuration, persist_config=False
        )
        return kubernetes.client.ApiClient(configuration)

    def stop(self) -> int:
        """SIGTERM, as Ctrl+C or a supervisor would; returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
            raise


def clean_environment() -> dict[str, str]:
    """This environment without a kubeconfig, so the example uses its simulator."""
    return {**{k: v for k, v in os.environ.items() if k != "KUBECONFIG"}, "PYTHONUNBUFFERED": "1"}


def read_banner(process: subprocess.Popen[bytes], timeout: float) -> list[str]:
    """The banner lines, up to "Press Ctrl+C to stop.". Raises ``RuntimeError`` if it never comes."""
    assert process.stdout is not None
    descriptor = process.stdout.fileno()
    selector = selectors.DefaultSelector()
    selector.register(descriptor, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    received = b""
    try:
        while time.monotonic() < deadline:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                continue
            chunk = os.read(descriptor, 65536)
            if not chunk:
                break  # the process ended
            received += chunk
            lines = received.decode(errors="replace").splitlines()
            for index, line in enumerate(lines):
                if line.startswith("Press Ctrl+C"):
                    return lines[: index + 1]
    finally:
        selector.close()
    raise RuntimeError("the example printed no complete banner:\n" + received.decode(errors="replace"))


def start_example(
    command: Sequence[str], tmp_path: Path, timeout: float = START_TIMEOUT, env: dict[str, str] | None = None
) -> Example:
    """Run ``command`` from the repository root (in ``env``, default :func:`clean_environment`)
    and wait for its banner."""
    stderr = tmp_path / "stderr.log"
    with stderr.open("w") as errors:
        process = subprocess.Popen(
            list(command), cwd=ROOT, stdout=subprocess.PIPE, stderr=errors, env=env or clean_environment()
        )
    try:
        banner = read_banner(process, timeout)
    except RuntimeError as exc:
        process.kill()
        process.wait(timeout=10)
        raise RuntimeError(f"{exc}\n--- stderr ---\n{stderr.read_text()[-4000:]}") from None
    text = "\n".join(banner)
    url = re.search(r"Open:\s+(http://\S+)", text)
    kubeconfig = re.search(r"--kubeconfig (\S+)", text)  # the simulator's, in its kubectl hint
    assert url, text
    return Example(process, banner, url.group(1).rstrip("/"), kubeconfig.group(1) if kubeconfig else "", stderr)


@pytest.fixture
def example_server(tmp_path: Path) -> Iterator[Example]:
    """The example served by ``python -m example_app --port 0`` (no bootstrap), stopped afterwards."""
    example = start_example([sys.executable, "-m", "example_app", "--port", "0"], tmp_path, timeout=60)
    try:
        yield example
    finally:
        example.stop()


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Example]:
    """The example served by ``python -m example_app --port 0`` for one test module, stopped afterwards."""
    started = start_example(
        [sys.executable, "-m", "example_app", "--port", "0"], tmp_path_factory.mktemp("example"), timeout=60
    )
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium for one test module."""
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()
