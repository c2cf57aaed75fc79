"""gevent is imported by few library modules, each for a reason: the others take its primitives
from :mod:`flask_krm.concurrency`.

Every import counts, as in the layer test: at module level, under ``TYPE_CHECKING`` and inside a
function. The pure core imports no gevent either: it may not import :mod:`flask_krm.concurrency`
(a services module, above it: ``test_import_layers.py``), none of its modules is allowed here, and
``test_pure_imports.py`` imports each with gevent blocked.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "flask_krm"

GEVENT: tuple[str, ...] = ("gevent", "greenlet")
"""gevent and the greenlets it is made of."""

ALLOWED: dict[str, str] = {
    "concurrency.py": "the library's one door to gevent's primitives",
    "serving.py": "stop_server is typed with gevent's WSGIServer, the server it stops",
    "cli.py": "the StatusServer of `flask krm streams` is a gevent StreamServer",
    "testing/simulator/server.py": "the test Kubernetes API server is a gevent pywsgi server and handler",
    "testing/simulator/tls.py": "the test server's TLS context is gevent's cooperative SSLContext",
    "testing/simulator/hub_thread.py": "a native thread with a gevent hub of its own, started and ended with the "
    "thread functions gevent.monkey saved unpatched",
}
"""Library modules that import gevent, and why (the pywsgi server driver reads pywsgi's handler
from ``sys.modules`` and imports no gevent: it engages only when the server already loaded it)."""


def gevent_imports(source: str, filename: str = "<sample>") -> list[tuple[int, str]]:
    """``(line, module)`` for each import of gevent (or greenlet) in ``source``, wherever it is."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        found.extend((node.lineno, name) for name in names if name.split(".")[0] in GEVENT)
    return found


MODULES = sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("module", [module for module in MODULES if module not in ALLOWED])
def test_a_library_module_takes_gevent_from_the_concurrency_module(module: str) -> None:
    found = gevent_imports(PACKAGE.joinpath(module).read_text(), module)
    assert not found, (
        f"flask_krm/{module} imports "
        + ", ".join(f"{name} (line {line})" for line, name in found)
        + ": take the primitive from flask_krm.concurrency (add it there if it is missing), "
        "or add the module to ALLOWED with the reason it must import gevent itself"
    )


@pytest.mark.parametrize("module", sorted(ALLOWED))
def test_each_allowed_module_does_import_gevent(module: str) -> None:
    """The list stays true: a module that no longer imports gevent leaves it."""
    assert gevent_imports(PACKAGE.joinpath(module).read_text(), module)


@pytest.mark.parametrize(
    "statement",
    [
        "import gevent\n",
        "import gevent.queue as queues\n",
        "from gevent.pool import Group\n",
        "import greenlet\n",
        "if TYPE_CHECKING:\n    from gevent.pywsgi import WSGIServer\n",
        "def late() -> None:\n    import gevent.monkey\n",
        "class Late:\n    def method(self) -> None:\n        from gevent import sleep\n",
    ],
)
def test_the_check_sees_every_kind_of_import(statement: str) -> None:
    source = PACKAGE.joinpath("subscriptions.py").read_text()
    assert not gevent_imports(source)
    assert gevent_imports(source + "\n\n" + statement)


def test_the_check_leaves_the_concurrency_module_and_other_packages_alone() -> None:
    assert not gevent_imports("from . import concurrency\nfrom ..concurrency import sleep\nimport geventish\n")
