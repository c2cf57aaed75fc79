"""The secret-values scenarios again with drafts kept in Redis (``KRM_DRAFTS_URL``); afterwards
every key and every value Redis holds is searched for each planted Secret value, in every form
(as is, base64 padded and not, JSON- and HTML-escaped): 0 bytes of any of them.

The scenarios are :mod:`tests.security.test_secret_values`'s own tests, collected here a second
time against hosts whose drafts, pages and save states go through Redis.
"""

from __future__ import annotations

import typing as t
from collections.abc import Iterator

import pytest
from flask import Flask

from tests.redis_server import RedisServer

from . import test_secret_values as scenarios
from .conftest import CapturedLogs
from .hosts import Recorder, leaks, make_example, make_host, shut_down
from .test_secret_values import *  # noqa: F403 - the scenarios, collected again with the fixtures below

if t.TYPE_CHECKING:
    from flask_krm.testing.simulator import KubeSimulator


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="module")
def example(kube: KubeSimulator, secret: dict[str, t.Any], redis_server: RedisServer) -> Iterator[Flask]:  # noqa: F811
    app = make_example(kube, KRM_DRAFTS_URL=redis_server.url)
    krm = app.extensions["krm"].extension
    krm.save_hook(scenarios.HookSwitch(krm.hooks.saver))
    yield app
    shut_down(app)


@pytest.fixture(scope="module")
def host(kube: KubeSimulator, secret: dict[str, t.Any], redis_server: RedisServer) -> Iterator[Flask]:  # noqa: F811
    app = make_host(kube, Recorder(), KRM_DRAFTS_URL=redis_server.url)
    yield app
    shut_down(app)


def test_copies_of_the_secret_in_annotations_are_never_editable_and_never_audited(  # noqa: F811
    host: Flask,
    kube: KubeSimulator,
    wire: scenarios.Wire,
    debug_logs: CapturedLogs,
    signal_log: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scenario as in memory. With drafts in Redis a Save writes its state out before it answers,
    so the write's echo may arrive first and the answer be "saved" instead of "saved-pending": both
    say the write was accepted, and the scenario's checks on what was written stay as they are."""
    shown = scenarios.outcome
    monkeypatch.setattr(
        scenarios, "outcome", lambda answer: "saved-pending" if shown(answer) == "saved" else shown(answer)
    )
    scenarios.test_copies_of_the_secret_in_annotations_are_never_editable_and_never_audited(
        host, kube, wire, debug_logs, signal_log
    )


def test_redis_holds_no_byte_of_any_secret_value(redis_server: RedisServer, example: Flask, host: Flask) -> None:
    held = redis_server.keys_and_values()
    assert b"page:" in held and b":records" in held, "the scenarios wrote nothing to Redis"
    assert len(scenarios.VALUES) >= 5
    assert leaks(scenarios.needles(), held) == []
    assert leaks(scenarios.needles(), held.replace(b"\\", b"")) == []
    control = redis_server.client()
    control.hset("krm:{control}:records", "planted", scenarios.VALUES[0])
    try:
        assert leaks(scenarios.needles(), redis_server.keys_and_values()), "the scan would not find a value"
    finally:
        control.delete("krm:{control}:records")
