"""What a new user does first: clone the repository, run the example with several workers.

``git clone`` of this checkout's committed HEAD into a temporary folder, then
``scripts/run-example --workers 2`` there: it makes its own ``.venv`` from nothing, installs what
the example and gunicorn's gevent worker import (the ``workers`` extra), starts Redis and the
simulator, and must serve the example's pages from two workers. pip's download cache is shared
with the machine's, so only a first run downloads.

It takes minutes (a fresh virtualenv), so it is not part of the default run: ``pytest -m
fresh_clone tests/project/test_fresh_clone.py`` runs it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.redis_server import free_port

REPO = Path(__file__).resolve().parents[2]
STARTUP: float = 900.0
"""Seconds the first run may take (creating the virtualenv and installing into it)."""

pytestmark = pytest.mark.fresh_clone


def test_run_example_with_two_workers_from_a_fresh_clone_serves_the_example(tmp_path: Path) -> None:
    clone = tmp_path / "flask-krm"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=120)
    assert not (clone / ".venv").exists()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("KRM_DRAFTS_URL", "KUBECONFIG", "VIRTUAL_ENV")}
    log = tmp_path / "run.log"
    with log.open("wb") as output:
        runner = subprocess.Popen(
            ["scripts/run-example", "--workers", "2", "--port", str(port)],
            cwd=clone,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        page = _first_page(f"http://127.0.0.1:{port}/sign-in", runner, log)
        assert "sign in" in page.lower(), page[:500]
        text = log.read_text(errors="replace")
        assert text.count("Booting worker") == 2, text[-3000:]
        assert "invalid or not found" not in text
        assert (clone / ".venv" / ".setup-workers").exists()
    finally:
        os.killpg(runner.pid, signal.SIGINT)
        try:
            runner.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait(10)


def _first_page(url: str, runner: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:
        assert runner.poll() is None, f"scripts/run-example exited {runner.returncode}: {log.read_text()[-3000:]}"
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                return answer.read().decode("utf-8", "replace")
        except (urllib.error.URLError, OSError):
            time.sleep(1.0)
    raise AssertionError(f"no page within {STARTUP:.0f} s: {log.read_text()[-3000:]}")
