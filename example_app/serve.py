from gevent import monkey

monkey.patch_all()  # noqa: E702, I001 - first: before ssl, urllib3 and kubernetes load

# Serve the example application under gevent's WSGI server (``make run``, ``python -m example_app``).
#
# Without a cluster it starts the embedded Kubernetes simulator with demo namespaces and objects
# and its demo controller (rollouts, replica changes, now and then a competing edit). With
# ``--kubeconfig`` / ``--context`` (or ``KUBECONFIG`` set) it uses that cluster instead. It prints
# which cluster it uses, the URL and the demo sign-ins, and stops cleanly on SIGINT or SIGTERM.

import argparse  # noqa: E402
import contextlib  # noqa: E402
import errno  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import typing as t  # noqa: E402
from collections.abc import Iterator, Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import gevent  # noqa: E402
import gevent.event  # noqa: E402
from gevent.pywsgi import WSGIServer  # noqa: E402

from flask_krm.cli import StatusServer  # noqa: E402
from flask_krm.serving import stop_server  # noqa: E402

from . import create_app  # noqa: E402
from .accounts import DEMO_PASSWORDS  # noqa: E402

SIMULATOR_CONTEXT: t.Final = "admin"
"""The simulator's kubeconfig context the application acts from (it may impersonate the demo users)."""


@dataclass(frozen=True, slots=True)
class Cluster:
    """The cluster the application talks to, and how to tell a person about it."""

    kubeconfig: str
    context: str | None
    namespaces: tuple[str, ...]
    impersonate: bool
    description: str
    hints: tuple[str, ...] = ()


class UsageError(Exception):
    """A command-line mistake, reported without a traceback."""


def parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m example_app",
        description=(
            "Serve the flask-krm example application (embedded Kubernetes simulator unless a cluster is given)."
        ),
    )
    parser.add_argument("--port", type=int, default=5000, help="port to listen on (default 5000; 0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--kubeconfig", help="use the cluster of this kubeconfig instead of the simulator")
    parser.add_argument("--context", help="kubeconfig context to use (default: its current context)")
    parser.add_argument(
        "--namespace",
        action="append",
        dest="namespaces",
        metavar="NAME",
        help="namespace to show (repeatable; default: the context's namespace, or 'default')",
    )
    parser.add_argument(
        "--impersonate",
        action="store_true",
        help="with a real cluster: act as the signed-in user through impersonation",
    )
    parser.add_argument(
        "--demo-tick", type=float, default=1.0, help="seconds between the simulator's demo controller steps (default 1)"
    )
    return parser.parse_args(argv)


@contextlib.contextmanager
def simulated_cluster(tick: float) -> Iterator[Cluster]:
    """The embedded simulator with its demo objects, controller and competing edits."""
    from flask_krm.testing import KubeSimulator
    from flask_krm.testing.simulator import DEMO_NAMESPACES

    with KubeSimulator(demo=True, demo_tick=tick, competing_edits=True) as kube:
        yield Cluster(
            kubeconfig=kube.kubeconfig_path,
            context=SIMULATOR_CONTEXT,
            namespaces=tuple(DEMO_NAMESPACES),
            impersonate=True,
            description=f"the embedded Kubernetes simulator at {kube.url} (demo objects, demo controller)",
            hints=(
                "Change it from a terminal while you watch:",
                f"  kubectl --kubeconfig {kube.kubeconfig_path} --context admin"
                f" -n {DEMO_NAMESPACES[0]} get deployments",
            ),
        )


def real_cluster(arguments: argparse.Namespace) -> Cluster:
    """The cluster named by ``--kubeconfig`` / ``--context`` or ``KUBECONFIG``."""
    from kubernetes import config as kube_config

    kubeconfig = arguments.kubeconfig or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    try:
        contexts, active = kube_config.list_kube_config_contexts(config_file=kubeconfig)
    except (OSError, kube_config.ConfigException) as exc:
        raise UsageError(f"cannot read the kubeconfig {kubeconfig}: {exc}") from None
    chosen = (
        active if arguments.context is None else next((c for c in contexts if c["name"] == arguments.context), None)
    )
    if chosen is None:
        names = ", ".join(c["name"] for c in contexts) or "none"
        raise UsageError(f"the kubeconfig {kubeconfig} has no context {arguments.context!r} (it has: {names})")
    namespaces = tuple(arguments.namespaces or [chosen.get("context", {}).get("namespace") or "default"])
    identity = "impersonating the signed-in user" if arguments.impersonate else "with the context's own credentials"
    return Cluster(
        kubeconfig=kubeconfig,
        context=chosen["name"],
        namespaces=namespaces,
        impersonate=arguments.impersonate,
        description=f"context {chosen['name']} of {kubeconfig}, {identity}",
    )


