"""A new user's first run: the README's first command in a fresh clone, and the banner's kubectl command.

The clone test runs ``make run`` exactly as the README says, first while port 5000 is busy (one
line says what to do), then as that line advises on a free port, and reads the first page. It
puts failing ``apt-get`` and ``sudo`` first on the PATH: the example needs nothing from them.
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import selectors
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import typing as t
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import kubernetes.client
import kubernetes.config
import pytest

from .conftest import ROOT, Example, clean_environment, read_banner, start_example

SETUP_TIMEOUT: t.Final = 900.0
"""Seconds for a fresh clone's ``make run`` to set up and start (a loaded 2-core machine needs minutes)."""
DEMO_DEPLOYMENTS: t.Final = {"web", "worker"}


def readme_first_command() -> str:
    """The first command of the README's first shell block."""
    block = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)
    assert block, "the README has no sh block"
    return block.group(1).splitlines()[0].split("#")[0].strip()


def kubectl_hint(example: Example) -> list[str]:
    """The banner's kubectl command, split as a shell would."""
    hints = [line.strip() for line in example.banner if line.strip().startswith("kubectl ")]
    assert len(hints) == 1, example.banner
    return shlex.split(hints[0])


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Example]:
    started = start_example(
        [sys.executable, "-m", "example_app", "--port", "0"], tmp_path_factory.mktemp("hint"), timeout=60
    )
    try:
        yield started
    finally:
        assert started.stop() == 0, started.stderr.read_text()[-4000:]


def test_the_printed_kubectl_command_works_with_kubectl(example: Example) -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is not installed (scripts/bootstrap test installs Debian's kubernetes-client)"
    command = kubectl_hint(example)
    done = subprocess.run([kubectl, *command[1:]], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()
    assert rows[0].split()[:2] == ["NAME", "READY"], done.stdout
    assert {row.split()[0] for row in rows[1:]} == DEMO_DEPLOYMENTS


def test_the_printed_kubectl_command_works_with_the_official_client(example: Example) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--context", required=True)
    parser.add_argument("-n", "--namespace", required=True)
    parser.add_argument("verb")
    parser.add_argument("resource")
    hint = parser.parse_args(kubectl_hint(example)[1:])
    assert (hint.verb, hint.resource) == ("get", "deployments")
    configuration = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(
        config_file=hint.kubeconfig, context=hint.context, client_configuration=configuration, persist_config=False
    )
    assert configuration.host.startswith("https://") and configuration.verify_ssl and configuration.ssl_ca_cert
    with kubernetes.client.ApiClient(configuration) as api:
        deployments = kubernetes.client.AppsV1Api(api).list_namespaced_deployment(hint.namespace)
    assert {item.metadata.name for item in deployments.items} == DEMO_DEPLOYMENTS


@pytest.fixture
def busy_port_5000() -> Iterator[None]:
    """Port 5000 on 127.0.0.1 is in use for the test's duration (by this test, or already by something else)."""
    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 5000))
        holder.listen()
    except OSError as exc:
        assert exc.errno == errno.EADDRINUSE, exc
    try:
        yield
    finally:
        holder.close()


def without_installers(directory: Path) -> dict[str, str]:
    """An environment whose ``apt-get`` and ``sudo`` fail and leave a mark when called, and which
    carries nothing of an outer ``make`` (as a person typing the command has none)."""
    directory.mkdir()
    for name in ("apt-get", "sudo"):
        stub = directory / name
        stub.write_text(f"#!/bin/sh\necho {name} >>'{directory}/called'\nexit 1\n")
        stub.chmod(0o755)
    environment = clean_environment()
    environment["PATH"] = f"{directory}{os.pathsep}{environment['PATH']}"
    for name in ("VIRTUAL_ENV", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"):
        environment.pop(name, None)
    return environment


def stop_like_ctrl_c(process: subprocess.Popen[bytes]) -> str:
    """SIGINT to the whole process group, as Ctrl+C in a terminal; returns what was printed until every member
    closed its output (on exit)."""
    assert process.stdout is not None
    os.killpg(process.pid, signal.SIGINT)
    descriptor = process.stdout.fileno()
    printed = b""
    with selectors.DefaultSelector() as selector:
        selector.register(descriptor, selectors.EVENT_READ)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if selector.select(timeout=max(0.0, deadline - time.monotonic())):
                chunk = os.read(descriptor, 65536)
                if not chunk:
                    process.wait(timeout=10)
                    return printed.decode()
                printed += chunk
    os.killpg(process.pid, signal.SIGKILL)
    raise AssertionError(f"make run did not stop on Ctrl+C within 30 s; it printed {printed!r}")


def test_a_fresh_clone_runs_the_readme_first_command(tmp_path: Path, busy_port_5000: None) -> None:
    command = readme_first_command()
    assert command == "make run"
    clone = tmp_path / "flask-krm"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    environment = without_installers(tmp_path / "bin")
    try:
        # port 5000 is busy: the setup runs, then one line says what to do
        busy = subprocess.run(
            shlex.split(command),
            cwd=clone,
            env=environment,
            capture_output=True,
            text=True,
            timeout=SETUP_TIMEOUT,
            check=False,
        )
        assert busy.returncode != 0
        said = [line for line in busy.stderr.splitlines() if not line.startswith("make")]  # make adds its own
        assert len(said) == 5, busy.stderr
        assert said[0].startswith("setup: creating the virtualenv .venv (Python 3."), busy.stderr
        assert said[1].startswith("setup: installing the example's dependencies into .venv ("), busy.stderr
        assert re.fullmatch(r"setup: ready in \d+ s", said[2]), busy.stderr
        assert said[3:] == [
            "run: starting the example application",
            "example_app: port 5000 on 127.0.0.1 is already in use (on macOS, the AirPlay Receiver uses port 5000); "
            'stop what uses it, or choose another port: make run ARGS="--port 0" (a free one) or ARGS="--port 5001"',
        ], busy.stderr
        assert busy.stdout == ""
        assert not (tmp_path / "bin" / "called").exists(), "make run called apt-get or sudo"

        # as the line advises: a free port; the setup is skipped, the banner names the HTTPS simulator
        advised = re.search(r'(make run ARGS="--port 0")', said[-1])
        assert advised
        stderr = tmp_path / "run.stderr"
        with stderr.open("w") as errors:
            server = subprocess.Popen(
                shlex.split(advised.group(1)),
                cwd=clone,
                env=environment,
                stdout=subprocess.PIPE,
                stderr=errors,
                start_new_session=True,
            )
        try:
            banner = read_banner(server, timeout=SETUP_TIMEOUT)
            text = "\n".join(banner)
            assert re.search(r"Cluster:   the embedded Kubernetes simulator at https://127\.0\.0\.1:\d+ ", text), text
            url = re.search(r"Open:\s+(http://127\.0\.0\.1:\d+/)", text)
            assert url and not url.group(1).endswith(":5000/"), text
            with urllib.request.urlopen(f"{url.group(1)}sign-in", timeout=30) as page:
                assert page.status == 200 and b'name="username"' in page.read()
        finally:
            printed = stop_like_ctrl_c(server)
        assert printed.strip() == "Stopping: ending live streams."
        said = stderr.read_text()
        assert said.splitlines()[:2] == [
            "setup: .venv is up to date (the example's dependencies)",
            "run: starting the example application (--port 0)",
        ], said
        assert "Traceback" not in said
        assert not (tmp_path / "bin" / "called").exists(), "make run called apt-get or sudo"
    finally:
        shutil.rmtree(clone, ignore_errors=True)
