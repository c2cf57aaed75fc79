"""Drafts across workers: an edit on one worker reaching the page channels of the same session on
the others through Redis, against the same edit on one worker with the memory backend.

- ``redis``: a real ``redis-server`` (started here on a free port, nothing persisted) and
  :data:`WORKERS` worker processes, each patched by gevent first, each with a
  :class:`~flask_krm.sessions.DraftRegistry` on a :class:`~flask_krm.drafts.RedisBackend` and its
  one subscription (:meth:`DraftSync.run <flask_krm.drafts.sync.DraftSync.run>`). Every worker
  holds the store of each of ``sessions`` sessions (one ConfigMap each) with one page channel
  registered on it (a store subscriber, as :class:`flask_krm.ui.channel.Channel` registers: what
  wakes the channel), so ``sessions`` x :data:`WORKERS` channels are open. Worker 0 edits the
  sessions in turn at :data:`RATE` edits per second, each edit stamping the clock into the value;
  the other workers time each edit from its stamp to their channel's wake-up.
- ``memory`` (the baseline): one process, the default backend, the same stores, channels and
  edits; the channel is woken in the process.

Reported: ``p50_ms``/``p99_ms`` of edit-to-channel latency, ``round_trips_per_edit`` (Redis
commands the editing worker sent per edit request, counted at its client: the catch-up read and
the write) and ``delivered`` (wake-ups seen / expected), each next to the baseline and as a ratio
where one makes sense.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, Final

_ROOT = Path(__file__).resolve().parent.parent
_PATCHED_MAIN = "from gevent import monkey; monkey.patch_all()\nimport bench.bench_workers as b\nb.worker()\n"
WORKERS: Final = 3
RATE: Final = 200.0
"""Edits per second worker 0 makes."""
UID: Final = "cm-bench"


def _configmap(value: str = "0") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"uid": UID, "name": "bench", "namespace": "bench", "resourceVersion": "1"},
        "data": {"stamp": value},
    }


def _open_sessions(registry: Any, sessions: int, on_wake: Callable[[Any], None]) -> list[Callable[[str], None]]:
    """The store of each session (loaded with the ConfigMap) with one channel subscriber on it; for
    each, what an edit request does: take what other workers wrote, then set the stamp."""
    from flask_krm.events import Reset, Synced, Upsert
    from flask_krm.scope import Scope
    from flask_krm.sessions import Limits
    from flask_krm.ui.state import new_store

    scope = Scope(target="bench", version="v1", resource="configmaps", namespace="bench")
    limits = Limits(store_expiry=3600.0, session_lifetime=3600.0, max_stores=4, max_sessions=sessions + 10)
    editors = []
    for index in range(sessions):
        drafts = registry.namespace(f"bench-session-{index:05d}", "bench", limits)
        store = drafts.store(scope, "krm-full/v1", lambda: new_store(60.0))
        if UID not in store.uids():
            store.apply(Reset(scope=scope.to_wire(), projection="krm-full/v1"))
            store.apply(Upsert("added", _configmap()))
            store.apply(Synced())
        store.subscribe(lambda uids, store=store: on_wake(store))
        editors.append(partial(_edit_request, drafts, scope, store))
    return editors


def _edit_request(drafts: Any, scope: Any, store: Any, stamp: str) -> None:
    drafts.catch_up(scope, "krm-full/v1")  # as ui.binding.bind does first
    store.set_value(UID, ("data", "stamp"), stamp)


def _stamp_of(store: Any) -> float | None:
    draft = store.draft(UID) or {}
    try:
        return float(draft.get("data", {}).get("stamp", ""))
    except ValueError:
        return None


def _percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 4)


# ----------------------------------------------------------------------------- in a worker --


def worker() -> None:
    """A worker process: ``FLASK_KRM_BENCH_ARGS`` says its role; one JSON line per step on stdout."""
    import gevent

    from flask_krm.drafts.redis_backend import RedisBackend
    from flask_krm.sessions import DraftRegistry

    arguments = json.loads(os.environ["FLASK_KRM_BENCH_ARGS"])
    backend = RedisBackend.from_url(arguments["url"])
    calls = [0]
    inner = backend.client.execute_command

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return inner(*args, **kwargs)

    backend.client.execute_command = counted  # type: ignore[method-assign]
    registry = DraftRegistry(backend=backend)
    latencies: list[float] = []

    def woke(store: Any) -> None:
        stamp = _stamp_of(store)
        if stamp is not None and stamp > 1.0:
            latencies.append((time.time() - stamp) * 1000.0)

    editors = _open_sessions(registry, arguments["sessions"], woke)
    assert registry.sync is not None
    listener = gevent.spawn(registry.sync.run, gevent.sleep)
    gevent.sleep(0.3)  # the subscription is in place
    print(json.dumps({"ready": True}), flush=True)
    command = json.loads(_read_line())
    if command.get("edit"):
        before = calls[0]
        edits = _edit(editors, command["edits"], command["rate"])
        print(json.dumps({"edits": edits, "round_trips": calls[0] - before}), flush=True)
    else:
        _read_line()  # until the driver says the edits are over
        print(json.dumps({"latencies": latencies}), flush=True)
    listener.kill()


def _read_line() -> str:
    """A line of stdin, letting the other greenlets run while none has come (stdin is not patched)."""
    from gevent.socket import wait_read

    wait_read(sys.stdin.fileno())
    return sys.stdin.readline()


def _edit(editors: list[Callable[[str], None]], edits: int, rate: float) -> int:
    import gevent

    start = time.perf_counter()
    for index in range(edits):
        due = start + index / rate
        gevent.sleep(max(0.0, due - time.perf_counter()))
        editors[index % len(editors)](repr(time.time()))
    return edits


# ----------------------------------------------------------------------------- the driver --


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Redis:
    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (scripts/bootstrap installs Debian's)")
        self.port = _free_port()
        self.dir = tempfile.mkdtemp(prefix="krm-bench-redis-")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--dir", self.dir],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def _child(**arguments: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "FLASK_KRM_BENCH_ARGS": json.dumps(arguments), "PYTHONPATH": str(_ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", _PATCHED_MAIN],
        cwd=_ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _line(child: subprocess.Popen[str]) -> dict[str, Any]:
    assert child.stdout is not None
    line = child.stdout.readline()
    if not line:
        raise RuntimeError(f"a benchmark worker ended early (exit code {child.wait()})")
    answer: dict[str, Any] = json.loads(line)
    return answer


def _send(child: subprocess.Popen[str], message: dict[str, Any]) -> None:
    assert child.stdin is not None
    child.stdin.write(json.dumps(message) + "\n")
    child.stdin.flush()


def across_workers(sessions_per_worker: int, edits: int) -> dict[str, Any]:
    """Edit-to-channel latency on the other workers, through Redis."""
    redis = _Redis()
    children: list[subprocess.Popen[str]] = []
    try:
        children = [_child(url=redis.url, sessions=sessions_per_worker) for _ in range(WORKERS)]
        for child in children:
            _line(child)
        editor, receivers = children[0], children[1:]
        for child in receivers:
            _send(child, {"edit": False})
        _send(editor, {"edit": True, "edits": edits, "rate": RATE})
        edited = _line(editor)
        time.sleep(1.0)  # the last edits arrive
        latencies: list[float] = []
        for child in receivers:
            _send(child, {"stop": True})
            latencies += _line(child)["latencies"]
        return {
            "p50_ms": _percentile(latencies, 0.5),
            "p99_ms": _percentile(latencies, 0.99),
            "round_trips_per_edit": round(edited["round_trips"] / edited["edits"], 3),
            "delivered": round(len(latencies) / (edits * len(receivers)), 4),
        }
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
        redis.stop()


def one_worker_memory(sessions: int, edits: int) -> dict[str, Any]:
    """The same edits and channels in one process with the memory backend (the baseline)."""
    from flask_krm.sessions import DraftRegistry

    registry = DraftRegistry()
    latencies: list[float] = []

    def woke(store: Any) -> None:
        stamp = _stamp_of(store)
        if stamp is not None and stamp > 1.0:
            latencies.append((time.time() - stamp) * 1000.0)

    editors = _open_sessions(registry, sessions, woke)
    for index in range(edits):
        editors[index % len(editors)](repr(time.time()))
    return {
        "p50_ms": _percentile(latencies, 0.5),
        "p99_ms": _percentile(latencies, 0.99),
        "round_trips_per_edit": 0.0,
        "delivered": round(len(latencies) / edits, 4),
    }


def run(quick: bool) -> Iterable[dict[str, Any]]:
    """1,000 open page channels over 3 workers (quick: 60), against one worker in memory."""
    channels = 60 if quick else 1_000
    edits = 100 if quick else 2_000
    per_worker = channels // WORKERS
    measured = across_workers(per_worker, edits)
    baseline = one_worker_memory(per_worker, edits)
    p50, base_p50 = measured["p50_ms"], baseline["p50_ms"]
    yield {
        "case": f"edit-to-other-worker-{per_worker * WORKERS}-channels",
        "workers": WORKERS,
        "edits": edits,
        "rate_per_s": RATE,
        **measured,
        "baseline": "one worker, memory backend",
        **{f"baseline_{key}": value for key, value in baseline.items()},
        "ratio": round(p50 / base_p50, 1) if p50 and base_p50 else None,
        "ratio_p99": round(measured["p99_ms"] / baseline["p99_ms"], 1)
        if measured["p99_ms"] and baseline["p99_ms"]
        else None,
    }
