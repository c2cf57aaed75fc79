"""No library class grows past 400 lines: where it would, its responsibilities part into classes or
modules of their own."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "flask_krm"
MAX_LINES = 400


def class_sizes(source: str) -> dict[str, int]:
    """Lines of every class in ``source`` (nested ones too), by name."""
    return {
        node.name: (node.end_lineno or node.lineno) - node.lineno + 1
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef)
    }


def test_no_library_class_is_over_400_lines() -> None:
    over = {
        f"{path.relative_to(PACKAGE).as_posix()}:{name}": lines
        for path in sorted(PACKAGE.rglob("*.py"))
        for name, lines in class_sizes(path.read_text()).items()
        if lines > MAX_LINES
    }
    assert over == {}


def test_the_count_sees_a_long_class() -> None:
    long_class = "class Long:\n" + "    x = 1\n" * MAX_LINES
    assert class_sizes(long_class) == {"Long": MAX_LINES + 1}
