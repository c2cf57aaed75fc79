"""The pure save modules import neither Flask nor gevent (nor Werkzeug or the Kubernetes client)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PURE = (
    "flask_krm.save.outcomes",
    "flask_krm.save.flow",
    "flask_krm.save.staging",
    "flask_krm.save.audit",
    "flask_krm.bodies",
)
SCRIPT = textwrap.dedent(
    """
    import importlib, sys
    blocked = {"flask", "flask_login", "werkzeug", "gevent", "greenlet", "kubernetes"}

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in blocked:
                raise ImportError(f"{name} is blocked: a pure module must not import it")
            return None

    sys.meta_path.insert(0, Blocker())
    importlib.import_module(sys.argv[1])
    """
)


@pytest.mark.parametrize("module", PURE)
def test_pure_module_imports_no_framework(module: str) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, module], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
