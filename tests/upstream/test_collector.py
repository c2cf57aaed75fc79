"""The hub's collector policy, in a fresh interpreter each (the collector is process-wide)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import gc, json
from flask_krm.upstream.collector import Collector, THRESHOLDS
{setup}
collector = Collector({enabled})
before = gc.get_freeze_count()
kept = [dict(n=n) for n in range(1000)]
collector.settle()
print(json.dumps({{"thresholds": gc.get_threshold(), "frozen": gc.get_freeze_count() - before}}))
"""


def probe(setup: str = "", enabled: bool = True) -> dict[str, object]:
    code = PROBE.format(setup=setup, enabled=enabled)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return dict(json.loads(done.stdout))


def test_snapshots_freeze_what_exists_and_default_thresholds_are_raised() -> None:
    seen = probe()
    assert seen["thresholds"] == [10_000, 10, 10]
    assert isinstance(seen["frozen"], int) and seen["frozen"] >= 1000


def test_a_host_s_own_thresholds_and_an_opt_out_are_respected() -> None:
    assert probe(setup="gc.set_threshold(5000, 5, 5)")["thresholds"] == [5000, 5, 5]
    assert probe(enabled=False) == {"thresholds": [700, 10, 10], "frozen": 0}
