"""The pure core imports neither Flask nor gevent (nor Werkzeug or the Kubernetes client).

Each check runs in a fresh interpreter with a meta-path finder that refuses those packages, so a
module that reaches for one of them fails to import. Two checks per module:

- through the real package, exactly as a host imports it (``flask_krm/__init__.py`` included);
- with the ``flask_krm`` package replaced by a bare namespace, so that a failure there is the
  module's own imports and not the package's ``__init__``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PURE_MODULES = (
    "flask_krm.scope",
    "flask_krm.projection",
    "flask_krm.versions",
    "flask_krm.events",
    "flask_krm.ops",
    "flask_krm.stream",
    "flask_krm.sse",
    "flask_krm.upstream.scripted",
    "flask_krm.store",
    "flask_krm.store.text_merge",
    "flask_krm.logvalues",
    "flask_krm.log_json",
    "flask_krm.yaml_text",
    "flask_krm.kube_schema",
    "flask_krm.rbac",
)

BLOCKED = ("flask", "flask_login", "werkzeug", "gevent", "greenlet", "kubernetes")

SCRIPT = textwrap.dedent("""
    import importlib, sys, types

    blocked, module, bare = set(sys.argv[1].split(",")), sys.argv[2], sys.argv[3] == "bare"

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in blocked:
                raise ImportError(f"{name} is blocked: a pure module must not import it")
            return None

    sys.meta_path.insert(0, Blocker())
    if bare:
        package = types.ModuleType("flask_krm")
        package.__path__ = ["flask_krm"]
        sys.modules["flask_krm"] = package
    importlib.import_module(module)
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in blocked)
    assert not leaked, leaked
    """)


def _import(module: str, *, bare: bool) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, ",".join(BLOCKED), module, "bare" if bare else "package"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_blocker_blocks() -> None:
    result = _import("flask_krm.extension", bare=True)
    assert result.returncode != 0 and "is blocked" in result.stderr


@pytest.mark.parametrize("module", PURE_MODULES)
def test_a_pure_module_imports_nothing_impure_itself(module: str) -> None:
    result = _import(module, bare=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("module", PURE_MODULES)
def test_a_pure_module_imports_without_flask_or_gevent(module: str) -> None:
    result = _import(module, bare=False)
    assert result.returncode == 0, (
        f"importing {module} the way a host does pulled in a blocked package; if the traceback "
        "passes through flask_krm/__init__.py, that file must import its Flask-side names lazily\n" + result.stderr
    )
