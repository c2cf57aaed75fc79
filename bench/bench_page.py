"""A live list page: what one changed object costs its viewers, against the spec-v1 JSON event for
the same change and against polling the page, measured in the same run.

One child process, monkey-patched by gevent before anything else is imported (this module stays
unpatched), holds everything:

- the Kubernetes API simulator (its own native thread) with a namespace of N ConfigMaps (each
  with two labels and two data keys), created directly in its store;
- the host: Flask with :class:`flask_krm.KrmStream` on the simulator (the shared hub, the
  target's own identity), a page showing ``krm.list`` of the namespace (name, labels and data
  columns, :data:`PAGE_SIZE` rows a page, sorted by name), one signed-in principal;
- S sessions (each its own cookie jar, so its own drafts and page), each having loaded the page and
  reading its page channel, and one reader of the spec-v1 JSON stream of the same scope, all
  served in this process's main thread (the readers iterate the responses as a WSGI server would,
  without sockets).

Then the simulator changes one object shown on the first page, C times, one at a time; each time
the run waits until every session's channel and the JSON stream delivered it. Reported for N =
5,000 with :data:`LARGE_SESSIONS` sessions, and N = :data:`LADDER_OBJECTS` with each number of
sessions of :data:`SESSION_LADDER` (quick: 1,000 objects with 3 sessions, 100 with 5 and 20), and
the editor case (with the JSON stream) also with :data:`EDITOR_SESSIONS` sessions (quick: 3):

- ``bytes_per_change``: page-stream bytes one session received per change (the median), SSE
  framing included; ``baseline_spec_v1_bytes``: the JSON stream's bytes for the same change
  (``ratio`` = the first over the second); ``framing_bytes``: the page stream's SSE framing in it;
- ``whole_body_bytes``: the page's whole list body as one partial (what a change cost when every
  change re-sent it);
- ``poll_bytes``, ``poll_gzip_bytes``: one GET of the same page, raw and gzipped (what a 2-second
  poll sends every 2 seconds to every viewer); ``ratio_poll`` = ``bytes_per_change`` over it;
- ``cpu_ms_per_change``: CPU of the main thread (the hub, every session's feed and channel,
  rendering, framing; not the simulator's thread) per change for all S sessions;
  ``poll_cpu_ms``: CPU of rendering the page once (one session's poll); ``ratio_poll_cpu`` =
  ``cpu_ms_per_change`` over S polls.

``sessions`` says S. The sessions of one worker share one server truth per watch: a session holds
only what its person did, so its memory does not grow with the objects.

Every case also reports ``rss_per_session_kb``: the process's resident memory grown per session
opened after the first (the first one's store, watch and rendering caches are the process's,
whatever the number of sessions), and the list cases ``page_get_ms`` (the median wall time of the
page GETs after the first, while other sessions show the same list) and ``rows_in_first_paint`` (the
rows the last GET's HTML held). The ``stream-<N>`` cases hold S readers of the spec-v1 JSON stream
of the same scope instead (``cpu_ms_per_change_per_reader``, ``rss_per_reader_kb``), measured in the
same run, as ``ratio_cpu_stream`` and ``ratio_rss_stream`` of the page and editor cases with as
many sessions.

The ``editor-<K>`` cases open ``krm.editor`` of one ConfigMap with K data keys and two labels in S
sessions, and change one data value C times: reported are
``bytes_per_change`` (one session's page-stream bytes per change, the median), ``whole_body_bytes``
(the editor's whole body as one partial, what a change cost when every change re-sent it, framing
included) and ``ratio`` = the first over the second, ``baseline_spec_v1_bytes`` (a spec-v1 JSON
stream of the same object: its event for the same change) with ``ratio_spec_v1`` and
``spec_v1_budget_bytes`` (twice that event plus 600 B), and ``cpu_ms_per_change`` for all sessions.

The ``editor-live-<S>`` case (:data:`LIVE_EDITORS` sessions; 20 quick) holds S sessions each with
an editor of the same object and changes one of its values once a second, whatever was delivered:
``delivered`` is the share of (session, change) pairs whose value reached the session (the child
fails unless it is 1), ``p50_last_session_s`` and ``max_last_session_s`` how long the last session
waited for a change, ``cpu_share_of_one_core`` the main thread's CPU over the run's seconds.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import time
import typing as t
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

_ROOT: Final = Path(__file__).resolve().parent.parent
_PATCHED_MAIN: Final = "from gevent import monkey; monkey.patch_all()\nimport bench.bench_page as b\nb.page_main()\n"
NAMESPACE: Final = "bench"
PAGE_SIZE: Final = 50
LARGE_SESSIONS: Final = 20
EDITOR_KEYS: Final = 50
_SCOPE: Final = f"target=sim&version=v1&resource=configmaps&namespace={NAMESPACE}"
_PAGE: Final = """{% import "krm/_macros.html" as krm %}<!doctype html><html><head>{{ krm_script() }}</head><body>
{{ krm.list(scope, columns=["/metadata/name", ("Labels", "/metadata/labels"), ("Data", "/data")],
            link="/configmaps/{name}", page_size=page_size) }}</body></html>"""
_EDITOR_PAGE: Final = """{% import "krm/_macros.html" as krm %}<!doctype html>
<html><head>{{ krm_script() }}</head><body>
{{ krm.editor(scope, "edited") }}</body></html>"""


SESSION_LADDER: Final = (100, 1000)
"""Sessions of the list, editor and JSON stream cases compared side by side."""
EDITOR_SESSIONS: Final = 40
"""Sessions of the editor case also run alone (with the JSON stream of as many readers): issue 23's
criterion, one 50-key editor open in 40 sessions."""
LADDER_OBJECTS: Final = 500


LIVE_EDITORS: Final = 1000
"""Sessions of the liveness case: each holds an editor of the same object, changed once a second."""


def run(quick: bool) -> Iterable[dict[str, Any]]:
    ladder = (5, 20) if quick else SESSION_LADDER
    objects = 100 if quick else LADDER_OBJECTS
    changes = 5 if quick else 10
    yield _child(kind="live", objects=1, sessions=20 if quick else LIVE_EDITORS, changes=5 if quick else 20)
    yield _child(objects=1000 if quick else 5000, sessions=3 if quick else LARGE_SESSIONS, changes=changes)
    for sessions in ((3,) if quick else (EDITOR_SESSIONS,)) + ladder:
        stream = _child(kind="stream", objects=objects, sessions=sessions, changes=changes)
        yield stream
        cases = [_child(kind="editor", objects=1, sessions=sessions, changes=changes)]
        if sessions in ladder:
            cases.insert(0, _child(objects=objects, sessions=sessions, changes=changes))
        for result in cases:
            per_session = result["cpu_ms_per_change_per_session"]
            result["stream_cpu_ms_per_change_per_reader"] = stream["cpu_ms_per_change_per_reader"]
            result["ratio_cpu_stream"] = round(per_session / stream["cpu_ms_per_change_per_reader"], 2)
            result["stream_rss_per_reader_kb"] = stream["rss_per_reader_kb"]
            yield result


def _rss_kb() -> float:
    """The process's resident memory now, in KB, after a full collection."""
    import gc

    gc.collect()
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return float(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def _child(**arguments: Any) -> dict[str, Any]:
    env = {**os.environ, "FLASK_KRM_BENCH_ARGS": json.dumps(arguments), "PYTHONPATH": str(_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", _PATCHED_MAIN], cwd=_ROOT, env=env, capture_output=True, text=True, check=False
    )
    if result.returncode != 0 or not result.stdout.strip():
        raise RuntimeError(f"the page benchmark's child failed (exit code {result.returncode}):\n{result.stderr}")
    answer: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return answer


def _configmap(n: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"cm-{n:05d}", "namespace": NAMESPACE, "labels": {"app": "bench", "tier": "web"}},
        "data": {"greeting": "hello", "version": "0"},
    }


def _app(kubeconfig: str) -> Any:
    import tempfile

    from flask import Flask, render_template_string

    from flask_krm import AllowedResource, KrmStream, Principal, ScopePolicy

    app = Flask("bench", instance_path=tempfile.mkdtemp())
    app.config.update(
        SECRET_KEY="bench",
        KRM_TARGETS={"sim": {"kubeconfig": kubeconfig, "context": "admin"}},
        KRM_SCOPE_POLICY=ScopePolicy(
            targets=frozenset({"sim"}),
            resources=(AllowedResource(group="", resource="configmaps"),),
            namespaces=frozenset({NAMESPACE}),
        ),
        KRM_HEARTBEAT_INTERVAL=30.0,
        KRM_MAX_SESSIONS=100_000,
    )
    principal = Principal("bench")
    KrmStream(
        app,
        principal_loader=lambda: principal,
        authorizer=lambda principal, scope, projection, verb: True,
        client_loader=lambda target, principal: None,
    )

    @app.get("/list")
    def page() -> str:
        return render_template_string(_PAGE, scope=_SCOPE, page_size=PAGE_SIZE)

    @app.get("/edit")
    def editor() -> str:
        return render_template_string(_EDITOR_PAGE, scope=_SCOPE)

    return app


class _Reader:
    """Opens one streaming response and iterates it in its own greenlet (a streaming response keeps
    its request context pushed while it runs, as under a server), counting bytes and messages."""

    def __init__(self, client: Any, url: str, counted: Any, wake: Any) -> None:
        import gevent

        self.bytes = 0
        self.messages = 0
        self.framing = 0
        self._counted = counted
        self._wake = wake
        self.greenlet = gevent.spawn(self._run, client, url)

    def _run(self, client: Any, url: str) -> None:
        response = client.get(url, buffered=False)
        try:
            for chunk in response.iter_encoded():
                if not chunk or chunk.startswith(b":"):
                    continue  # comments: connected, heartbeats
                self.bytes += len(chunk)
                self.messages += self._counted(chunk)
                self.framing += chunk.count(b"data: ") * len(b"data: ") + chunk.count(b"\n")
                self._wake.set()
        finally:
            response.close()

    def close(self) -> None:
        self.greenlet.kill()


@dataclass
class _Opened:
    """Sessions opened on a page: their readers and clients, the last page's HTML, the wall time of
    every GET after the first, and the resident memory once the first session reads its channel."""

    readers: list[Any]
    clients: list[Any]
    html: bytes
    get_seconds: list[float]
    first_rss_kb: float

    def rss_per_session_kb(self) -> float:
        extra = len(self.readers) - 1
        return round((_rss_kb() - self.first_rss_kb) / extra, 1) if extra else 0.0


def _open_pages(app: Any, path: str, sessions: int, wake: Any, reader: Any = None) -> _Opened:
    """``sessions`` sessions (each its own client) having loaded ``path`` and reading its page
    channel (with ``reader(client, url)``: a :class:`_Reader` by default)."""
    import gevent

    readers: list[_Reader] = []
    clients = []
    html = b""
    gets: list[float] = []
    first_rss = 0.0
    for n in range(sessions):
        client = app.test_client()
        started = time.perf_counter()
        html = client.get(path).data
        if n:
            gets.append(time.perf_counter() - started)
        page_id = re.search(rb'hx-sse:connect="/krm/ui/pages/([^/"]+)/channel"', html)
        assert page_id is not None, html[:2000]
        channel = f"/krm/ui/pages/{page_id.group(1).decode()}/channel"
        if reader is None:
            readers.append(_Reader(client, channel, lambda chunk: chunk.count(b"\n\n"), wake))
        else:
            readers.append(reader(client, channel))
        clients.append(client)
        if n == 0:
            _settle(wake, 1.0)
            first_rss = _rss_kb()
        elif n % 50 == 0:
            gevent.sleep(0)
    _settle(wake, 1.0)
    return _Opened(readers, clients, html, gets, first_rss)


def _settle(wake: Any, seconds: float) -> None:
    """Wait until nothing was delivered for ``seconds``."""
    while True:
        wake.clear()
        if not wake.wait(seconds):
            return


def _edited() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "edited", "namespace": NAMESPACE, "labels": {"app": "bench", "tier": "web"}},
        "data": {f"key-{n:03d}": f"value {n}" for n in range(EDITOR_KEYS)},
    }


