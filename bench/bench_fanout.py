"""Shared fan-out as hosts serve it: the real JSON stream endpoint to N subscribers, against a bare
write loop measured in the same run.

Every measured part runs in a child process of its own, monkey-patched by gevent before anything
else is imported (this module stays unpatched, so other benchmarks run in the same process are not
affected):

- ``upstream``: the Kubernetes API simulator holding a 100-object scope (ConfigMaps) twice, in one
  namespace per server, and a writer that PATCHes one namespace's objects in turn through the HTTP
  API, each write stamping ``data.a`` with the clock;
- ``server``: a Flask application with :class:`flask_krm.KrmStream` (a Kubernetes target on the
  simulator, the shared hub, ``KRM_HEARTBEAT_INTERVAL`` = :data:`HEARTBEAT`), served by
  ``gevent.pywsgi`` on ``/krm/resource-stream/v1``; or, for the baseline, a bare ``pywsgi`` app fed
  by the same upstream: one greenlet reads a raw watch of the scope, encodes each event once
  (the projection the endpoint serves) and appends it to a log, and every connection follows the
  log with a cursor and writes what it finds as one chunk of frames (``seq`` per connection);
- ``clients``: N sockets speaking HTTP/1.1, counting ``modified`` frames and timing each from its
  ``data.a`` stamp to its arrival.

So both servers get the same producer (the upstream writer, through the simulator's watch, with
O(1) work per event in the server before the fan-out), the same clients and the same ladder of
write rates (:data:`LADDER`, writes per second; each write is one delivery per subscriber),
:data:`STEP_SECONDS` per step (``FLASK_KRM_BENCH_STEP_SECONDS`` overrides it). What differs is what
a subscriber costs between the watch and its socket. Both servers are up, their clients connected,
for the whole run, and they take the ladder's steps in turn (who goes first alternates from step
to step and from run to run): on a shared machine whose load changes, both see nearly the same
load, and the idle one costs nothing, since its namespace is not written. A step *holds* when its
writer kept the rate
(:data:`HELD_WRITES`), every event written was delivered to every subscriber and p99 latency stayed
under :data:`HELD_P99_MS`; the ladder stops at the first step that does not hold.
``FLASK_KRM_BENCH_SERVER_DRIVER=0`` serves with the pywsgi server driver off (``KRM_SERVER_DRIVER``:
pywsgi writes every chunk, the garbage collector is left alone), to measure what the driver saves.
``FLASK_KRM_BENCH_METRICS=1`` serves with Prometheus metrics on (``KRM_METRICS_PATH``), so every
delivery is counted. ``FLASK_KRM_BENCH_RUNS=3`` measures three times (alternating which server goes first) and adds a
``fanout-N-summary`` line with ``[min, median, max]`` of every number below.

Reported for each, next to the baseline and as a ratio to it:

- ``sustained_deliveries_per_s``: the deliveries per second of the highest step that held;
- ``p50_ms_at_5k``, ``p99_ms_at_5k``: latency at the step nearest 5,000 deliveries per second;
- ``cpu_ms_per_1000``: server CPU per 1,000 deliveries at that step;
- ``rss_kb_per_idle_subscriber``: server memory added per connected, idle subscriber (after the
  first, which opens the upstream watch);
- ``longest_gc_pause_ms``: the longest collection by Python's cyclic collector in the server while
  serving (connects and every step), wall clock; ``longest_gc_cpu_ms`` the same collection's CPU
  time (on a busy machine, wall clock includes time the process waited for a core);
- ``closed_release_s``: after the ladder, with nothing written, some clients close their sockets:
  the longest time until the server released their streams (``None``: not within
  :data:`HEARTBEAT` seconds; the bare loop notices a closed client only at its next write).

Latency counts, for both, from the writer's PATCH through the simulator and the upstream watch to
the client; each step's ``first_p50_ms`` (the median over events of the latency of an event's
earliest arrival at any subscriber) estimates the upstream's share. Every process shares the
machine's cores (``load_average`` says how busy the machine was), so compare ratios, not absolute
numbers.

``snapshot``: a new subscriber's snapshot of a synced 10,000-object scope, served from the hub's
cache (engine, shared encoded bodies and SSE framing), against ``json.dumps`` of those objects:
``snapshot_ms`` for a projection other subscribers already use (best of five), and
``snapshot_new_projection_ms`` for the first subscriber of another projection, whose snapshot
projects and encodes every object; ``*_gc_ms`` is the part of each spent in Python's cyclic garbage
collector. The process's collector policy is on, as the pywsgi server driver turns it on in a
served process (off with ``FLASK_KRM_BENCH_SERVER_DRIVER=0``).
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
from typing import IO, Any, Final

_PATCHED_MAIN = "from gevent import monkey; monkey.patch_all()\nimport bench.bench_fanout as b\nb.{}()\n"
_ROOT = Path(__file__).resolve().parent.parent
_NAMESPACE = "bench"
_NAMESPACES: Final = {"endpoint": "bench", "baseline": "bench-baseline"}
"""The namespace each side streams (the same objects in each)."""
OBJECTS: Final = 100
"""ConfigMaps in the streamed scope."""
LADDER: Final = (5, 10, 20, 40, 60, 80, 90, 100, 110, 120, 130, 140, 150, 160, 175, 200)
"""Writes per second, step by step (times the subscribers: deliveries per second)."""
STEP_SECONDS: Final = 10.0
HELD_P99_MS: Final = 1000.0
HELD_WRITES: Final = 0.9
"""A step holds only if its writer kept up: at least this share of the step's writes were made."""
HEARTBEAT: Final = 5.0
"""The endpoint's heartbeat interval, seconds: a closed client must be released within it."""
CLOSED_CLIENTS: Final = 10
WRITERS: Final = 16
"""PATCH requests the upstream writer may have in flight at once."""
DRAIN_SECONDS: Final = 10.0
"""How long the clients may take to receive what a step wrote, after it ends."""
_URL = "/krm/resource-stream/v1?target=sim&version=v1&resource=configmaps&namespace={}"


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
    seconds = float(os.environ.get("FLASK_KRM_BENCH_STEP_SECONDS") or (1.0 if quick else STEP_SECONDS))
    runs = max(1, int(os.environ.get("FLASK_KRM_BENCH_RUNS") or 1))
    subscribers, objects, ladder = (20, 20, (5, 50)) if quick else (1_000, OBJECTS, LADDER)
    results = []
    for n in range(runs):
        result = fanout(subscribers, objects, ladder, seconds, baseline_first=n % 2 == 1)
        results.append(result)
        yield result
    if runs > 1:
        yield summary(results)
    yield _snapshot(500 if quick else 10_000)


