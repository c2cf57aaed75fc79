"""Imports point one way: no module of flask_krm imports a module of a layer above its own, and no
module imports, through any chain of modules, one that imports it (no cycle, within a layer too).

Every import counts, at module level, under ``TYPE_CHECKING`` and inside a function, since a
function-local import is still a dependency. The layers, bottom to top, are the ones
``docs/internals.md`` opens with: its diagram is drawn from :data:`LAYERS` (``python
tests/project/test_import_layers.py`` redraws it) and a test fails when it differs. A new module must be
placed in a layer here.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from itertools import groupby
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "flask_krm"
INTERNALS = PACKAGE.parent / "docs" / "internals.md"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "core",
        (
            "events",
            "ops",
            "scope",
            "projection",
            "versions",
            "stream",
            "sse",
            "bodies",
            "logvalues",
            "yaml_text",
            "kube_schema",
            "store.*",
            "upstream.scripted",
            "save.__init__",
            "save.outcomes",
            "save.flow",
            "save.staging",
            "save.audit",
            "save.audit_events",
            "save.checks",
            "log_json",
            "rbac",
        ),
    ),
    (
        "services",
        (
            "concurrency",
            "proxies",
            "errors",
            "principal",
            "signals",
            "config",
            "csrf",
            "memory",
            "drafts.*",
            "sessions",
            "upstream.__init__",
            "upstream.clients",
            "upstream.reflector",
            "upstream.authz",
            "access",
            "upstream.collector",
            "pywsgi_driver",
            "upstream.hub",
            "upstream.native",
            "upstream.openapi",
            "subscriptions",
            "save.writer",
            "save.publish",
            "save.perform",
            "save.audit_sink",
            "save.dry_run",
            "permissions",
            "hooks",
            "log_fields",
            "event_loop",
            "metrics",
        ),
    ),
    (
        "rendering",
        (
            "htmx",
            "sse_response",
            "ui.labels",
            "ui.status",
            "ui.list_widgets",
            "ui.schema_fields",
            "ui.widgets",
            "ui.yaml_view",
            "ui.cells",
            "ui.list_query",
            "ui.list_view",
            "ui.offer",
            "ui.page",
            "ui.recovery",
            "ui.render",
            "ui.list_updates",
            "ui.editor_updates",
            "ui.paint",
            "ui.feeds",
            "ui.state",
            "ui.assets",
            "save.fragments",
        ),
    ),
    ("runtime", ("runtime",)),
    (
        "web",
        (
            "guards",
            "stream_view",
            "ui.binding",
            "ui.actions",
            "ui.discard",
            "ui.problems",
            "ui.edit_forms",
            "ui.edits",
            "ui.yaml_edits",
            "ui.channel",
            "ui.live",
            "ui.routes",
            "save.controls",
            "save.checking",
            "save.editor",
            "save.review",
            "native",
            "cli",
            "health",
            "serving",
        ),
    ),
    ("extension", ("extension",)),
    ("surface", ("__init__", "ui.__init__", "testing.*")),
)

PURPOSE: dict[str, str] = {
    "core": "pure: no Flask, no gevent, no network",
    "services": "the host's seams, access, sessions and drafts, upstream watches, writes",
    "rendering": "pages, widgets, live lists and editors as HTML, channel fragments",
    "runtime": "KrmRuntime: one per app in app.extensions['krm'] (runtime() reads it)",
    "web": "request handling: one module per route family",
    "extension": "KrmStream: the hooks and init_app, the one wiring place",
    "surface": "the public names, loaded lazily; the tools for testing a host",
}
"""What each layer holds, as the diagram says it."""


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE).with_suffix("").parts)


def layer_of(module: str) -> int:
    for rank, (_, members) in enumerate(LAYERS):
        for member in members:
            if member == module or (member.endswith(".*") and module.startswith(member[:-1])):
                return rank
    raise LookupError(module)


MODULES = sorted(module_name(path) for path in PACKAGE.rglob("*.py"))
KNOWN = {name.removesuffix(".__init__") for name in MODULES}


def imported(path: Path, module: str | None = None) -> list[tuple[int, str]]:
    """``(line, module)`` for every flask_krm module ``path`` (the module ``module``, by default
    the one at ``path``) imports, wherever the import is."""
    package = (module or module_name(path)).split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("flask_krm."):
                    found.append((node.lineno, alias.name.removeprefix("flask_krm.")))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith("flask_krm"):
                target = node.module.removeprefix("flask_krm").lstrip(".")
            else:
                continue
            for alias in node.names:
                candidate = f"{target}.{alias.name}" if target else alias.name
                found.append((node.lineno, candidate if candidate in KNOWN else target or "__init__"))
    return found


def as_module(name: str) -> str:
    return name if name in MODULES else f"{name}.__init__"


@pytest.mark.parametrize("module", [m for m in MODULES if not m.startswith("testing.simulator")])
def test_no_module_imports_a_layer_above_its_own(module: str) -> None:
    path = PACKAGE.joinpath(*module.split(".")).with_suffix(".py")
    own = layer_of(module)
    backward = [
        f"line {line}: {target} ({LAYERS[layer_of(as_module(target))][0]})"
        for line, target in imported(path)
        if layer_of(as_module(target)) > own
    ]
    assert not backward, f"{module} ({LAYERS[own][0]}) imports upward: " + "; ".join(backward)


PAINTING: tuple[str, ...] = ("ui.page", "ui.list_view", "ui.render", "ui.list_updates", "ui.editor_updates")
"""The page model and what paints it, in order: each imports only those before it, so the persisted
page knows nothing of how it is painted and list and editor updates know nothing of each other."""


@pytest.mark.parametrize("module", PAINTING)
def test_the_page_and_its_painting_import_one_way(module: str) -> None:
    path = PACKAGE.joinpath(*module.split(".")).with_suffix(".py")
    later = set(PAINTING[PAINTING.index(module) :])
    wrong = [f"line {line}: {target}" for line, target in imported(path) if target in later]
    assert not wrong, f"{module} imports what paints after it: " + "; ".join(wrong)


def test_every_module_has_a_layer() -> None:
    unplaced = []
    for module in MODULES:
        try:
            layer_of(module)
        except LookupError:
            unplaced.append(module)
    assert not unplaced, f"place these modules in a layer: {unplaced}"


@pytest.mark.parametrize(
    ("module", "statement", "target"),
    [
        ("access", "def late() -> None:\n    from .runtime import runtime\n", "runtime"),
        ("ui.render", "if TYPE_CHECKING:\n    from ..extension import KrmStream\n", "extension"),
        ("save.perform", "def late() -> None:\n    from ..ui import routes\n", "ui.routes"),
        ("sessions", "import flask_krm.guards\n", "guards"),
    ],
)
def test_the_check_sees_every_kind_of_import(tmp_path: Path, module: str, statement: str, target: str) -> None:
    copy = tmp_path / "sample.py"
    copy.write_text(PACKAGE.joinpath(*module.split(".")).with_suffix(".py").read_text() + "\n\n" + statement)
    found = [name for _, name in imported(copy, module)]
    assert target in found
    assert layer_of(as_module(target)) > layer_of(module)


def import_graph() -> dict[str, set[str]]:
    """Every library module and the library modules it imports, wherever the import is."""
    return {
        module: {as_module(target) for _, target in imported(PACKAGE.joinpath(*module.split(".")).with_suffix(".py"))}
        - {module}
        for module in MODULES
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one module: each is a set of
    modules every one of which imports every other, through the others (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_import_cycle_among_library_modules() -> None:
    graph = import_graph()
    described = [
        " <-> ".join(cycle) + ": " + "; ".join(f"{m} imports {sorted(graph[m] & set(cycle))}" for m in cycle)
        for cycle in cycles(graph)
    ]
    assert not described, "import cycles: " + " | ".join(described)


def test_the_cycle_check_sees_a_cycle_through_a_type_only_or_late_import(tmp_path: Path) -> None:
    copy = tmp_path / "sample.py"
    copy.write_text(PACKAGE.joinpath("scope.py").read_text() + "\n\nif TYPE_CHECKING:\n    from .stream import X\n")
    graph = import_graph()
    graph["scope"] |= {as_module(target) for _, target in imported(copy, "scope")}
    assert ["scope", "stream"] in cycles(graph)  # stream imports scope
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


DIAGRAM = re.compile(r"(<!-- layers: drawn by tests/project/test_import_layers.py -->\n```text\n)(.*?)(```)", re.DOTALL)


def spelled(members: tuple[str, ...], width: int = 72) -> list[str]:
    """Module names as paths, a package's modules grouped: ``ui/{labels,status}``, ``store/``."""
    words = []
    for package, group in groupby(members, key=lambda member: member.rpartition(".")[0]):
        names = [member.rpartition(".")[2].replace("*", "") for member in group]
        if not package:
            words.extend(names)
            continue
        while names:
            taken = 1
            while taken < len(names) and len(f"{package}/{{{','.join(names[: taken + 1])}}}") <= width:
                taken += 1
            chunk, names = names[:taken], names[taken:]
            words.append(f"{package}/{chunk[0]}" if len(chunk) == 1 else f"{package}/{{{','.join(chunk)}}}")
    return words


