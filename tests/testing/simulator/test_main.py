"""``python -m flask_krm.testing.simulator``: serves, writes a kubeconfig the official client loads,
stops on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import kubernetes.config

from tests.contract.kube import request


def test_cli_serves_the_demo_with_a_loadable_kubeconfig(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flask_krm.testing.simulator",
            "--kubeconfig",
            str(kubeconfig),
            "--demo",
            "--demo-tick",
            "0.05",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        announced = process.stdout.readline()
        assert announced.startswith("krm-simulator: serving https://127.0.0.1:"), announced
        assert announced.rstrip().endswith(f"kubeconfig {kubeconfig}")
        contexts, current = kubernetes.config.list_kube_config_contexts(str(kubeconfig))
        assert {context["name"] for context in contexts} == {"admin", "editor", "viewer", "krm-gateway"}
        assert current["name"] == "admin"
        with kubernetes.config.new_client_from_config(str(kubeconfig), context="viewer") as viewer:
            reply = request(viewer, "GET", "/api/v1/namespaces/demo/configmaps")
        assert reply.status == 200
        assert "app-config" in {item["metadata"]["name"] for item in reply.body["items"]}
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
