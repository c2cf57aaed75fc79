"""The gevent ``pywsgi`` server driver: the one module that knows gevent's WSGI server from inside.

Every stream works under any WSGI server: its body is an iterator of chunks that the server
writes, as PEP 3333 has it. Under gevent's ``pywsgi`` this driver adds two fast paths:

- **Direct writes.** When pywsgi's own handler iterates a stream's body (its
  ``WSGIHandler.process_result`` frame, over this very body: no middleware in between, no handler
  subclass that writes its own way) over a plain TCP socket (not TLS), the first chunk goes
  through the server, which sends the headers with it, and each later chunk is written to the
  client's socket by :func:`drive`, framed exactly as pywsgi frames it (HTTP/1.1 chunks, or raw for
  HTTP/1.0): one ``writev`` per chunk, where pywsgi's ``sendall`` adds a ``getsockopt`` system
  call, a copy and timeout bookkeeping to every write. A full socket buffer is waited on by the
  event loop; a failed write ends the response as a failed server write does.
- **The collector policy** (:mod:`flask_krm.upstream.collector`): the first stream the driver
  writes turns on the process's policy (long-lived objects frozen out of the cyclic collector's
  scans, a higher threshold for its youngest generation), which the hub then applies after each
  snapshot that made many long-lived objects.

It engages only where it applies: under gunicorn (its own handler), behind a WSGI middleware,
over TLS or with a pywsgi handler subclass that writes its own way, it stays out, the server
writes every chunk and the garbage collector is left as the host set it. A host turns it off with
``KRM_SERVER_DRIVER = False`` (read when each stream's response is made).

Its criterion, kept next to it: ``python -m bench fanout`` (1,000 subscribers of the JSON stream
against a bare pywsgi loop in the same run; ``FLASK_KRM_BENCH_SERVER_DRIVER=0`` serves with the
driver off). With it the endpoint matched the bare loop's sustained rate (ratio 0.97 median of
three, 55 against 48 ms of CPU per 1,000 deliveries) and its longest collector pause was 7 ms
against the bare loop's 49 ms (``docs/internals.md``, "The fan-out path"). The test that pins
equivalence, ``tests/test_pywsgi_driver.py``, reads the same stream with and without the
driver, through a middleware and over TLS: the bytes on the wire are identical.
"""

from __future__ import annotations

import os
import sys
import types
import typing as t
from collections.abc import Iterator

from .concurrency import wait_writable
from .upstream.collector import PROCESS_POLICY

__all__ = ["drive"]


def drive(chunks: Iterator[bytes], caller: types.FrameType | None, body: object) -> Iterator[bytes] | None:
    """The chunks of ``body`` as the driver writes them, when ``caller`` (the frame that asked
    for ``iter(body)``) is gevent pywsgi's own handler iterating exactly ``body`` over plain TCP;
    ``None`` (the server writes every chunk) otherwise. Engaging turns on the collector policy."""
    handler = _iterating_handler(caller, body)
    if handler is None:
        return None
    PROCESS_POLICY.enable()
    return _written_directly(chunks, handler)


def _iterating_handler(caller: types.FrameType | None, body: object) -> t.Any:
    """The ``gevent.pywsgi.WSGIHandler`` iterating ``body`` in ``caller``, when it is exactly that:
    pywsgi's own ``process_result`` and write path, over this body itself (no middleware between
    them, which could transform the chunks). ``None`` otherwise."""
    pywsgi, gevent_socket = sys.modules.get("gevent.pywsgi"), sys.modules.get("gevent.socket")
    if pywsgi is None or gevent_socket is None or caller is None:
        return None
    handler_class = pywsgi.WSGIHandler
    if caller.f_code is not handler_class.process_result.__code__:
        return None
    handler = caller.f_locals.get("self")
    if not isinstance(handler, handler_class) or getattr(handler, "result", None) is not body:
        return None
    if type(handler.socket) is not gevent_socket.socket:
        return None  # TLS (or any other wrapper) encodes what is written: only it may write
    cls = type(handler)
    for name in ("process_result", "write", "_write", "_sendall"):
        if getattr(cls, name) is not getattr(handler_class, name):
            return None  # a subclass that writes its own way
    return handler


def _written_directly(chunks: Iterator[bytes], handler: t.Any) -> Iterator[bytes]:
    """Hand the first chunk to pywsgi (which sends the headers with it), then write each later one
    to the socket here: one ``writev`` per chunk, framed as pywsgi frames it. A socket that cannot
    take a whole chunk at once is waited on by the event loop, as pywsgi does."""
    for chunk in chunks:
        if chunk:
            yield chunk
            del chunk
            yield b""  # pywsgi lets go of the first chunk (often a whole snapshot)
            break
    else:
        return
    if not handler.headers_sent:  # pragma: no cover - pywsgi sends them with the first chunk
        yield from chunks
        return
    fd: int = handler.socket.fileno()
    timeout: float | None = handler.socket.timeout
    framed: bool = handler.response_use_chunked
    for chunk in chunks:
        if chunk:
            # an HTTP/1.1 chunk's size line and end are written with it, not copied around it
            parts = (b"%x\r\n" % len(chunk), chunk, b"\r\n") if framed else (chunk,)
            handler.response_length += send(fd, parts, timeout)


def send(fd: int, parts: tuple[bytes, ...], timeout: float | None = None) -> int:
    """Write ``parts`` in order, all of them, to the non-blocking socket ``fd`` (one system call
    when its buffer takes them), waiting on the event loop (never blocking the process) while the
    buffer is full, each time for at most ``timeout`` seconds (the socket's own timeout; ``None``:
    for as long as it takes), then raising ``TimeoutError``. Returns the bytes written."""
    size = sum(map(len, parts))
    try:
        sent = os.writev(fd, parts)
    except BlockingIOError:
        sent = 0
    if sent == size:
        return size
    view = memoryview(b"".join(parts))[sent:]
    while view:
        wait_writable(fd, timeout)
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            pass
    return size
