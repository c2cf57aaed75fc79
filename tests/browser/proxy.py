"""A TCP proxy between the browser and the app server that a test can cut and restore.

It relays bytes between real sockets, one thread per direction of each connection. ``cut()``
closes every open connection (the page's stream, edits in flight, idle keep-alive connections)
and refuses new ones by closing them as soon as they are accepted, as a dropped network does;
``restore()`` lets new connections through again. Given several upstreams, it sends each new
connection to the next one in turn (a round-robin load balancer). Nothing in the browser or the
app is mocked.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
import typing as t
from types import TracebackType
from urllib.parse import urlsplit

CHUNK: t.Final = 65536


class TcpProxy:
    """Listens on a free 127.0.0.1 port and relays every connection to ``upstream_url``'s host and
    port (or, given ``more``, to each of the upstreams in turn)."""

    def __init__(self, upstream_url: str, *more: str) -> None:
        upstreams = []
        for url in (upstream_url, *more):
            parts = urlsplit(url)
            assert parts.hostname is not None and parts.port is not None, url
            upstreams.append((parts.hostname, parts.port))
        self._upstreams = itertools.cycle(upstreams)
        self.connections: dict[tuple[str, int], int] = dict.fromkeys(upstreams, 0)
        """Connections relayed to each upstream."""
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._cut = False
        self._closed = False
        self.refused = 0
        """Connections closed on arrival while cut."""
        self._acceptor = threading.Thread(target=self._accept, name="tcp-proxy-accept", daemon=True)

    def __enter__(self) -> TcpProxy:
        self._acceptor.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._closed = True
        self._listener.close()
        self._drop_all()
        self._acceptor.join(timeout=5)

    def cut(self) -> None:
        """Drop every open connection and refuse new ones until :meth:`restore`."""
        with self._lock:
            self._cut = True
        self._drop_all()

    def restore(self) -> None:
        with self._lock:
            self._cut = False

    def retarget(self, upstream_url: str) -> None:
        """Relay new connections to ``upstream_url`` from now on (open ones stay where they are),
        as a Service does when its endpoints change."""
        parts = urlsplit(upstream_url)
        assert parts.hostname is not None and parts.port is not None, upstream_url
        upstream = (parts.hostname, parts.port)
        with self._lock:
            self._upstreams = itertools.cycle([upstream])
            self.connections.setdefault(upstream, 0)

    def _drop_all(self) -> None:
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            _close(sock)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                refused = self._cut
                if refused:
                    self.refused += 1
            if refused:
                _close(client)
                continue
            with self._lock:
                upstream = next(self._upstreams)
                self.connections[upstream] += 1
            try:
                server = socket.create_connection(upstream, timeout=5)
            except OSError:
                _close(client)
                continue
            server.settimeout(None)
            with self._lock:
                self._open.update((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), name="tcp-proxy-pump", daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(CHUNK):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.difference_update((source, sink))
            _close(source)
            _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
