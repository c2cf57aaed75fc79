"""``python -m example_app`` against a cluster it is given, and its command-line mistakes."""

from __future__ import annotations

import http.cookiejar
import re
import subprocess
import sys
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
    command = [sys.executable, "-m", "example_app", "--port", "0", "--kubeconfig", kube.kubeconfig_path,
               "--context", "editor", "--namespace", "demo-staging"]
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
        body = page.read().decode()
        # the given cluster's objects, read as its context's identity
        assert "hello from staging" in body
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
        cwd=ROOT, env=clean_environment(), capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 2
    assert f"the kubeconfig {kube.kubeconfig_path} has no context 'nope' (it has: admin, editor, viewer" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unreadable_kubeconfig_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    done = subprocess.run(
        [sys.executable, "-m", "example_app", "--kubeconfig", str(missing)],
        cwd=ROOT, env=clean_environment(), capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 2
    assert f"example_app: cannot read the kubeconfig {missing}" in done.stderr
