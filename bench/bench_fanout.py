"""Shared fan-out: one upstream watch on the simulator served to N SSE subscribers over loopback.

Every measured part runs in a child process of its own, monkey-patched by gevent before anything
else is imported (this module stays unpatched, so other benchmarks run in the same process are not
affected):

- ``upstream``: the Kubernetes API simulator and a writer that PATCHes one ConfigMap at a fixed
  rate through the HTTP API, each write stamping ``data.t`` with the wall clock;
- ``server``: the hub (one upstream watch) and a bare ``gevent.pywsgi`` app serving each
  subscriber's SSE iterator (the Flask endpoint is not involved);
- ``clients``: N raw loopback sockets reading the streams, counting ``modified`` frames and timing
  each from its ``data.t`` to its arrival.

Results per N (10, 100, 1,000): delivered events per second, p50/p99 delivery latency, server CPU
seconds per 1,000 deliveries and server resident memory per subscriber. The baseline, measured in
the same run, is a bare loop in a server process of the same kind writing the same frame bytes
(one pre-encoded body per tick, coalesced per subscriber through a bounded queue) at the same rate
to the same number of clients; ratios are hub / baseline.

``snapshot``: a new subscriber's snapshot of a synced 10,000-object scope, served from the hub's
cache (engine, shared encoded bodies and SSE framing), against ``json.dumps`` of those objects:
``snapshot_ms`` for a projection other subscribers already use (best of five), and
``snapshot_new_projection_ms`` for the first subscriber of another projection, whose snapshot
projects and encodes every object; ``*_gc_ms`` is the part of each spent in Python's cyclic garbage
collector, which scans the whole heap of the process (the simulator's objects included).

The hub's side runs the upstream simulator in a third process, on the same cores, and its latency
counts from the writer's PATCH, through the simulator and the upstream watch, to the reader; the
baseline stamps its frames in the server itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

_PATCHED_MAIN = "from gevent import monkey; monkey.patch_all()\nimport bench.bench_fanout as b\nb.{}()\n"
_ROOT = Path(__file__).resolve().parent.parent
_NAMESPACE = "bench"
DELIVERY_BUDGET = 100_000
"""Deliveries per case at most: the churn is shortened for many subscribers."""
DRAIN_SECONDS = 30.0
"""How long the clients may take to receive what was written, after the churn ends."""


# ------------------------------------------------------------------------- orchestration --


class _Child:
    """A patched child process speaking one JSON object per line on stdin and stdout."""

    def __init__(self, entry: str, **arguments: Any) -> None:
        env = {**os.environ, "FLASK_KRM_BENCH_ARGS": json.dumps(arguments), "PYTHONPATH": str(_ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", _PATCHED_MAIN.format(entry)],
            cwd=_ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, **command: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self.read()

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"a benchmark child ended early (exit code {self.process.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextmanager
def _children(*children: _Child) -> Iterator[None]:
    try:
        yield
    finally:
        for child in reversed(children):
            child.stop()


def run(quick: bool) -> Iterable[dict[str, Any]]:
    sizes = (10, 100) if quick else (10, 100, 1_000)
    rate, longest = 100, (2.0 if quick else 5.0)
    for subscribers in sizes:
        seconds = min(longest, DELIVERY_BUDGET / (rate * subscribers))
        yield _fanout(subscribers, rate, seconds)
    yield _snapshot(2_000 if quick else 10_000)


def _fanout(subscribers: int, rate: int, seconds: float) -> dict[str, Any]:
    upstream = _Child("upstream_main")
    with _children(upstream):
        kubeconfig = upstream.read()["kubeconfig"]
        hub = _serve_and_read("hub", subscribers, rate, seconds, kubeconfig=kubeconfig, writer=upstream)
    baseline = _serve_and_read("baseline", subscribers, rate, seconds)
    result: dict[str, Any] = {
        "case": f"fanout-{subscribers}",
        "subscribers": subscribers,
        "rate": rate,
        "seconds": round(seconds, 2),
    }
    for key in ("deliveries_per_s", "p50_ms", "p99_ms", "cpu_s_per_1000", "rss_kb_per_subscriber"):
        result[key] = hub[key]
        result[f"baseline_{key}"] = baseline[key]
        both = hub[key] is not None and baseline[key]
        result[f"ratio_{key}"] = round(hub[key] / baseline[key], 2) if both else None
    result["delivered"] = hub["delivered"]
    result["expected"] = hub["expected"]
    result["resyncs"] = hub["resyncs"]
    return result


def _serve_and_read(
    mode: str, subscribers: int, rate: int, seconds: float, kubeconfig: str = "", writer: _Child | None = None
) -> dict[str, Any]:
    server = _Child("server_main", mode=mode, kubeconfig=kubeconfig)
    clients = _Child("clients_main")
    with _children(server, clients):
        port = server.read()["port"]
        idle = server.ask(command="stats")
        clients.ask(command="connect", port=port, count=subscribers, wait_for_snapshot=mode == "hub")
        connected = server.ask(command="stats")
        started = time.time()
        if writer is not None:
            written = writer.ask(command="churn", rate=rate, seconds=seconds)["writes"]
        else:
            written = server.ask(command="produce", rate=rate, seconds=seconds)["writes"]
        expected = written * subscribers
        received = clients.ask(command="report", since=started)
        deadline = time.monotonic() + DRAIN_SECONDS
        while received["delivered"] < expected and time.monotonic() < deadline:
            time.sleep(0.5)
            before, received = received["delivered"], clients.ask(command="report", since=started)
            if received["delivered"] == before:
                break  # nothing more is coming (resynchronized subscribers skip what they missed)
        busy = server.ask(command="stats")
    delivered = received["delivered"]
    elapsed = max(received["last"] - started, seconds)
    cpu = busy["cpu"] - connected["cpu"]
    return {
        "deliveries_per_s": round(delivered / elapsed),
        "p50_ms": received["p50_ms"],
        "p99_ms": received["p99_ms"],
        "cpu_s_per_1000": round(cpu / delivered * 1000, 4) if delivered else None,
        "rss_kb_per_subscriber": round((connected["rss_kb"] - idle["rss_kb"]) / subscribers, 1),
        "delivered": delivered,
        "expected": expected,
        "resyncs": received["resyncs"],
    }


def _snapshot(objects: int) -> dict[str, Any]:
    child = _Child("snapshot_main", objects=objects)
    with _children(child):
        return {"case": f"snapshot-{objects}", **child.read()}


# --------------------------------------------------------------------- child processes --


def _arguments() -> dict[str, Any]:
    return dict(json.loads(os.environ.get("FLASK_KRM_BENCH_ARGS", "{}")))


def _say(value: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


def _commands() -> Iterator[dict[str, Any]]:
    """Commands from the parent, read without blocking the other greenlets."""
    from gevent.fileobject import FileObjectPosix

    stdin: IO[bytes] = FileObjectPosix(sys.stdin.fileno(), "rb", close=False)
    for line in stdin:
        yield json.loads(line)


def _usage() -> dict[str, float]:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    rss_kb = 0.0
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss_kb = float(line.split()[1])
    return {"cpu": usage.ru_utime + usage.ru_stime, "rss_kb": rss_kb}


def _raise_file_limit() -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _configmap(stamp: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "churn"}, "data": {"t": stamp, "pad": "x" * 400}}


def upstream_main() -> None:
    """The simulator and a writer that PATCHes the ``churn`` ConfigMap at a fixed rate."""
    import gevent

    from flask_krm.testing.simulator import KubeSimulator

    with KubeSimulator() as kube:
        api = kube.api_client("admin")

        def request(method: str, path: str, body: Any, content_type: str = "application/json") -> None:
            m, url, h, b, _ = api.param_serialize(
                method, path, header_params={"Content-Type": content_type}, body=body, auth_settings=["BearerToken"]
            )
            response = api.call_api(m, url, header_params=h, body=b, _request_timeout=(5, 30))
            response.read()  # type: ignore[no-untyped-call]
            assert 200 <= response.status <= 299, response.data

        request("POST", "/api/v1/namespaces", {"metadata": {"name": _NAMESPACE}})
        request("POST", f"/api/v1/namespaces/{_NAMESPACE}/configmaps", _configmap(repr(time.time())))
        _say({"kubeconfig": kube.kubeconfig_path})
        for command in _commands():
            writes = 0
            interval = 1.0 / command["rate"]
            deadline = time.monotonic() + command["seconds"]
            due = time.monotonic()
            while due < deadline:
                request(
                    "PATCH",
                    f"/api/v1/namespaces/{_NAMESPACE}/configmaps/churn",
                    {"data": {"t": repr(time.time())}},
                    "application/merge-patch+json",
                )
                writes += 1
                due += interval
                gevent.sleep(max(0.0, due - time.monotonic()))
            _say({"writes": writes})


def server_main() -> None:
    """The SSE server: the hub's subscribers (``hub``) or a bare loop of the same bytes (``baseline``)."""
    import gevent
    import gevent.queue
    from gevent.pywsgi import WSGIServer

    from flask_krm.events import Upsert, encode_body, frame
    from flask_krm.principal import Principal
    from flask_krm.projection import project
    from flask_krm.scope import Scope
    from flask_krm.sse import HEADERS
    from flask_krm.upstream.authz import allow_all
    from flask_krm.upstream.clients import ApiClients, Kubeconfig
    from flask_krm.upstream.hub import Hub

    _raise_file_limit()
    arguments = _arguments()
    scope = Scope(target="sim", version="v1", resource="configmaps", namespace=_NAMESPACE)
    queues: list[gevent.queue.Queue[bytes]] = []
    hub: Hub | None = None
    if arguments["mode"] == "hub":
        clients = ApiClients({"sim": Kubeconfig(arguments["kubeconfig"], context="admin")})
        hub = Hub(clients, allow_all, heartbeat=20.0, linger=0)

    def hub_app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        assert hub is not None
        subscriber = hub.subscribe(scope, "krm-full/v1", Principal("bench"))
        start_response("200 OK", list(HEADERS))
        return iter(subscriber)

    def baseline_app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        queue: gevent.queue.Queue[bytes] = gevent.queue.Queue(256)
        queues.append(queue)
        start_response("200 OK", list(HEADERS))

        def frames() -> Iterator[bytes]:
            seq = 0
            try:
                while True:
                    bodies = [queue.get()]
                    while not queue.empty():
                        bodies.append(queue.get_nowait())
                    chunk = []
                    for body in bodies:
                        seq += 1
                        chunk.append(frame(seq, body))
                    yield b"".join(chunk)
            finally:
                queues.remove(queue)

        return frames()

    server = WSGIServer(("127.0.0.1", 0), hub_app if hub is not None else baseline_app, log=None, backlog=4096)
    server.start()
    _say({"port": server.server_port})
    for command in _commands():
        if command["command"] == "stats":
            _say(_usage())
        elif command["command"] == "produce":
            writes = 0
            interval = 1.0 / command["rate"]
            deadline = time.monotonic() + command["seconds"]
            due = time.monotonic()
            while due < deadline:
                raw = _configmap(repr(time.time()))
                raw["metadata"].update(namespace=_NAMESPACE, uid="churn-uid", resourceVersion=str(writes + 2))
                body = encode_body(Upsert("modified", project(raw, "krm-full/v1").object))
                for queue in list(queues):
                    if not queue.full():
                        queue.put_nowait(body)
                writes += 1
                due += interval
                gevent.sleep(max(0.0, due - time.monotonic()))
            _say({"writes": writes})


