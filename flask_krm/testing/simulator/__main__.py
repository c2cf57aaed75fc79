"""Command line: ``python -m flask_krm.testing.simulator --port 8001 --kubeconfig PATH [--demo]``.

Serves until interrupted (SIGINT or SIGTERM). Prints one line ``krm-simulator: serving <url>
kubeconfig <path>`` once the port is bound and the kubeconfig is written.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from .server import KubeSimulator


def parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    """The command line options."""
    parser = argparse.ArgumentParser(prog="python -m flask_krm.testing.simulator", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--kubeconfig", help="where to write the kubeconfig (default: a temporary file)")
    parser.add_argument("--demo", action="store_true", help="seed demo objects and run the demo controller")
    parser.add_argument("--demo-tick", type=float, default=1.0, help="seconds between demo controller steps")
    parser.add_argument(
        "--competing-edits", action="store_true", help="let the demo controller edit a ConfigMap now and then"
    )
    parser.add_argument("--bookmark-interval", type=float, default=60.0, help="seconds between watch bookmarks")
    parser.add_argument(
        "--history-window", type=int, default=None, help="keep only this many changes for watches and old lists"
    )
    parser.add_argument(
        "--compaction-interval",
        type=float,
        default=300.0,
        help="seconds between history compactions (as kube-apiserver's)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGINT or SIGTERM; returns the exit status."""
    arguments = parse_arguments(sys.argv[1:] if argv is None else argv)
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    simulator = KubeSimulator(
        port=arguments.port,
        kubeconfig_path=arguments.kubeconfig,
        demo=arguments.demo,
        demo_tick=arguments.demo_tick,
        competing_edits=arguments.competing_edits,
        bookmark_interval=arguments.bookmark_interval,
        history_window=arguments.history_window,
        compaction_interval=arguments.compaction_interval,
    )
    with simulator:
        print(f"krm-simulator: serving {simulator.url} kubeconfig {simulator.kubeconfig_path}", flush=True)
        while not stop.wait(3600):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
