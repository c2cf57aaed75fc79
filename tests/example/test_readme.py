"""The README stays true: its snippets run as written, its configuration table matches the code."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import typing as t
from pathlib import Path

from flask_krm import config

from .conftest import ROOT

README: t.Final = ROOT / "README.md"
SNIPPET: t.Final = re.compile(r"<!-- readme-test: (\S+) -->\n```\w*\n(.*?)\n```", re.DOTALL)
CONFIG_ROW: t.Final = re.compile(r"^\| `KRM_([A-Z_]+)` \| `([^`]*)` \| (init|use) \|", re.MULTILINE)


def readme_snippets() -> dict[str, str]:
    """Every code block marked ``<!-- readme-test: FILE -->`` in the README, by file name."""
    return {name: code + "\n" for name, code in SNIPPET.findall(README.read_text())}


def test_the_readme_opens_with_the_two_commands() -> None:
    lines = README.read_text().splitlines()
    block = lines[lines.index("```sh") + 1 : lines.index("```sh") + 3]
    assert block[0].startswith("make run ") and block[1].startswith("make test ")


def test_the_host_snippet_and_its_test_run_as_written(tmp_path: Path) -> None:
    snippets = readme_snippets()
    assert set(snippets) == {"myapp.py", "pytest.ini", "test_myapp.py"}
    for name, code in snippets.items():
        (tmp_path / name).write_text(code)
    # Exactly as the README says to run it; the host's project is its own rootdir.
    done = subprocess.run(
        [sys.executable, "-m", "gevent.monkey", "--module", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert re.search(r"\b2 passed\b", done.stdout), done.stdout[-3000:]


def test_the_plugin_tells_an_unpatched_run_how_to_run(tmp_path: Path) -> None:
    for name, code in readme_snippets().items():
        (tmp_path / name).write_text(code)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "only_read"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "python -m gevent.monkey --module pytest" in done.stdout


def test_the_configuration_table_lists_every_key_with_its_default_and_when_it_is_read() -> None:
    rows = {key: (default, read) for key, default, read in CONFIG_ROW.findall(README.read_text())}
    assert set(rows) == set(config.DEFAULTS)
    for key, (default, read) in rows.items():
        assert ast.literal_eval(default) == config.DEFAULTS[key], key
        assert read == ("init" if key in config.STRUCTURAL else "use"), key
