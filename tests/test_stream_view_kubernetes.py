"""A Kubernetes target end to end: the endpoint, the shared hub and the simulator's real watch.

The hub needs a gevent-patched process and this one is not patched (see ``conftest.py``), so the
scenario runs in a child process (``tests/probes/kube.py``) that patches first and reports in JSON.
"""

from __future__ import annotations

from tests.probes.harness import run_probe


def test_a_kubernetes_target_streams_through_the_hub_and_shuts_down_cleanly() -> None:
    seen = run_probe("kube", timeout=60)
    assert seen["first_cycle"] == ["reset", "added", "added", "synced"]
    assert seen["names"] == ["app-config", "feature-flags"]
    assert seen["seqs"] == [1, 2, 3, 4]
    assert seen["watches_open"] == 1
    assert seen["asked"] == [["admin", "watch"], ["editor", "watch"]], "asked once per stream"
    assert seen["after_shutdown"] == [["error", "INTERNAL", True, 5]]
    assert seen["signals"] == [
        "stream_opened",
        "stream_closed",
        "watch_started",
        "stream_opened",
        "watch_stopped",
        "stream_closed",
    ]
    assert seen["client_failure"] == (
        'data: {"seq":1,"type":"error","code":"INTERNAL","message":"no client for the target could be obtained",'
        '"terminal":true}\n\n'
    )
    assert "no token stored" not in seen["client_failure"]
    assert seen["greenlets_left"] == 0
