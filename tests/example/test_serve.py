"""``python -m example_app`` against a cluster it is given, and its command-line mistakes."""

from __future__ import annotations

import http.cookiejar
import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from flask_krm.testing import KubeSimulator

from .conftest import ROOT, clean_environment, start_example

CSRF_FIELD = re.compile(r'name="krm_csrf_token" value="([^"]+)"')


@pytest.fixture
def kube() -> Iterator[KubeSimulator]:
    with KubeSimulator(demo=True, demo_tick=None) as simulator:
        yield simulator


def test_a_given_kubeconfig_and_context_replace_the_simulator(kube: KubeSimulator, tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "example_app",
        "--port",
        "0",
        "--kubeconfig",
        kube.kubeconfig_path,
        "--context",
        "editor",
        "--namespace",
        "demo-staging",
    ]
    example = start_example(command, tmp_path, timeout=60)
    try:
        text = "\n".join(example.banner)
        assert f"Cluster:   context editor of {kube.kubeconfig_path}, with the context's own credentials" in text
        assert "Showing:   namespaces demo-staging" in text
        assert "embedded" not in text and "kubectl" not in text
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        token = CSRF_FIELD.search(opener.open(f"{example.url}/sign-in", timeout=10).read().decode())
        assert token
        form = {"username": "viewer", "password": "viewer", "krm_csrf_token": token.group(1)}
        page = opener.open(f"{example.url}/sign-in", data=urllib.parse.urlencode(form).encode(), timeout=30)
        assert page.geturl().endswith("/namespaces/demo-staging")
        # the given cluster's objects, read as its context's identity
        assert_first_paint_shows(opener, page.geturl(), page.read().decode(), "hello from staging")
    finally:
        assert example.stop() == 0


def test_the_kubeconfig_environment_variable_also_selects_a_cluster(kube: KubeSimulator, tmp_path: Path) -> None:
    example = start_example(
        [sys.executable, "-m", "example_app", "--port", "0", "--impersonate"],
        tmp_path,
        timeout=60,
        env={**clean_environment(), "KUBECONFIG": kube.kubeconfig_path},
    )
    try:
        text = "\n".join(example.banner)
        assert f"Cluster:   context admin of {kube.kubeconfig_path}, impersonating the signed-in user" in text
        assert "Showing:   namespaces default" in text
    finally:
        assert example.stop() == 0


def test_an_unknown_context_is_a_usage_error(kube: KubeSimulator) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "example_app", "--kubeconfig", kube.kubeconfig_path, "--context", "nope"],
        cwd=ROOT,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert f"the kubeconfig {kube.kubeconfig_path} has no context 'nope' (it has: admin, editor, viewer" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unreadable_kubeconfig_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    done = subprocess.run(
        [sys.executable, "-m", "example_app", "--kubeconfig", str(missing)],
        cwd=ROOT,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert f"example_app: cannot read the kubeconfig {missing}" in done.stderr


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_http(url: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    """Wait until ``url`` answers, failing early if ``process`` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            try:
                process.wait(timeout=0.2)  # returns only if the server died
            except subprocess.TimeoutExpired:
                continue
            raise AssertionError(f"the server exited with {process.returncode}") from None
    raise AssertionError(f"{url} did not answer within {timeout:g}s")


def assert_first_paint_shows(opener: urllib.request.OpenerDirector, url: str, body: str, text: str) -> None:
    """``text`` is in the page's first paint once the shared watch holds it.

    The very first page of a fresh server may paint before its watch has listed (a page then fills
    in over its stream, which this client does not read); a reload is served from the watch's cache.
    """
    deadline = time.monotonic() + 30
    while text not in body:
        assert time.monotonic() < deadline, f"{text!r} never appeared in the first paint of {url}"
        time.sleep(0.2)
        body = opener.open(url, timeout=10).read().decode()


def test_the_serving_guides_gunicorn_command_serves_the_example_and_shuts_it_down(
    kube: KubeSimulator, tmp_path: Path
) -> None:
    readme = (ROOT / "docs" / "guide" / "serving.md").read_text()
    flags = ["--worker-class", "gevent", "--workers", "1", "--config", "example_app/gunicorn_conf.py"]
    assert "--worker-class gevent --workers 1" in readme and "--config example_app/gunicorn_conf.py" in readme
    assert "'example_app:create_app()'" in readme
    port = free_port()
    env = {
        **clean_environment(),
        "FLASK_SECRET_KEY": "gunicorn test",
        "FLASK_KRM_TARGETS": json.dumps({"cluster": {"kubeconfig": kube.kubeconfig_path, "context": "admin"}}),
    }
    with (tmp_path / "gunicorn.log").open("w") as log:
        server = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("gunicorn")),
                *flags,
                "--bind",
                f"127.0.0.1:{port}",
                "--graceful-timeout",
                "10",
                "example_app:create_app()",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for_http(f"{url}/sign-in", server, timeout=60)
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        token = CSRF_FIELD.search(opener.open(f"{url}/sign-in", timeout=10).read().decode())
        assert token
        form = {"username": "editor", "password": "editor", "krm_csrf_token": token.group(1)}
        page = opener.open(f"{url}/sign-in", data=urllib.parse.urlencode(form).encode(), timeout=30)
        # the overview's ConfigMaps list, served live from the simulator
        assert_first_paint_shows(opener, page.geturl(), page.read().decode(), "hello")
        streams = subprocess.run(
            [sys.executable, "-m", "flask", "--app", "example_app", "krm", "streams"],
            cwd=ROOT,
            env=clean_environment(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        worker = re.search(r"Server process (\d+)\n  Upstream watches: (\d+)", streams.stdout)
        assert worker and int(worker.group(2)) >= 4, streams.stdout + streams.stderr
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0, (tmp_path / "gunicorn.log").read_text()
    assert "Worker exiting" in (tmp_path / "gunicorn.log").read_text()
    assert not (ROOT / "instance" / f"krm-status-{worker.group(1)}.sock").exists()  # worker_exit cleaned up
