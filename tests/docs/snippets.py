"""The code examples of the README and the documentation, as the files they stand for.

A fenced block right after ``<!-- doc-test: FILE -->`` is the file ``FILE`` of one example
project; every such file is written into the project and run by ``test_examples.py``. A file may be
shown on several pages (the README's host is the quickstart's): each copy must be the same.
"""

from __future__ import annotations

import re
import typing as t
from pathlib import Path

ROOT: t.Final = Path(__file__).resolve().parents[2]
DOCS: t.Final = ROOT / "docs"
README: t.Final = ROOT / "README.md"
MARKED: t.Final = re.compile(r"<!-- doc-test: (\S+) -->\n```\w*\n(.*?)\n```", re.DOTALL)
FENCE: t.Final = re.compile(r"^(?P<marker><!-- doc-test: \S+ -->\n)?```(?P<language>\w*)\n", re.MULTILINE)


CONTRACTS: t.Final = DOCS / "internals.md"
"""Not a page of examples: its code blocks state the modules' contracts."""


def pages() -> list[Path]:
    """The README and every Markdown page of the documentation whose code blocks are examples."""
    return [README, *sorted(page for page in DOCS.rglob("*.md") if page != CONTRACTS)]


def example_files() -> dict[str, str]:
    """Every marked block of every page, by file name. Raises ``AssertionError`` when two copies of
    one file differ."""
    files: dict[str, str] = {}
    shown_on: dict[str, Path] = {}
    for page in pages():
        for name, code in MARKED.findall(page.read_text()):
            code += "\n"
            assert files.get(name, code) == code, f"{name} differs between {shown_on[name]} and {page}"
            files[name] = code
            shown_on.setdefault(name, page)
    return files


def unmarked_python(page: Path) -> list[int]:
    """Lines of ``page`` where a Python block starts without a ``doc-test`` marker."""
    text = page.read_text()
    return [
        text.count("\n", 0, match.start()) + 1
        for match in FENCE.finditer(text)
        if match["language"] == "python" and not match["marker"]
    ]
