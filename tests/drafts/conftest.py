"""The draft backend suite runs in a gevent-patched process (see :mod:`tests.patched`): workers
receive each other's changes on a Redis subscription read in a greenlet. Every module gets its own
real ``redis-server`` (:class:`tests.redis_server.RedisServer`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.patched import PatchedFolder
from tests.redis_server import RedisServer

pytest_runtest_protocol, pytest_runtest_logreport, pytest_configure = PatchedFolder(
    Path(__file__).parent, timeout=600.0, drop_env=("KUBECONFIG",)
).hooks()


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture
def clean_redis(redis_server: RedisServer) -> RedisServer:
    """The module's server, emptied."""
    redis_server.client().flushall()
    return redis_server
