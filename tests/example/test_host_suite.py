"""Run ``host_suite/`` (the example tested through flask-krm's pytest plugin) in a patched pytest."""

from __future__ import annotations

import re
import subprocess
import sys

from .conftest import ROOT, clean_environment


def test_the_example_passes_its_host_tests_written_with_the_pytest_plugin() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gevent.monkey",
            "--module",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/example/host_suite",
        ],
        cwd=ROOT,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]
    assert re.search(r"\b6 passed\b", done.stdout), done.stdout[-2000:]
