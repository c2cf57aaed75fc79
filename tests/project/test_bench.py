"""The benchmarks keep running: each prints JSON result lines carrying a same-run baseline.

Nothing here judges speed; ``python -m bench`` reports it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.bench_fanout import REPORTED

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["merge", "stream", "yaml"])
def test_a_quick_run_prints_results_with_baselines(name: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", name], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines and all(line["bench"] == name for line in lines)
    assert all("baseline" in line and line["ratio"] > 0 for line in lines)


def test_an_unknown_benchmark_is_a_usage_error() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "no-such"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "unknown benchmark" in result.stderr


def test_a_quick_fanout_run_reports_the_endpoint_next_to_the_bare_loop() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "fanout"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "FLASK_KRM_BENCH_STEP_SECONDS": "0.5"},
    )
    assert result.returncode == 0, result.stderr
    fanout, snapshot = [json.loads(line) for line in result.stdout.splitlines()]
    assert fanout["case"] == "fanout-20" and fanout["step_seconds"] == 0.5
    for key in REPORTED:
        assert key in fanout and f"baseline_{key}" in fanout and f"ratio_{key}" in fanout, key
    assert "p99_ms_at_5k" in REPORTED and "closed_release_s" in REPORTED
    for steps in (fanout["steps"], fanout["baseline_steps"]):
        assert steps and all(step["delivered"] > 0 and step["expected"] > 0 for step in steps)
    assert fanout["closed_release_s"] is not None, "the endpoint releases closed clients while idle"
    assert len(fanout["load_average"]) == 6
    assert snapshot["case"] == "snapshot-500" and snapshot["ratio"] > 0 and "baseline_json_dumps_ms" in snapshot


def test_a_quick_workers_run_reports_latency_across_workers_next_to_one_worker_in_memory() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "workers"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    (line,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert line["bench"] == "workers" and line["workers"] == 3 and line["case"] == "edit-to-other-worker-60-channels"
    assert line["delivered"] == 1.0 and line["baseline_delivered"] == 1.0, line
    assert line["round_trips_per_edit"] > 0 and line["baseline_round_trips_per_edit"] == 0.0
    assert line["p50_ms"] > 0 and line["baseline_p50_ms"] > 0 and line["ratio"] > 0


def test_a_quick_page_run_reports_bytes_and_cpu_per_change_next_to_the_spec_v1_event_a_poll_and_the_body() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "page"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    cases = {line["case"]: line for line in lines}
    small, large, editor = cases["page-100"], cases["page-1000"], cases["editor-50"]
    streams = [line for line in lines if line["case"].startswith("stream-")]
    assert streams and all(s["bytes_per_change"] > 0 and s["cpu_ms_per_change"] > 0 for s in streams)
    # an editor's one-field change: a small part of its whole body
    assert 0 < editor["bytes_per_change"] * 10 < editor["whole_body_bytes"] == editor["baseline"]
    assert editor["ratio"] > 0 and editor["cpu_ms_per_change"] > 0
    # and at most twice the spec-v1 event of the same change plus 600 B: the YAML text goes as its changed lines
    budget = editor["spec_v1_budget_bytes"]
    assert editor["max_bytes_per_change"] <= budget == 2 * editor["baseline_spec_v1_bytes"] + 600
    live = cases["editor-live-20"]
    assert live["delivered"] == 1.0 and live["changes"] == 5, "every editor got every change"
    for case in (small, large):
        assert case["baseline_spec_v1_bytes"] > 0 and case["ratio"] > 0 and case["cpu_ms_per_change"] > 0
        assert case["poll_bytes"] > case["poll_gzip_bytes"] > 0 and case["poll_cpu_ms"] > 0
        # a one-row change: at most twice the spec-v1 event plus the SSE framing, whatever the list's length
        assert case["max_bytes_per_change"] <= 2 * case["baseline_spec_v1_bytes"] + case["framing_bytes"]
    assert small["bytes_per_change"] == large["bytes_per_change"]
