"""The liveness and readiness probes, through the Flask test client (``served`` in ``conftest.py``).

The event loop's ticker is a greenlet: in this unpatched process it runs whenever the test blocks
on gevent (``gevent.sleep``), and a ``time.sleep`` holds it up as a stuck event loop would. The
multi-worker behaviour (gunicorn, Redis, a real Prometheus) is in
``tests/example/test_operations_gunicorn.py``.
"""

from __future__ import annotations

import re
import time
import typing as t
from pathlib import Path

import gevent
import pytest
from flask import Flask

from flask_krm import KrmStream
from tests.apps import allow, make_app


def test_probes_and_metrics_are_off_by_default(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    KrmStream(app, authorizer=allow)
    client = app.test_client()
    for path in ("/livez", "/readyz", "/metrics", "/healthz"):
        assert client.get(path).status_code == 404


@pytest.mark.parametrize("key", ["KRM_METRICS_PATH", "KRM_LIVENESS_PATH", "KRM_READINESS_PATH"])
@pytest.mark.parametrize("value", ["metrics", "/", "/x?y", 3])
def test_a_path_setting_must_be_a_path(tmp_path: Path, key: str, value: t.Any) -> None:
    app = make_app(tmp_path, **{key: value})
    with pytest.raises(ValueError, match=key):
        KrmStream(app, authorizer=allow)


def test_readiness_waits_for_the_event_loop_then_fails_from_the_first_moment_of_a_drain(
    served: tuple[Flask, KrmStream],
) -> None:
    app, krm = served
    client = app.test_client()
    first = client.get("/readyz?verbose")
    assert first.status_code == 503
    assert "[-]event-loop failed (starting: the ticker has not ticked yet)" in first.text
    gevent.sleep(0.7)
    assert client.get("/readyz").status_code == 200
    assert client.get("/readyz").text == "ok"
    krm.runtime(app).begin_drain()
    drained = client.get("/readyz?verbose")
    assert drained.status_code == 503
    assert "[-]shutdown failed (draining: the server is stopping)" in drained.text
    assert drained.text.endswith("readyz check failed\n")
    assert client.get("/livez").status_code == 200  # draining is not dying


def test_liveness_and_readiness_stay_up_while_redis_and_the_api_server_are_down(
    served: tuple[Flask, KrmStream],
) -> None:
    app, _ = served
    client = app.test_client()
    client.get("/livez")
    gevent.sleep(0.7)
    live = client.get("/livez?verbose")
    assert live.status_code == 200, live.text
    assert re.match(r"\[\+\]event-loop ok \(\d+\.\dms behind\)\nlivez check passed\n", live.text)
    ready = client.get("/readyz?verbose")
    assert ready.status_code == 200, ready.text
    lines = ready.text.splitlines()
    assert lines[0] == "[+]shutdown ok"
    assert lines[1].startswith("[+]event-loop ok")
    assert lines[2] == "[-]drafts failed (unreachable: BackendUnavailable) [not counted]"
    assert re.fullmatch(r"\[-\]target:demo failed \(unreachable: \w+\) \[not counted\]", lines[3]), lines[3]
    assert lines[4] == "[+]watches ok (none open)"
    assert lines[5] == "readyz check passed"
    assert "127.0.0.1" not in ready.text  # no address leaks from the errors
    assert client.get("/readyz").text == "ok"


def test_liveness_fails_while_the_event_loop_is_held_and_recovers(served: tuple[Flask, KrmStream]) -> None:
    app, _ = served
    client = app.test_client()
    client.get("/livez")
    gevent.sleep(0.7)
    assert client.get("/livez").status_code == 200
    time.sleep(1.2)  # no greenlet runs: the ticker is overdue by more than KRM_LIVENESS_MAX_LAG
    stuck = client.get("/livez?verbose")
    assert stuck.status_code == 503
    assert re.match(r"\[-\]event-loop failed \(\d+\.\d{3}s behind, more than 0\.5s\)", stuck.text), stuck.text
    gevent.sleep(1.2)  # the ticker wakes (late: that lag is reported once), then on time
    assert client.get("/livez").status_code == 200