def _whole_body_bytes(html: bytes, after: bytes) -> int:
    """The bytes of a page's component body (the ``krm-body`` element followed by ``after``) sent as
    one ``innerMorph`` partial, SSE framing included."""
    body = re.search(rb'<div id="(krm-[0-9a-f]+)-body" class="krm-body">(.*?)</div>\s*' + after, html, re.S)
    assert body is not None
    whole = f'<hx-partial hx-target="#{body.group(1).decode()}-body" hx-swap="innerMorph">'.encode()
    size = len(whole) + len(body.group(2)) + len(b"</hx-partial>")
    return size + body.group(2).count(b"\n") * len(b"data: ") + len(b"data: \n\n")


def editor_main(sessions: int, changes: int) -> None:
    """The measured child of the editor case: one ConfigMap edited in ``sessions`` sessions, one of
    its data values changed ``changes`` times."""
    import gevent.event

    from flask_krm.testing.simulator import KubeSimulator, catalog

    with KubeSimulator() as kube:
        application = kube.application
        assert application is not None
        registry = application.registry
        kube.create_objects([_edited()])
        app = _app(kube.kubeconfig_path)
        wake = gevent.event.Event()
        opened = _open_pages(app, "/edit", sessions, wake)
        readers, html = opened.readers, opened.html
        rss_per_session = opened.rss_per_session_kb()
        stream = f"/krm/resource-stream/v1?{_SCOPE}&name=edited"
        json_reader = _Reader(app.test_client(), stream, lambda chunk: chunk.count(b'"type":"modified"'), wake)
        _settle(wake, 1.0)
        per_session: list[int] = []
        spec_v1: list[int] = []
        cpu: list[float] = []
        for change in range(changes):
            before = [(r.bytes, r.messages) for r in readers]
            json_before = (json_reader.bytes, json_reader.messages)
            started = time.thread_time()
            kube.call(
                lambda change=change: registry.patch(  # type: ignore[misc]
                    catalog.CONFIGMAPS, NAMESPACE, "edited", {"data": {"key-007": f"changed {change}"}}
                )
            )
            deadline = time.monotonic() + 30
            while json_reader.messages <= json_before[1] or not all(
                r.messages > b[1] for r, b in zip(readers, before, strict=True)
            ):
                if time.monotonic() > deadline:
                    raise RuntimeError("a change was not delivered to every editor within 30 s")
                wake.clear()
                wake.wait(0.5)
            cpu.append(time.thread_time() - started)
            per_session.extend(r.bytes - b[0] for r, b in zip(readers, before, strict=True))
            spec_v1.append(json_reader.bytes - json_before[0])
            gevent.sleep(0.2)
        whole_body = _whole_body_bytes(html, rb'<div class="krm-yaml-panel"')
        for reader in (*readers, json_reader):
            reader.close()
        bytes_per_change = statistics.median(per_session)
        spec_v1_bytes = statistics.median(spec_v1)
        cpu_ms = statistics.median(cpu) * 1000
        result = {
            "case": f"editor-{EDITOR_KEYS}",
            "keys": EDITOR_KEYS,
            "sessions": sessions,
            "changes": changes,
            "bytes_per_change": bytes_per_change,
            "whole_body_bytes": whole_body,
            "baseline": whole_body,
            "ratio": round(bytes_per_change / whole_body, 4),
            "baseline_spec_v1_bytes": spec_v1_bytes,
            "ratio_spec_v1": round(bytes_per_change / spec_v1_bytes, 3),
            "spec_v1_budget_bytes": 2 * spec_v1_bytes + 600,
            "max_bytes_per_change": max(per_session),
            "cpu_ms_per_change": round(cpu_ms, 2),
            "cpu_ms_per_change_per_session": round(cpu_ms / sessions, 3),
            "rss_per_session_kb": rss_per_session,
            "load_average": list(os.getloadavg()),
        }
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
        app.extensions["krm"].shutdown(2.0)


