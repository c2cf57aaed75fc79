"""The hub's collector policy, in a fresh interpreter each (the collector is process-wide)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import gc, json
from flask_krm.upstream.collector import Collector
{setup}
at_start = gc.get_freeze_count()
collector = Collector({enabled})
started = gc.get_freeze_count() - at_start
before = gc.get_freeze_count()
kept = [[n] for n in range(1000)]  # lists are always tracked
collector.settle({added})
print(json.dumps({{"thresholds": gc.get_threshold(), "started": started, "frozen": gc.get_freeze_count() - before}}))
"""


def probe(setup: str = "", enabled: bool = True, added: str = "") -> dict[str, object]:
    code = PROBE.format(setup=setup, enabled=enabled, added=added)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return dict(json.loads(done.stdout))


def test_the_start_and_large_snapshots_freeze_what_exists_and_default_thresholds_are_raised() -> None:
    seen = probe()
    assert seen["thresholds"] == [10_000, 10, 10]
    assert isinstance(seen["started"], int) and seen["started"] > 1000, "the imported modules"
    assert isinstance(seen["frozen"], int) and seen["frozen"] >= 1000
    assert probe(added="20_000")["frozen"] == seen["frozen"]


def test_a_small_snapshot_freezes_nothing() -> None:
    assert probe(added="50")["frozen"] == 0


def test_a_host_s_own_thresholds_and_an_opt_out_are_respected() -> None:
    assert probe(setup="gc.set_threshold(5000, 5, 5)")["thresholds"] == [5000, 5, 5]
    assert probe(enabled=False) == {"thresholds": [700, 10, 10], "started": 0, "frozen": 0}
