"""The security suite runs in a gevent-patched process (see :mod:`tests.patched`): every test
here drives whole applications whose Kubernetes targets are served by the shared hub. The child
does not inherit ``KUBECONFIG``."""

from __future__ import annotations

import logging
import typing as t
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.patched import PatchedFolder

if t.TYPE_CHECKING:
    from flask import Flask

    from flask_krm.testing.simulator import KubeSimulator

pytest_runtest_protocol, pytest_runtest_logreport, pytest_configure = PatchedFolder(
    Path(__file__).parent, timeout=900.0, drop_env=("KUBECONFIG",)
).hooks()


class CapturedLogs(logging.Handler):
    """Every record of every logger, formatted with its traceback, kept as text."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@pytest.fixture
def debug_logs() -> Iterator[CapturedLogs]:
    """Every log line written while the test runs, at DEBUG level, from every logger.

    Every existing logger is set to DEBUG for the test (and restored after); loggers that do not
    propagate get the handler themselves.
    """
    handler = CapturedLogs()
    root = logging.getLogger()
    loggers = [root] + [
        logger for logger in list(logging.Logger.manager.loggerDict.values()) if isinstance(logger, logging.Logger)
    ]
    levels = {logger: logger.level for logger in loggers}
    attached = [logger for logger in loggers if logger is root or not logger.propagate]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
    for logger in attached:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in attached:
            logger.removeHandler(handler)
        for logger, level in levels.items():
            logger.setLevel(level)


@pytest.fixture(scope="module")
def kube() -> Iterator[KubeSimulator]:
    """One simulator per test module, with the demo users, RBAC and objects (no demo controller)."""
    from flask_krm.testing.simulator import KubeSimulator

    with KubeSimulator(demo=True, demo_tick=None) as simulator:
        yield simulator


@pytest.fixture(scope="module")
def example(kube: KubeSimulator) -> Iterator[Flask]:
    """The example application on this module's simulator (see ``hosts.make_example``)."""
    from .hosts import make_example, shut_down

    app = make_example(kube)
    yield app
    shut_down(app)