class _Values:
    """Which changed values (``changed <n>``) one page channel delivered, and when each first came."""

    def __init__(self, client: Any, url: str, wake: Any) -> None:
        import gevent

        self.seen: dict[int, float] = {}
        self._wake = wake
        self.greenlet = gevent.spawn(self._run, client, url)

    def _run(self, client: Any, url: str) -> None:
        response = client.get(url, buffered=False)
        try:
            for chunk in response.iter_encoded():
                for found in re.finditer(rb"changed (\d+)", chunk):
                    self.seen.setdefault(int(found.group(1)), time.monotonic())
                self._wake.set()
        finally:
            response.close()

    def close(self) -> None:
        self.greenlet.kill()


def live_main(sessions: int, changes: int) -> None:
    """The liveness child: ``sessions`` sessions each holding an editor of one object, one of its
    values changed once a second ``changes`` times (without waiting for anyone); every session
    must receive every value. Reports how long the last session took to get each change."""
    import gevent
    import gevent.event

    from flask_krm.testing.simulator import KubeSimulator, catalog

    with KubeSimulator() as kube:
        application = kube.application
        assert application is not None
        registry = application.registry
        kube.create_objects([_edited()])
        app = _app(kube.kubeconfig_path)
        wake = gevent.event.Event()
        opened = _open_pages(app, "/edit", sessions, wake, lambda client, url: _Values(client, url, wake))
        readers = t.cast("list[_Values]", opened.readers)
        _settle(wake, 2.0)
        sent: dict[int, float] = {}
        started_cpu = time.thread_time()
        for change in range(changes):
            due = time.monotonic() + 1.0
            sent[change] = time.monotonic()
            kube.call(
                lambda change=change: registry.patch(  # type: ignore[misc]
                    catalog.CONFIGMAPS, NAMESPACE, "edited", {"data": {"key-007": f"changed {change}"}}
                )
            )
            gevent.sleep(max(0.0, due - time.monotonic()))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(len(r.seen) >= changes for r in readers):
            wake.clear()
            wake.wait(0.5)
        cpu_s = time.thread_time() - started_cpu
        missing = sum(1 for r in readers for change in range(changes) if change not in r.seen)
        latest = [max(r.seen.get(change, float("inf")) for r in readers) - sent[change] for change in range(changes)]
        for reader in readers:
            reader.close()
        result = {
            "case": f"editor-live-{sessions}",
            "sessions": sessions,
            "changes": changes,
            "change_interval_s": 1.0,
            "delivered": round(1 - missing / (len(readers) * changes), 6),
            "baseline": 1.0,
            "ratio": round(1 - missing / (len(readers) * changes), 6),
            "p50_last_session_s": round(statistics.median(latest), 3),
            "max_last_session_s": round(max(latest), 3),
            "cpu_share_of_one_core": round(cpu_s / (changes * 1.0), 3),
            "sessions_missing_changes": sum(1 for r in readers if len(r.seen) < changes),
            "sessions_without_any": sum(1 for r in readers if not r.seen),
            "load_average": list(os.getloadavg()),
        }
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
        app.extensions["krm"].shutdown(2.0)
        if missing or len(readers) != sessions:
            raise RuntimeError(f"{missing} changes were not delivered to the {sessions} editors")