def diagram() -> str:
    """The layers, top to bottom, with what each holds and its modules."""
    lines = []
    for rank, (layer, members) in reversed(list(enumerate(LAYERS))):
        indent = "    │        " if rank else "             "
        lines.append(f" {layer:<11} {PURPOSE[layer]}")
        lines.extend(
            textwrap.wrap(
                "  ".join(spelled(members)),
                86,
                initial_indent=indent,
                subsequent_indent=indent,
                break_on_hyphens=False,
                break_long_words=False,
            )
        )
        if rank:
            lines.append("    │")
    return "\n".join(lines) + "\n"


def test_the_diagram_of_the_internals_is_drawn_from_the_layers() -> None:
    drawn = DIAGRAM.search(INTERNALS.read_text())
    assert drawn, f"{INTERNALS} has no layer diagram under its marker"
    assert drawn.group(2) == diagram(), (
        "the layer diagram differs: run python tests/project/test_import_layers.py to redraw it"
    )


if __name__ == "__main__":
    text = INTERNALS.read_text()
    if not DIAGRAM.search(text):
        sys.exit(f"{INTERNALS} has no layer diagram under its marker")
    INTERNALS.write_text(DIAGRAM.sub(lambda drawn: drawn.group(1) + diagram() + drawn.group(3), text))
