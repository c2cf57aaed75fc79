"""Helpers of the operations tests: the example under gunicorn, signed-in HTTP sessions, many raw
stream connections read with one selector, and a readiness prober."""

from __future__ import annotations

import http.cookiejar
import os
import re
import selectors
import socket
import subprocess
import sys
import threading
import time
import typing as t
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from flask_krm import Scope

from .conftest import ROOT

CSRF_FIELD: t.Final = re.compile(r'name="krm_csrf_token" value="([^"]+)"')
CHANNEL_URL: t.Final = re.compile(r'hx-sse:connect="([^"]+/channel)"')
SECRET_KEY: t.Final = "operations test secret"
JSON_STREAM: t.Final = (
    "/krm/resource-stream/v1?"
    + Scope(target="cluster", version="v1", resource="configmaps", namespace="demo").canonical_query()
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Gunicorn:
    """The example served by gunicorn with its config file (gevent workers), on a port of its own."""

    def __init__(
        self,
        kubeconfig: str,
        log_dir: Path,
        *,
        workers: int,
        drafts_url: str | None = None,
        env: dict[str, str] | None = None,
        keep_alive: int | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        log_dir.mkdir(parents=True, exist_ok=True)
        self.error_log = log_dir / "error.log"
        self.access_log = log_dir / "access.log"
        environment = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        environment.update(
            FLASK_SECRET_KEY=SECRET_KEY,
            FLASK_KRM_TARGETS=f'{{"cluster": {{"kubeconfig": "{kubeconfig}", "context": "admin"}}}}',
            PYTHONUNBUFFERED="1",
        )
        if drafts_url is not None:
            environment["FLASK_KRM_DRAFTS_URL"] = drafts_url
        environment.update(env or {})
        command = [
            sys.executable,
            "-m",
            "gunicorn",
            "--config",
            "example_app/gunicorn_conf.py",
            "--workers",
            str(workers),
            "--bind",
            f"127.0.0.1:{self.port}",
            "--no-control-socket",
            "--error-logfile",
            str(self.error_log),
            "--access-logfile",
            str(self.access_log),
            "--access-logformat",
            "%(p)s %(m)s %(U)s %(s)s",
        ]
        if keep_alive is not None:
            command += ["--keep-alive", str(keep_alive)]
        self.process = subprocess.Popen([*command, "example_app:create_app()"], cwd=ROOT, env=environment)
        self.workers = workers
        self.wait_ready()

    def worker_pids(self) -> set[int]:
        """The live worker processes (children of the master)."""
        found = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == self.process.pid and fields[0] != "Z":
                found.add(int(entry.name))
        return found

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Until every worker runs and the readiness probe passes (twice: the first one asked
        starts a worker's ticker)."""
        deadline = time.monotonic() + timeout
        passed = 0
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"gunicorn exited: {self.error_log.read_text()[-3000:]}")
            if len(self.worker_pids()) >= self.workers:
                status, _ = get(f"{self.url}/readyz")
                passed = passed + 1 if status == 200 else 0
                if passed >= 2 * self.workers:
                    return
            time.sleep(0.2)
        raise AssertionError(f"gunicorn did not become ready: {self.error_log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def get(url: str, timeout: float = 2.0) -> tuple[int | str, str]:
    """``(status, body)``; ``status`` is the error's class name when no answer came."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError as error:
        return type(error).__name__, ""


@dataclass
class Session:
    """A signed-in browser session over plain HTTP (the example's own sign-in form)."""

    base: str
    jar: http.cookiejar.CookieJar = field(default_factory=http.cookiejar.CookieJar)

    def __post_init__(self) -> None:
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def sign_in(self, user: str) -> Session:
        form = self.opener.open(f"{self.base}/sign-in", timeout=30).read().decode()
        token = CSRF_FIELD.search(form)
        assert token, form[:500]
        data = urllib.parse.urlencode({"username": user, "password": user, "krm_csrf_token": token.group(1)})
        self.opener.open(f"{self.base}/sign-in", data=data.encode(), timeout=30).read()
        return self

    def channel_path(self, page: str) -> str:
        """Open ``page`` as a browser does: the path of its channel."""
        html = self.opener.open(f"{self.base}{page}", timeout=30).read().decode()
        found = CHANNEL_URL.search(html)
        assert found, html[:500]
        return found.group(1)

    @property
    def cookie(self) -> str:
        return "; ".join(f"{c.name}={c.value}" for c in self.jar)


@dataclass(eq=False)
class Connection:
    kind: str
    sock: socket.socket
    received: bytearray = field(default_factory=bytearray)
    last_data_at: float | None = None
    """When its last bytes arrived (``time.monotonic()``)."""
    ended_at: float | None = None
    """When the server closed it."""


class RawStreams:
    """Many open stream connections, read together with one selector."""

    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()
        self.connections: list[Connection] = []

    def open(self, port: int, path: str, cookie: str, kind: str) -> None:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        request = (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\nAccept: text/event-stream\r\n\r\n"
        )
        sock.sendall(request.encode())
        sock.setblocking(False)
        connection = Connection(kind, sock)
        self.connections.append(connection)
        self.selector.register(sock, selectors.EVENT_READ, connection)

    def of(self, kind: str) -> list[Connection]:
        return [c for c in self.connections if c.kind == kind]

    def pump(self, until: t.Callable[[], bool], timeout: float) -> bool:
        """Read whatever arrives until ``until()`` holds (``True``) or ``timeout`` passes (``False``)."""
        deadline = time.monotonic() + timeout
        while not until():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            for key, _ in self.selector.select(timeout=min(left, 0.2)):
                connection: Connection = key.data
                try:
                    chunk = connection.sock.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if chunk:
                    connection.received += chunk
                    connection.last_data_at = time.monotonic()
                else:
                    connection.ended_at = time.monotonic()
                    self.selector.unregister(connection.sock)
        return True

    def close(self) -> None:
        for connection in self.connections:
            connection.sock.close()
        self.selector.close()


class ReadinessProber:
    """Asks ``url`` every :attr:`every` seconds on a thread of its own and keeps ``(time, status)``."""

    every: t.Final = 0.05

    def __init__(self, url: str) -> None:
        self.url = url
        self.answers: list[tuple[float, int | str]] = []
        """``(when it came, status)`` of every probe."""
        self.sent: list[float] = []
        """When each probe was sent (same order)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            sent = time.monotonic()
            status, _ = get(self.url, timeout=1.0)
            self.answers.append((time.monotonic(), status))
            self.sent.append(sent)
            self._stop.wait(self.every)

    def first(self, status: int | str, since: float) -> tuple[float, float] | None:
        """Seconds from ``since`` to the first answer ``status`` after it came, and to when that
        probe was sent."""
        for (at, answered), sent in zip(list(self.answers), list(self.sent)):
            if at >= since and answered == status:
                return at - since, sent - since
        return None

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