def stream_main(objects: int, readers_wanted: int, changes: int) -> None:
    """The measured child of a ``stream`` case: ``readers_wanted`` readers of the spec-v1 JSON stream
    of the list's scope, one object changed ``changes`` times."""
    import gevent.event

    from flask_krm.testing.simulator import KubeSimulator, catalog

    with KubeSimulator() as kube:
        application = kube.application
        assert application is not None
        registry = application.registry
        kube.create_objects([_configmap(n) for n in range(objects)])
        app = _app(kube.kubeconfig_path)
        wake = gevent.event.Event()
        stream = f"/krm/resource-stream/v1?{_SCOPE}"
        readers: list[_Reader] = []
        first_rss = 0.0
        for n in range(readers_wanted):
            readers.append(_Reader(app.test_client(), stream, lambda chunk: chunk.count(b'"type":"modified"'), wake))
            if n == 0:
                _settle(wake, 1.0)
                first_rss = _rss_kb()
            elif n % 50 == 0:
                gevent.sleep(0)
        _settle(wake, 1.0)
        rss_per_reader = round((_rss_kb() - first_rss) / max(1, readers_wanted - 1), 1)
        cpu: list[float] = []
        per_reader: list[int] = []
        for change in range(changes):
            before = [(r.bytes, r.messages) for r in readers]
            started = time.thread_time()
            kube.call(
                lambda change=change: registry.patch(  # type: ignore[misc]
                    catalog.CONFIGMAPS, NAMESPACE, "cm-00000", {"data": {"version": str(change + 1)}}
                )
            )
            deadline = time.monotonic() + 60
            while not all(r.messages > b[1] for r, b in zip(readers, before, strict=True)):
                if time.monotonic() > deadline:
                    raise RuntimeError("a change was not delivered to every JSON stream within 60 s")
                wake.clear()
                wake.wait(0.5)
            cpu.append(time.thread_time() - started)
            per_reader.extend(r.bytes - b[0] for r, b in zip(readers, before, strict=True))
            _settle(wake, 0.2)
        for reader in readers:
            reader.close()
        cpu_ms = statistics.median(cpu) * 1000
        result = {
            "case": f"stream-{objects}",
            "objects": objects,
            "sessions": readers_wanted,
            "changes": changes,
            "bytes_per_change": statistics.median(per_reader),
            "cpu_ms_per_change": round(cpu_ms, 2),
            "cpu_ms_per_change_per_reader": round(cpu_ms / readers_wanted, 4),
            "rss_per_reader_kb": rss_per_reader,
            "load_average": list(os.getloadavg()),
        }
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
        app.extensions["krm"].shutdown(2.0)


