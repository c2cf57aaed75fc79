"""The hub refuses to start in a process that gevent has not monkey-patched."""

from __future__ import annotations

import subprocess
import sys

UNPATCHED = """
from flask_krm.upstream.authz import allow_all
from flask_krm.upstream.clients import ApiClients
from flask_krm.upstream.hub import Hub
try:
    Hub(ApiClients({}), allow_all)
except RuntimeError as refusal:
    print(refusal)
"""


def test_an_unpatched_process_gets_a_message_naming_the_fix() -> None:
    done = subprocess.run([sys.executable, "-c", UNPATCHED], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "monkey.patch_all()" in done.stdout
    assert "gevent worker" in done.stdout