def fanout(
    subscribers: int, objects: int, ladder: tuple[int, ...], seconds: float, *, baseline_first: bool = False
) -> dict[str, Any]:
    """The endpoint and the baseline up the same ladder, step by step in turn (so that both see
    the same load on a shared machine), fed by the same upstream writer."""
    load_before = os.getloadavg()
    upstream = _Child("upstream_main", objects=objects)
    with _children(upstream):
        kubeconfig = upstream.read()["kubeconfig"]
        with _Side("endpoint", kubeconfig, upstream) as endpoint, _Side("baseline", kubeconfig, upstream) as baseline:
            sides = [baseline, endpoint] if baseline_first else [endpoint, baseline]
            for side in sides:
                side.connect(subscribers)
            for rate in ladder:
                climbing = [side for side in sides if side.climbing]
                if not climbing:
                    break
                for side in climbing:
                    side.step(rate, seconds)
                sides.reverse()  # who goes first alternates from step to step
            measured = {side.mode: side.finish() for side in sides}
    endpoint_result, baseline_result = measured["endpoint"], measured["baseline"]
    result: dict[str, Any] = {
        "case": f"fanout-{subscribers}",
        "subscribers": subscribers,
        "objects": objects,
        "step_seconds": seconds,
        "first": "baseline" if baseline_first else "endpoint",
        "load_average": [round(x, 2) for x in load_before + os.getloadavg()],
    }
    for key in REPORTED:
        mine, theirs = endpoint_result[key], baseline_result[key]
        result[key] = mine
        result[f"baseline_{key}"] = theirs
        result[f"ratio_{key}"] = round(mine / theirs, 2) if mine is not None and theirs else None
    result["steps"] = endpoint_result["steps"]
    result["baseline_steps"] = baseline_result["steps"]
    return result


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Minimum, median and maximum over runs of every reported number, its baseline and ratio."""
    out: dict[str, Any] = {"case": f"{results[0]['case']}-summary", "runs": len(results)}
    for key in REPORTED:
        for name in (key, f"baseline_{key}", f"ratio_{key}"):
            values = sorted(result[name] for result in results if result[name] is not None)
            out[name] = [values[0], values[len(values) // 2], values[-1]] if values else None
    out["load_average"] = [result["load_average"] for result in results]
    return out


REPORTED: Final = (
    "sustained_deliveries_per_s",
    "p50_ms_at_5k",
    "p99_ms_at_5k",
    "cpu_ms_per_1000",
    "rss_kb_per_idle_subscriber",
    "longest_gc_pause_ms",
    "longest_gc_cpu_ms",
    "closed_release_s",
)
"""The numbers of a fan-out result, each also as ``baseline_<name>`` and ``ratio_<name>``."""


class _Side:
    """One server (``endpoint`` or ``baseline``) streaming a namespace of its own to its own
    clients, so that the other side's writes cost it nothing."""

    def __init__(self, mode: str, kubeconfig: str, writer: _Child) -> None:
        self.mode = mode
        self.namespace = _NAMESPACES[mode]
        self.writer = writer
        self.server = _Child("server_main", mode=mode, kubeconfig=kubeconfig, namespace=self.namespace)
        self.clients = _Child("clients_main", namespace=self.namespace)
        self.steps: list[dict[str, Any]] = []
        self.subscribers = 0
        self.rss_per_idle = 0.0
        self.climbing = True

    def __enter__(self) -> _Side:
        return self

    def __exit__(self, *exc: object) -> None:
        self.clients.stop()
        self.server.stop()

    def connect(self, subscribers: int) -> None:
        self.subscribers = subscribers
        port = self.server.read()["port"]
        self.clients.ask(command="connect", port=port, count=1)
        first = self.server.ask(command="stats")
        self.clients.ask(command="connect", port=port, count=subscribers - 1)
        connected = self.server.ask(command="stats")
        self.rss_per_idle = (connected["rss_kb"] - first["rss_kb"]) / max(1, subscribers - 1)

    def step(self, rate: int, seconds: float) -> None:
        step = _step(self.server, self.clients, self.writer, self.namespace, rate, seconds, self.subscribers)
        self.steps.append(step)
        sys.stderr.write(f"fanout {self.mode}: {json.dumps(step)}\n")  # progress; results go to stdout
        self.climbing = step["held"]

    def finish(self) -> dict[str, Any]:
        """Close some clients and time their release; every number of this side."""
        leaving = min(CLOSED_CLIENTS, self.subscribers // 2)
        closed_at = self.clients.ask(command="close", count=leaving)["at"]
        deadline = time.monotonic() + HEARTBEAT
        released: list[float] = []
        while time.monotonic() < deadline:
            released = self.server.ask(command="closed", since=closed_at)["at"]
            if len(released) >= leaving:
                break
            time.sleep(0.1)
        done = self.server.ask(command="stats")
        steps = self.steps
        held = [step for step in steps if step["held"]]
        near_5k = min(steps, key=lambda step: abs(step["rate"] * self.subscribers - 5_000))
        return {
            "sustained_deliveries_per_s": max(step["deliveries_per_s"] for step in held) if held else 0,
            "p50_ms_at_5k": near_5k["p50_ms"],
            "p99_ms_at_5k": near_5k["p99_ms"],
            "cpu_ms_per_1000": near_5k["cpu_ms_per_1000"],
            "rss_kb_per_idle_subscriber": round(self.rss_per_idle, 1),
            "longest_gc_pause_ms": done["longest_gc_pause_ms"],
            "longest_gc_cpu_ms": done["longest_gc_cpu_ms"],
            "closed_release_s": round(max(released) - closed_at, 3) if len(released) >= leaving else None,
            "steps": steps,
        }


def _step(
    server: _Child, clients: _Child, writer: _Child, namespace: str, rate: int, seconds: float, subscribers: int
) -> dict[str, Any]:
    before = server.ask(command="stats")
    clients.ask(command="reset")
    started = time.time()
    written = writer.ask(command="write", namespace=namespace, rate=rate, seconds=seconds)["writes"]
    expected = written * subscribers
    received = clients.ask(command="report", since=started)
    deadline = time.monotonic() + DRAIN_SECONDS
    while received["delivered"] < expected and time.monotonic() < deadline:
        time.sleep(0.5)
        was, received = received["delivered"], clients.ask(command="report", since=started)
        if received["delivered"] == was:
            break  # nothing more is coming (resynchronized subscribers skip what they missed)
    after = server.ask(command="stats")
    delivered = received["delivered"]
    elapsed = max(received["last"] - started, seconds)
    p99 = received["p99_ms"]
    return {
        "rate": rate,
        "writes_per_s": round(written / seconds, 1),
        "deliveries_per_s": round(delivered / elapsed),
        "delivered": delivered,
        "expected": expected,
        "p50_ms": received["p50_ms"],
        "p99_ms": p99,
        "first_p50_ms": received["first_p50_ms"],
        "cpu_ms_per_1000": round((after["cpu"] - before["cpu"]) / delivered * 1e6, 2) if delivered else None,
        "resyncs": received["resyncs"],
        "held": written >= HELD_WRITES * rate * seconds
        and delivered >= expected
        and p99 is not None
        and p99 < HELD_P99_MS,
    }


def _snapshot(objects: int) -> dict[str, Any]:
    child = _Child("snapshot_main", objects=objects)
    with _children(child):
        return {"case": f"snapshot-{objects}", **child.read()}


# --------------------------------------------------------------------- child processes --


def _configmap(name: str, stamp: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": stamp, "pad": "x" * 400}}


def _pace(rate: int, seconds: float, write: Any) -> int:
    """Call ``write(n)`` ``rate`` times a second for ``seconds``; how many calls were made."""
    import gevent

    writes = 0
    interval = 1.0 / rate
    deadline = time.monotonic() + seconds
    due = time.monotonic()
    while time.monotonic() < deadline:  # a writer that falls behind writes what it can until then
        write(writes)
        writes += 1
        due += interval
        gevent.sleep(max(0.0, due - time.monotonic()))
    return writes


def upstream_main() -> None:
    """The simulator with the scope's ConfigMaps, and a writer PATCHing them in turn."""
    import gevent.pool

    from flask_krm.testing.simulator import KubeSimulator

    objects = _arguments()["objects"]
    with KubeSimulator() as kube:
        api = kube.api_client("admin")

        def request(method: str, path: str, body: Any, content_type: str = "application/json") -> None:
            m, url, h, b, _ = api.param_serialize(
                method, path, header_params={"Content-Type": content_type}, body=body, auth_settings=["BearerToken"]
            )
            response = api.call_api(m, url, header_params=h, body=b, _request_timeout=(5, 30))
            response.read()  # type: ignore[no-untyped-call]
            assert 200 <= response.status <= 299, response.data

        def patch(namespace: str, n: int) -> None:
            request(
                "PATCH",
                f"/api/v1/namespaces/{namespace}/configmaps/cm-{n % objects:03d}",
                {"data": {"a": repr(time.time())}},
                "application/merge-patch+json",
            )

        pool = gevent.pool.Pool(8)
        for namespace in _NAMESPACES.values():
            request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
            for n in range(objects):
                body = _configmap(f"cm-{n:03d}", "0")
                pool.spawn(request, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body)
        pool.join(raise_error=True)
        _say({"kubeconfig": kube.kubeconfig_path})
        writers = gevent.pool.Pool(WRITERS)  # a PATCH takes longer than a tick at the higher rates
        for command in _commands():
            namespace = command["namespace"]
            writes = _pace(command["rate"], command["seconds"], lambda n: writers.spawn(patch, namespace, n))
            writers.join(raise_error=True)
            _say({"writes": writes})


def _endpoint_app(kubeconfig: str, namespace: str, closed: list[float]) -> Any:
    """The host: Flask, flask-krm on the simulator, every stream allowed to one principal."""
    import tempfile

    from flask import Flask

    from flask_krm import AllowedResource, KrmStream, Principal, ScopePolicy, signals

    app = Flask("bench", instance_path=tempfile.mkdtemp())
    app.config.update(
        SECRET_KEY="bench",
        KRM_TARGETS={"sim": {"kubeconfig": kubeconfig, "context": "admin"}},
        KRM_SCOPE_POLICY=ScopePolicy(
            targets=frozenset({"sim"}),
            resources=(AllowedResource(group="", resource="configmaps"),),
            namespaces=frozenset({namespace}),
        ),
        KRM_HEARTBEAT_INTERVAL=HEARTBEAT,
        # FLASK_KRM_BENCH_METRICS=1: count deliveries in Prometheus metrics, as a host with them does
        KRM_METRICS_PATH="/metrics" if os.environ.get("FLASK_KRM_BENCH_METRICS") else None,
        # FLASK_KRM_BENCH_SERVER_DRIVER=0: pywsgi writes every chunk, the collector is left alone
        KRM_SERVER_DRIVER=os.environ.get("FLASK_KRM_BENCH_SERVER_DRIVER", "1") != "0",
    )
    principal = Principal("bench")
    KrmStream(
        app,
        principal_loader=lambda: principal,
        authorizer=lambda principal, scope, projection, verb: True,
        client_loader=lambda target, principal: None,
    )
    signals.stream_closed.connect(lambda sender, **kw: closed.append(time.time()), app, weak=False)
    return app


def _baseline_app(kubeconfig: str, namespace: str, closed: list[float]) -> Any:
    """A bare pywsgi app fed the way the hub is: one greenlet reads the upstream watch, encodes each
    event once and appends it to a log (O(1) per event); each connection follows the log with its
    own cursor and writes what it finds as one chunk, ``seq`` per connection. A connection more
    than :data:`BASELINE_DEPTH` events behind skips to the oldest one kept."""
    import gevent
    import gevent.event
    from kubernetes.config import new_client_from_config

    from flask_krm.events import Upsert, encode_body, frame
    from flask_krm.projection import project
    from flask_krm.sse import HEADERS
    from flask_krm.upstream.reflector import iter_json_lines

    log: list[bytes] = []
    dropped = [0]  # events no longer in the log
    wake = [gevent.event.Event()]
    api = new_client_from_config(config_file=kubeconfig, context="admin")  # type: ignore[no-untyped-call]
    path = f"/api/v1/namespaces/{namespace}/configmaps"

    def get(query: list[tuple[str, str]]) -> Any:
        method, url, headers, _, _ = api.param_serialize(
            "GET", path, query_params=query, header_params={"Accept": "application/json"}, auth_settings=["BearerToken"]
        )
        return api.call_api(method, url, header_params=headers, _request_timeout=(5, None)).response

    def pump() -> None:
        version = json.loads(get([]).data)["metadata"]["resourceVersion"]
        watch = get([("watch", "true"), ("resourceVersion", version), ("timeoutSeconds", "3600")])
        for event in iter_json_lines(watch):
            if event["type"] != "MODIFIED":
                continue
            log.append(encode_body(Upsert("modified", project(event["object"], "krm-full/v1").object)))
            if len(log) >= 2 * BASELINE_DEPTH:
                del log[:BASELINE_DEPTH]
                dropped[0] += BASELINE_DEPTH
            rung, wake[0] = wake[0], gevent.event.Event()
            rung.set()

    def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        start_response("200 OK", list(HEADERS))

        def frames() -> Iterator[bytes]:
            seq = 0
            cursor = dropped[0] + len(log)
            try:
                yield READY  # the response starts: the client counts this connection as ready
                while True:
                    while cursor >= dropped[0] + len(log):
                        wake[0].wait()
                    bodies = log[max(0, cursor - dropped[0]) :]
                    cursor = dropped[0] + len(log)
                    chunk = []
                    for body in bodies:
                        seq += 1
                        chunk.append(frame(seq, body))
                    yield b"".join(chunk)
            finally:
                closed.append(time.time())

        return frames()

    gevent.spawn(pump)
    return app


BASELINE_DEPTH: Final = 256
"""Events the baseline keeps for connections that fall behind (the hub's default queue depth)."""


def server_main() -> None:
    """The SSE server: the real endpoint (``endpoint``) or the bare loop (``baseline``)."""
    import gc

    from gevent.pywsgi import WSGIServer

    _raise_file_limit()
    arguments = _arguments()
    closed: list[float] = []
    # the longest collection (wall clock, and this thread's CPU), when the current one started
    longest = [0.0, 0.0, 0.0, 0.0]

    def collected(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            longest[2], longest[3] = time.perf_counter(), time.thread_time()
        else:
            longest[0] = max(longest[0], time.perf_counter() - longest[2])
            longest[1] = max(longest[1], time.thread_time() - longest[3])

    if arguments["mode"] == "endpoint":
        app = _endpoint_app(arguments["kubeconfig"], arguments["namespace"], closed)
    else:
        app = _baseline_app(arguments["kubeconfig"], arguments["namespace"], closed)
    server = WSGIServer(("127.0.0.1", 0), app, log=None, error_log=None, backlog=4096)
    gc.callbacks.append(collected)  # from here on: serving
    server.start()
    _say({"port": server.server_port})
    for command in _commands():
        if command["command"] == "stats":
            pauses = {
                "longest_gc_pause_ms": round(longest[0] * 1000, 1),
                "longest_gc_cpu_ms": round(longest[1] * 1000, 1),
            }
            _say({**_usage(), **pauses})
        elif command["command"] == "closed":
            _say({"at": [at for at in closed if at >= command["since"]]})


READY: Final = b": ready\n\n"
"""The baseline's first chunk (a comment), so that its response starts before anything is written."""
_STAMP: Final = rb'"type":"modified","object":\{"apiVersion":"v1","data":\{"a":"([0-9.]+)"'


def clients_main() -> None:
    """N HTTP/1.1 stream readers; each ``modified`` frame is timed from its ``data.a`` stamp."""
    import re

    import gevent
    import gevent.event
    import gevent.pool
    from gevent import socket

    _raise_file_limit()
    url = _URL.format(_arguments()["namespace"])
    stamp = re.compile(_STAMP)
    latencies: list[float] = []
    first: dict[bytes, float] = {}  # per event: the latency of its earliest arrival
    last = [0.0]
    resyncs = [0]
    connections: list[tuple[socket.socket, gevent.Greenlet]] = []

    def read(connection: socket.socket, ready: gevent.event.Event) -> None:
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
            if not ready.is_set() and (b'"type":"synced"' in complete or READY in complete):
                ready.set()
            if b'"code":"RESYNC_REQUIRED"' in complete:
                resyncs[0] += complete.count(b'"code":"RESYNC_REQUIRED"')
            stamps = stamp.findall(complete)
            if stamps:
                measured = [now - float(s) for s in stamps]
                latencies.extend(measured)
                for s, latency in zip(stamps, measured):
                    if s not in first:
                        first[s] = latency
                last[0] = now

    def connect(port: int) -> None:
        connection = socket.create_connection(("127.0.0.1", port))
        connection.sendall(f"GET {url} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
        ready = gevent.event.Event()
        reader = gevent.spawn(read, connection, ready)
        connections.append((connection, reader))
        ready.wait(timeout=120)

    for command in _commands():
        if command["command"] == "connect":
            pool = gevent.pool.Pool(100)
            for _ in range(command["count"]):
                pool.spawn(connect, command["port"])
            pool.join(timeout=300)
            _say({"connected": len(connections)})
        elif command["command"] == "reset":
            latencies.clear()
            first.clear()
            resyncs[0] = 0
            _say({})
        elif command["command"] == "report":
            measured = sorted(latencies)
            count = len(measured)
            earliest = sorted(first.values())
            _say(
                {
                    "delivered": count,
                    "first_p50_ms": round(earliest[len(earliest) // 2] * 1000, 1) if earliest else None,
                    "p50_ms": round(measured[count // 2] * 1000, 1) if count else None,
                    "p99_ms": round(measured[min(count - 1, int(count * 0.99))] * 1000, 1) if count else None,
                    "last": last[0],
                    "resyncs": resyncs[0],
                }
            )
        elif command["command"] == "close":
            leaving = [connections.pop() for _ in range(command["count"])]
            for _, reader in leaving:
                reader.kill()
            at = time.time()
            for connection, _ in leaving:
                connection.close()
            _say({"at": at})


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


def snapshot_main() -> None:
    """A new subscriber's snapshot of a synced scope from the cache, against ``json.dumps``."""
    import gc

    import gevent.pool

    from flask_krm.principal import Principal
    from flask_krm.scope import Scope
    from flask_krm.testing.simulator import KubeSimulator
    from flask_krm.upstream.authz import allow_all
    from flask_krm.upstream.clients import ApiClients, Kubeconfig
    from flask_krm.upstream.collector import PROCESS_POLICY
    from flask_krm.upstream.hub import Hub

    count = _arguments()["objects"]
    with KubeSimulator() as kube:
        api = kube.api_client("admin")

        def call(method: str, path: str, body: Any = None) -> Any:
            m, url, h, b, _ = api.param_serialize(
                method,
                path,
                header_params={"Content-Type": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
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
        if os.environ.get("FLASK_KRM_BENCH_SERVER_DRIVER", "1") != "0":
            PROCESS_POLICY.enable()  # as the pywsgi driver does at a served process's first stream
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
