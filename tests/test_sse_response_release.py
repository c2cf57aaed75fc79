"""A client that closes its stream (a JSON stream or a page channel) is released at once, not at
the next write.

The hub needs a gevent-patched process and this one is not patched, so each scenario runs in a
child process (``tests/probes/client_close.py``, ``tests/probes/channel_close.py``) serving the app with gevent's
pywsgi over HTTP/1.1.
"""

from __future__ import annotations

from tests.probes.harness import run_probe


def test_a_closed_idle_client_is_released_before_any_write() -> None:
    seen = run_probe("client_close", timeout=120)
    assert seen["status"] == "HTTP/1.1 200 OK"
    assert "content-type: text/event-stream" in seen["headers"]
    assert "transfer-encoding: chunked" in seen["headers"]
    assert seen["watches_before"] == 1
    assert seen["reason"] == "client-closed"
    # the stream was idle: without watching the socket it would be noticed at the first
    # heartbeat, 30 s after the last write
    assert seen["released_after_s"] < seen["heartbeat_s"] / 3
    assert seen["watches_after"] == 0, "the subscription and (linger 0) the watch are gone"


def test_a_closed_idle_page_channel_is_released_before_any_write() -> None:
    seen = run_probe("channel_close", timeout=120)
    assert seen["status"] == "HTTP/1.1 200 OK"
    assert seen["channels_before"] == 1
    # idle: without watching the socket it would be noticed at the first heartbeat, 30 s later
    assert seen["released_after_s"] < seen["heartbeat_s"] / 3