def clients_main() -> None:
    """N loopback SSE readers; each ``modified`` frame is timed from its ``data.t`` stamp."""
    import gevent
    import gevent.event
    from gevent import socket

    _raise_file_limit()
    latencies: list[float] = []
    arrivals: list[float] = []
    resyncs = 0
    synced: list[gevent.event.Event] = []

    def read(port: int, ready: gevent.event.Event) -> None:
        nonlocal resyncs
        connection = socket.create_connection(("127.0.0.1", port))
        connection.sendall(b"GET /stream HTTP/1.0\r\nHost: bench\r\n\r\n")
        pending = b""
        while True:
            data = connection.recv(262144)
            if not data:
                return
            now = time.time()
            pending += data
            cut = pending.rfind(b"\n\n")
            if cut < 0:
                continue
            complete, pending = pending[: cut + 2], pending[cut + 2 :]
            if b'"type":"synced"' in complete:
                ready.set()
            resyncs += complete.count(b'"code":"RESYNC_REQUIRED"')
            start = 0
            while True:
                found = complete.find(b'"type":"modified"', start)
                if found < 0:
                    break
                stamp_at = complete.index(b'"t":"', found) + 5
                stamp = float(complete[stamp_at : complete.index(b'"', stamp_at)])
                latencies.append(now - stamp)
                arrivals.append(now)
                start = found + 1

    readers = []
    for command in _commands():
        if command["command"] == "connect":
            for _ in range(command["count"]):
                ready = gevent.event.Event()
                synced.append(ready)
                readers.append(gevent.spawn(read, command["port"], ready))
            if command["wait_for_snapshot"]:
                for ready in synced:
                    ready.wait(timeout=60)
            else:
                gevent.sleep(1.0)
            _say({"connected": len(readers)})
        elif command["command"] == "report":
            since = command["since"]
            measured = sorted(latency for latency, arrived in zip(latencies, arrivals) if arrived >= since)
            count = len(measured)
            _say(
                {
                    "delivered": count,
                    "p50_ms": round(measured[count // 2] * 1000, 1) if count else None,
                    "p99_ms": round(measured[min(count - 1, int(count * 0.99))] * 1000, 1) if count else None,
                    "last": max(arrivals) if arrivals else since,
                    "resyncs": resyncs,
                }
            )


def snapshot_main() -> None:
    """A new subscriber's snapshot of a synced scope from the cache, against ``json.dumps``."""
    import gc

    import gevent.pool

    from flask_krm.principal import Principal
    from flask_krm.scope import Scope
    from flask_krm.testing.simulator import KubeSimulator
    from flask_krm.upstream.authz import allow_all
    from flask_krm.upstream.clients import ApiClients, Kubeconfig
    from flask_krm.upstream.hub import Hub

    count = _arguments()["objects"]
    with KubeSimulator() as kube:
        api = kube.api_client("admin")

        def call(method: str, path: str, body: Any = None) -> Any:
            m, url, h, b, _ = api.param_serialize(
                method, path, header_params={"Content-Type": "application/json"}, body=body, auth_settings=["BearerToken"]
            )
            response = api.call_api(m, url, header_params=h, body=b, _request_timeout=(5, 60))
            return json.loads(response.read())  # type: ignore[no-untyped-call]

        def post(path: str, body: Any) -> None:
            call("POST", path, body)

        post("/api/v1/namespaces", {"metadata": {"name": _NAMESPACE}})
        pool = gevent.pool.Pool(16)
        for n in range(count):
            body = {
                "metadata": {"name": f"cm-{n:05d}", "labels": {"app": "bench", "shard": str(n % 7)}},
                "data": {"index": str(n), "text": "x" * 200},
            }
            pool.spawn(post, f"/api/v1/namespaces/{_NAMESPACE}/configmaps", body)
        pool.join()

        clients = ApiClients({"sim": Kubeconfig(kube.kubeconfig_path, context="admin")})
        hub = Hub(clients, allow_all, linger=0)
        scope = Scope(target="sim", version="v1", resource="configmaps", namespace=_NAMESPACE)
        first = iter(hub.subscribe(scope, "krm-full/v1", Principal("first")))
        next(first)  # the upstream watch is synced and the encoded bodies are cached
        objects = call("GET", f"/api/v1/namespaces/{_NAMESPACE}/configmaps")["items"]

        collecting = [0.0, 0.0]  # seconds spent collecting, when the current collection started

        def collected(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                collecting[1] = time.perf_counter()
            else:
                collecting[0] += time.perf_counter() - collecting[1]

        gc.callbacks.append(collected)

        def snapshot_seconds(projection: str = "krm-full/v1") -> tuple[float, float]:
            chunks = iter(hub.subscribe(scope, projection, Principal("joiner")))
            collected_before = collecting[0]
            started = time.perf_counter()
            chunk = next(chunks)
            elapsed = time.perf_counter() - started
            assert chunk.count(b"\n\n") == len(objects) + 2
            chunks.close()  # type: ignore[attr-defined]
            return elapsed, collecting[0] - collected_before

        def dumps_seconds() -> float:
            started = time.perf_counter()
            json.dumps(objects)
            return time.perf_counter() - started

        cold, cold_gc = snapshot_seconds("krm-spec/v1")  # the first of its projection: all encoded
        hub_best, hub_gc = min(snapshot_seconds() for _ in range(5))
        baseline_best = min(dumps_seconds() for _ in range(5))
        gc.callbacks.remove(collected)
        _say(
            {
                "objects": len(objects),
                "snapshot_ms": round(hub_best * 1000, 1),
                "snapshot_gc_ms": round(hub_gc * 1000, 1),
                "snapshot_new_projection_ms": round(cold * 1000, 1),
                "snapshot_new_projection_gc_ms": round(cold_gc * 1000, 1),
                "baseline_json_dumps_ms": round(baseline_best * 1000, 1),
                "ratio": round(hub_best / baseline_best, 2),
                "ratio_new_projection": round(cold / baseline_best, 2),
            }
        )
        hub.shutdown(timeout=1)
        clients.close()
