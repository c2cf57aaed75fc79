"""Run the security suite in a gevent-patched pytest (see ``conftest.py``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_security_suite_passes_in_a_patched_process() -> None:
    environment = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    done = subprocess.run(
        [sys.executable, "-m", "gevent.monkey", "--module", "pytest", "-q", "-p", "no:cacheprovider", "-rfEX",
         "tests/security"],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=900, check=False,
    )
    summary = done.stdout[-8000:] + done.stderr[-2000:]
    assert done.returncode == 0, summary
    assert re.search(r"\b\d+ passed\b", done.stdout), summary
    assert not re.search(r"\b(failed|error|errors|xpassed|skipped)\b", done.stdout.splitlines()[-1]), summary