def page_main() -> None:
    """The measured child: simulator, host, sessions and readers, then the changes."""
    import gevent
    import gevent.event

    from flask_krm.testing.simulator import KubeSimulator, catalog

    arguments = json.loads(os.environ["FLASK_KRM_BENCH_ARGS"])
    if arguments.get("kind") == "editor":
        editor_main(arguments["sessions"], arguments["changes"])
        return
    if arguments.get("kind") == "live":
        live_main(arguments["sessions"], arguments["changes"])
        return
    if arguments.get("kind") == "stream":
        stream_main(arguments["objects"], arguments["sessions"], arguments["changes"])
        return
    objects, sessions, changes = arguments["objects"], arguments["sessions"], arguments["changes"]
    with KubeSimulator() as kube:
        application = kube.application
        assert application is not None
        registry = application.registry
        kube.create_objects([_configmap(n) for n in range(objects)])
        app = _app(kube.kubeconfig_path)
        wake = gevent.event.Event()
        opened = _open_pages(app, "/list", sessions, wake)
        page_readers, clients, poll_html = opened.readers, opened.clients, opened.html
        rss_per_session = opened.rss_per_session_kb()
        rows_in_first_paint = poll_html.count(b"<tr id=")
        stream = f"/krm/resource-stream/v1?{_SCOPE}"
        json_reader = _Reader(app.test_client(), stream, lambda chunk: chunk.count(b'"type":"modified"'), wake)

        _settle(wake, 1.0)
        for reader in (*page_readers, json_reader):
            reader.bytes = reader.messages = reader.framing = 0
        per_session: list[int] = []
        framing: list[int] = []
        spec_v1: list[int] = []
        cpu: list[float] = []
        for change in range(changes):
            before = [(r.bytes, r.messages, r.framing) for r in page_readers]
            json_before = (json_reader.bytes, json_reader.messages)
            name = f"cm-{change % PAGE_SIZE:05d}"
            started = time.thread_time()
            kube.call(
                lambda name=name, change=change: registry.patch(  # type: ignore[misc]
                    catalog.CONFIGMAPS, NAMESPACE, name, {"data": {"version": str(change + 1)}}
                )
            )
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                done = json_reader.messages > json_before[1] and all(
                    r.messages > b[1] for r, b in zip(page_readers, before, strict=True)
                )
                if done:
                    break
                wake.clear()
                wake.wait(0.5)
            else:
                raise RuntimeError("a change was not delivered to every reader within 30 s")
            cpu.append(time.thread_time() - started)
            per_session.extend(r.bytes - b[0] for r, b in zip(page_readers, before, strict=True))
            framing.extend(r.framing - b[2] for r, b in zip(page_readers, before, strict=True))
            spec_v1.append(json_reader.bytes - json_before[0])
            _settle(wake, 0.2)
        poll_cpu = []
        for _ in range(3):
            started = time.thread_time()
            poll_html = clients[0].get("/list").data
            poll_cpu.append(time.thread_time() - started)
        whole_body = _whole_body_bytes(poll_html, rb"</section>")
        for reader in (*page_readers, json_reader):
            reader.close()
        bytes_per_change = statistics.median(per_session)
        baseline = statistics.median(spec_v1)
        cpu_ms = statistics.median(cpu) * 1000
        poll_ms = min(poll_cpu) * 1000
        result = {
            "case": f"page-{objects}",
            "objects": objects,
            "sessions": sessions,
            "changes": changes,
            "page_size": PAGE_SIZE,
            "bytes_per_change": bytes_per_change,
            "baseline_spec_v1_bytes": baseline,
            "baseline": baseline,
            "ratio": round(bytes_per_change / baseline, 3),
            "framing_bytes": statistics.median(framing),
            "max_bytes_per_change": max(per_session),
            "whole_body_bytes": whole_body,
            "poll_bytes": len(poll_html),
            "poll_gzip_bytes": len(gzip.compress(poll_html)),
            "ratio_poll": round(bytes_per_change / len(poll_html), 5),
            "cpu_ms_per_change": round(cpu_ms, 2),
            "cpu_ms_per_change_per_session": round(cpu_ms / sessions, 3),
            "poll_cpu_ms": round(poll_ms, 2),
            "ratio_poll_cpu": round(cpu_ms / (poll_ms * sessions), 4),
            "rss_per_session_kb": rss_per_session,
            "page_get_ms": round(statistics.median(opened.get_seconds) * 1000, 1) if opened.get_seconds else None,
            "rows_in_first_paint": rows_in_first_paint,
            "load_average": list(os.getloadavg()),
        }
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
        app.extensions["krm"].shutdown(2.0)