def wants_real_cluster(arguments: argparse.Namespace) -> bool:
    return bool(arguments.kubeconfig or arguments.context or os.environ.get("KUBECONFIG"))


def banner(cluster: Cluster, url: str) -> str:
    lines = [
        "flask-krm example application",
        f"  Cluster:   {cluster.description}",
        f"  Showing:   namespaces {', '.join(cluster.namespaces)}",
        f"  Open:      {url}",
        "  Sign in:   "
        + "\n             ".join(
            f"{name} / {password}  ({'may change objects' if role == 'editor' else 'may only read'})"
            for name, (role, password) in DEMO_PASSWORDS.items()
        ),
    ]
    lines += [f"  {hint}" for hint in cluster.hints]
    lines.append("Press Ctrl+C to stop.")
    return "\n".join(lines)


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``:``port``, bound before anything else starts so a busy port is said at once."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=128)
    except OSError as exc:
        raise UsageError(cannot_listen(host, port, exc)) from None


def cannot_listen(host: str, port: int, exc: OSError) -> str:
    """What to do when ``host``:``port`` cannot be listened on, in one line."""
    another = 'choose another port: make run ARGS="--port 0" (a free one) or ARGS="--port 5001"'
    if exc.errno == errno.EADDRINUSE:
        owner = " (on macOS, the AirPlay Receiver uses port 5000)" if port == 5000 else ""
        return f"port {port} on {host} is already in use{owner}; stop what uses it, or {another}"
    if exc.errno == errno.EACCES:
        return f"not allowed to listen on port {port} (ports below 1024 need privileges); {another}"
    if exc.errno in (errno.EADDRNOTAVAIL, socket.EAI_NONAME):
        return f"cannot listen on {host}: not an address of this machine (--host, default 127.0.0.1)"
    return f"cannot listen on {host} port {port}: {exc.strerror or exc}"


def serve(cluster: Cluster, listener: socket.socket) -> None:
    """Run the application on ``listener`` against ``cluster`` until SIGINT or SIGTERM."""
    target: dict[str, t.Any] = {"kubeconfig": cluster.kubeconfig}
    if cluster.context:
        target["context"] = cluster.context
    app = create_app(
        {
            "KRM_TARGETS": {"cluster": target},
            "EXAMPLE_TARGET": "cluster",
            "EXAMPLE_NAMESPACES": cluster.namespaces,
            "EXAMPLE_IMPERSONATE": cluster.impersonate,
            "EXAMPLE_CLUSTER_DESCRIPTION": cluster.description,
        }
    )
    status = StatusServer(app).start()  # for `flask --app example_app krm streams`
    server = WSGIServer(listener, app, log=None)
    server.start()
    stopping = gevent.event.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        gevent.signal_handler(signum, stopping.set)
    host = str(listener.getsockname()[0])
    shown_host = {"0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(host, f"[{host}]" if ":" in host else host)
    print(banner(cluster, f"http://{shown_host}:{server.server_port}/"), flush=True)
    try:
        stopping.wait()
    finally:
        print("Stopping: ending live streams.", flush=True)
        stop_server(app, server, timeout=2.0)  # readiness fails, streams get their ending, then it stops
        status.stop()


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        cluster = real_cluster(arguments) if wants_real_cluster(arguments) else None
        with listen(arguments.host, arguments.port) as listener:
            if cluster is not None:
                serve(cluster, listener)
            else:
                with simulated_cluster(arguments.demo_tick) as simulated:
                    serve(simulated, listener)
    except UsageError as exc:
        print(f"example_app: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
