"""The benchmarks keep running: each prints JSON result lines carrying a same-run baseline.

Nothing here judges speed; ``python -m bench`` reports it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", ["merge", "stream"])
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
