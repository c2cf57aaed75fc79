"""The documentation's examples run as written: the host, its tests, its templates, its server.

The marked blocks of the README and of every page under ``docs/`` (:mod:`.snippets`) are written
into one project directory, next to ``harness/`` (which renders each Jinja example live), and
that project's tests run the way the testing guide says to run them.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import typing as t
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from flask_krm import config

from .snippets import DOCS, ROOT, example_files, pages, unmarked_python

HARNESS: t.Final = Path(__file__).resolve().parent / "harness"
CONFIG_ROW: t.Final = re.compile(r"^\| `KRM_([A-Z_]+)` \| `([^`]*)` \| (init|use) \|", re.MULTILINE)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding every example file of the documentation and the template harness."""
    root = tmp_path_factory.mktemp("doc-examples")
    for name, code in example_files().items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(code)
    shutil.copy(HARNESS / "test_doc_templates.py", root)
    return root


def search_path(project: Path) -> str:
    """The example project first, then this checkout (its flask_krm, whatever else is installed)."""
    return os.pathsep.join([str(project), str(ROOT)])


def run_pytest(
    project: Path, *args: str, patched: bool = True, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    runner = ["-m", "gevent.monkey", "--module", "pytest"] if patched else ["-m", "pytest"]
    return subprocess.run(
        [sys.executable, *runner, "-q", "-p", "no:cacheprovider", *args],
        cwd=project,
        env={**os.environ, "PYTHONPATH": search_path(project)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_the_examples_are_the_files_of_one_project() -> None:
    files = example_files()
    assert {"myapp.py", "serve.py", "pytest.ini", "test_myapp.py"} <= set(files)
    assert any(name.startswith("templates/") for name in files)


@pytest.mark.parametrize("page", pages(), ids=lambda page: page.name)
def test_every_python_example_runs(page: Path) -> None:
    lines = unmarked_python(page)
    assert not lines, (
        f"{page}: a python block without a marker at lines {lines}; put <!-- doc-test: FILE --> on the line"
        " before it, and it becomes the file FILE of the example project (tests/docs/snippets.py)"
    )


def test_the_host_its_tests_and_every_template_run_as_written(project: Path) -> None:
    done = run_pytest(project)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    files = example_files()
    templates = len([name for name in files if name.startswith("templates/")])
    tests = sum(
        isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
        for name, code in files.items()
        if Path(name).name.startswith("test_") and name.endswith(".py")
        for node in ast.parse(code).body
    )
    # the examples' tests, the harness's check that it found templates, one per template
    assert re.search(rf"\b{tests + 1 + templates} passed\b", done.stdout), done.stdout[-3000:]


def test_the_plugin_tells_an_unpatched_run_how_to_run(project: Path) -> None:
    done = run_pytest(project, "-k", "only_read", "test_myapp.py", patched=False, timeout=120)
    assert done.returncode == 1
    assert "python -m gevent.monkey --module pytest" in done.stdout


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_entry_point_serves_the_host(project: Path) -> None:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "serve.py"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": search_path(project), "PORT": str(port)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, server.communicate()[0][-3000:]
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/config/", timeout=5)
            except urllib.error.HTTPError as answer:
                status = answer.code
                break
            except OSError:
                assert time.monotonic() < deadline, "serve.py never answered"
                time.sleep(0.2)
            else:
                pytest.fail("an anonymous request was served a page")
        assert status == 401  # login_required, and the host has no sign-in view of its own
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_the_configuration_table_lists_every_key_with_its_default_and_when_it_is_read() -> None:
    table = (DOCS / "guide" / "configuration.md").read_text()
    rows = {key: (default, read) for key, default, read in CONFIG_ROW.findall(table)}
    assert set(rows) == set(config.DEFAULTS)
    for key, (default, read) in rows.items():
        assert ast.literal_eval(default) == config.DEFAULTS[key], key
        assert read == ("init" if key in config.STRUCTURAL else "use"), key
