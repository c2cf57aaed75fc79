"""The example tested the way a host tests its own application: with flask-krm's pytest plugin.

These tests need a gevent-patched process; ``tests/example/test_host_suite.py`` runs them in one
(``python -m gevent.monkey --module pytest``), and an unpatched run does not collect them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask

from example_app import create_app
from flask_krm.testing.pytest_plugin import require_patched


@pytest.fixture
def krm_app(krm_config: dict[str, Any]) -> Iterator[Flask]:
    """The example on the plugin's simulator (instead of an ini ``krm_app_factory``)."""
    require_patched()
    app = create_app(krm_config)
    yield app
    app.extensions["krm"].extension.shutdown(app, timeout=2.0)
