"""Test folders that must run in a gevent-patched process, run the same way and reported by name.

Real sockets (urllib3 under the official client, the hub's watches) cooperate with other
greenlets only in a process that gevent patched before ``ssl``, ``urllib3`` and ``kubernetes`` were
imported. Patching the shared pytest process would come too late for that, and would change every
other suite run in it (the top-level modules' tests in ``tests/`` assert behaviour of an unpatched process). So, in an
unpatched pytest process, the first selected test of such a folder starts one child ``pytest``
that patches itself first thing and runs every selected test of the folder; each test's setup,
call and teardown reports come back and are reported as that test's own (tracebacks included).
In a patched process (that child, or a suite run under ``python -m gevent.monkey``) the tests
simply run.

A folder's ``conftest.py`` exposes the three hooks of one :class:`PatchedFolder`::

    pytest_runtest_protocol, pytest_runtest_logreport, pytest_configure = PatchedFolder(HERE).hooks()
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Final

import gevent.monkey
import pytest
from _pytest.reports import TestReport

PATCHED: Final = gevent.monkey.is_module_patched("socket")
REPORTS_ENV: Final = "TESTS_PATCHED_REPORTS"
"""Where the child writes its reports (not FLASK_-prefixed: a host may read those into its config)."""
_CHILD_MAIN: Final = (
    "from gevent import monkey; monkey.patch_all()\nimport sys, pytest\nsys.exit(pytest.main(sys.argv[1:]))\n"
)


class PatchedFolder:
    """The tests under ``here``, run in one patched child when the current process is unpatched.

    :param here: the folder.
    :param timeout: seconds the child may take for every selected test of the folder.
    :param drop_env: environment variables the child does not inherit.
    """

    def __init__(self, here: Path, *, timeout: float = 900.0, drop_env: Collection[str] = ()) -> None:
        self.here = here
        self.timeout = timeout
        self.drop_env = frozenset(drop_env)
        self._results: dict[str, list[TestReport]] | None = None
        self._config: pytest.Config | None = None
        self._prefix = ""

    def hooks(self) -> tuple[Callable[..., bool | None], Callable[..., None], Callable[..., None]]:
        """The folder's ``pytest_runtest_protocol``, ``pytest_runtest_logreport`` and
        ``pytest_configure`` hooks, for its ``conftest.py``."""

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
            return self.run_protocol(item)

        def pytest_runtest_logreport(report: TestReport) -> None:
            self.log_report(report)

        def pytest_configure(config: pytest.Config) -> None:
            self.configure(config)

        return pytest_runtest_protocol, pytest_runtest_logreport, pytest_configure

    def owns(self, item: pytest.Item) -> bool:
        return self.here in Path(str(item.path)).parents

    def configure(self, config: pytest.Config) -> None:
        """``pytest_configure``: keep the configuration (the child serializes reports with it)."""
        self._config = config
        self._prefix = self.here.relative_to(config.rootpath).as_posix() + "/"

    def run_protocol(self, item: pytest.Item) -> bool | None:
        """``pytest_runtest_protocol``: in an unpatched process, report the test from the child's run."""
        if PATCHED or not self.owns(item):
            return None
        if self._results is None:
            self._results = self._run_child(item.session)
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        for report in self._results.get(item.nodeid, []):
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    def log_report(self, report: TestReport) -> None:
        """``pytest_runtest_logreport``: in the child, hand every report of the folder back to the parent."""
        path = os.environ.get(REPORTS_ENV)
        config = self._config
        if not PATCHED or not path or config is None or not report.nodeid.startswith(self._prefix):
            return
        data = config.hook.pytest_report_to_serializable(config=config, report=report)
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(data) + "\n")

    def _run_child(self, session: pytest.Session) -> dict[str, list[TestReport]]:
        """Run every selected test of the folder in one patched child; their reports by node id."""
        config = session.config
        items = [item for item in session.items if self.owns(item)]
        with tempfile.TemporaryDirectory() as tmp:
            reports_path = Path(tmp) / "reports.jsonl"
            env = {k: v for k, v in os.environ.items() if k not in self.drop_env}
            env[REPORTS_ENV] = str(reports_path)
            command = [sys.executable, "-c", _CHILD_MAIN, "-q", "-p", "no:cacheprovider", *(i.nodeid for i in items)]
            try:
                done = subprocess.run(
                    command, cwd=config.rootpath, env=env, capture_output=True, text=True, timeout=self.timeout
                )
                output = done.stdout + done.stderr
            except subprocess.TimeoutExpired as exc:
                output = f"the patched child pytest did not finish within {self.timeout:.0f} s\n{exc.stdout or ''}"
            results: dict[str, list[TestReport]] = {}
            if reports_path.exists():
                for line in reports_path.read_text().splitlines():
                    report = config.hook.pytest_report_from_serializable(config=config, data=json.loads(line))
                    results.setdefault(report.nodeid, []).append(report)
        for item in items:
            if not any(r.when == "call" for r in results.get(item.nodeid, [])):
                results[item.nodeid] = [
                    TestReport(
                        item.nodeid,
                        item.location,
                        {},
                        "failed",
                        f"the patched child pytest reported nothing for this test; its output:\n{output[-8000:]}",
                        "call",
                    )
                ]
        return results
