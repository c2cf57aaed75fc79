"""A streaming SSE response handed to the WSGI server untouched, released when its client goes.

:class:`SSEResponse` is a Flask response whose body iterator reaches the server as it is: no
werkzeug wrapper per chunk (``direct_passthrough``, and the server iterates the view's own
generator), so each coalesced chunk is one write by the server. Headers, ``after_request``
handlers and cookies work as for any response. :func:`sse_response` makes one that is also an
instance of the application's ``response_class``, which Flask would otherwise convert it to,
losing all of the below.

Under gevent's ``pywsgi``, when its handler iterates this very body (no middleware in between)
over a plain TCP socket (not TLS),
the first chunk goes through the server, which sends the headers with it, and each later chunk is
written to the client's socket by the response itself, framed exactly as the server frames it
(HTTP/1.1 chunks, or raw for HTTP/1.0): one ``send`` per chunk, where the server's ``sendall``
adds a ``getsockopt`` system call and timeout bookkeeping to every write. A full socket buffer is
waited on by the event loop; a failed write ends the response as a failed server write does.

Under gevent it also watches the client's socket for end of file: a client that closes its stream
is noticed at once, rather than at the next write (up to a heartbeat interval later, or never for a
stream with nothing to say), and ``on_close`` runs in a greenlet of its own. The socket is
found in the environ of gevent's ``pywsgi`` (``wsgi.input``) or gunicorn (``gunicorn.socket``); with
another server, or without gevent, the stream is released when a write fails or the server closes
the response, as before.
"""

from __future__ import annotations

import _socket
import os
import sys
import types
import typing as t
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from flask import Response, current_app

if t.TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

__all__ = ["SSEResponse", "client_socket_fd", "sse_response"]

_READ = 1  # the event loop's read event
_PEEK = _socket.MSG_PEEK | _socket.MSG_DONTWAIT


class SSEResponse(Response):
    """A 200 stream of ``chunks`` with ``headers``.

    ``on_close`` runs when the server closes the response (also when the body was never iterated)
    and as soon as the client is seen to have closed the connection, whichever comes first; it may
    run more than once, so it must be idempotent.
    """

    def __init__(self, chunks: Iterator[bytes], headers: list[tuple[str, str]], on_close: Callable[[], None]) -> None:
        super().__init__(chunks, status=200, headers=headers, direct_passthrough=True)
        self._chunks = chunks
        self._closing = on_close
        self.call_on_close(on_close)  # the paths werkzeug closes itself (HEAD)

    def get_app_iter(self, environ: WSGIEnvironment) -> t.Iterable[bytes]:
        """The body for the server: the chunks themselves, with a ``close`` that stops watching."""
        if environ.get("REQUEST_METHOD") == "HEAD":
            return super().get_app_iter(environ)
        # The server keeps the environ for the stream's whole life; werkzeug's request object and
        # the environ refer to each other, a cycle only the cyclic collector could reclaim (and not
        # at all once frozen, see flask_krm.upstream.collector). The request is over: break it.
        environ.pop("werkzeug.request", None)
        return _Body(self._chunks, self._closing, _ClientWatch.start(environ, self._closing))


def sse_response(chunks: Iterator[bytes], headers: list[tuple[str, str]], on_close: Callable[[], None]) -> SSEResponse:
    """An :class:`SSEResponse` that is also an instance of the application's ``response_class``.

    Flask turns a view's response of another class into its ``response_class`` in place (werkzeug's
    ``force_type`` reassigns ``__class__``), which would drop the stream's own body handling: a
    host, or a test plugin, with a response class of its own would get a stream that is never
    released when its client goes.
    """
    base = current_app.response_class
    if issubclass(SSEResponse, base):
        return SSEResponse(chunks, headers, on_close)
    cls = _RESPONSE_CLASSES.get(base)
    if cls is None:
        cls = _RESPONSE_CLASSES[base] = t.cast("type[SSEResponse]", types.new_class("SSEResponse", (SSEResponse, base)))
    return cls(chunks, headers, on_close)


_RESPONSE_CLASSES: weakref.WeakKeyDictionary[type[Response], type[SSEResponse]] = weakref.WeakKeyDictionary()
"""An :class:`SSEResponse` subclass per application response class, for as long as that class lives."""


class _Body:
    """What the server iterates (the view's generator itself: nothing runs per chunk) and closes."""

    __slots__ = ("_chunks", "_on_close", "_watch")

    def __init__(self, chunks: Iterator[bytes], on_close: Callable[[], None], watch: _ClientWatch | None) -> None:
        self._chunks = chunks
        self._on_close = on_close
        self._watch = watch

    def __iter__(self) -> Iterator[bytes]:
        handler = _iterating_pywsgi_handler(sys._getframe(1), self)
        if handler is None:
            return self._chunks
        return _written_directly(self._chunks, handler)

    def close(self) -> None:
        if self._watch is not None:
            self._watch.stop()
            self._watch = None
        self._on_close()  # first: it may ask whether the chunks ended by themselves
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()


def client_socket_fd(environ: Mapping[str, Any]) -> int | None:
    """The file descriptor of the request's client socket, when the server tells it."""
    sock = environ.get("gunicorn.socket")
    if sock is None:
        rfile = getattr(environ.get("wsgi.input"), "rfile", None)  # gevent.pywsgi.Input
        sock = rfile
    fileno = getattr(sock, "fileno", None)
    if fileno is None:
        return None
    try:
        fd = fileno()
    except (OSError, ValueError):
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None


class _ClientWatch:
    """An event-loop watcher of the client socket's readability. A stream's client sends nothing
    after its request, so readability means end of file (or a reset); anything else read from it
    (a pipelined request) ends the watch, leaving the stream to end at a failed write."""

    __slots__ = ("_fd", "_watcher", "_on_closed")

    def __init__(self, fd: int, watcher: Any, on_closed: Callable[[], None]) -> None:
        self._fd = fd
        self._watcher = watcher
        self._on_closed = on_closed

    @classmethod
    def start(cls, environ: Mapping[str, Any], on_closed: Callable[[], None]) -> _ClientWatch | None:
        import gevent.monkey

        if not gevent.monkey.is_module_patched("socket"):
            return None
        fd = client_socket_fd(environ)
        if fd is None:
            return None
        import gevent

        watcher = gevent.get_hub().loop.io(fd, _READ)
        watch = cls(fd, watcher, on_closed)
        watcher.start(watch._readable)
        return watch

    def stop(self) -> None:
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop()
            watcher.close()

    def _readable(self) -> None:
        if self._watcher is None:
            return
        probe = _socket.socket(fileno=self._fd)
        try:
            closed = probe.recv(1, _PEEK) == b""
        except BlockingIOError:
            return  # not readable after all
        except OSError:
            closed = True  # reset by the peer
        finally:
            probe.detach()
        self.stop()
        if closed:
            import gevent

            gevent.spawn(self._on_closed)


# -- writing to the socket under gevent's pywsgi ---------------------------------------------


def _iterating_pywsgi_handler(caller: types.FrameType | None, body: _Body) -> Any:
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


def _written_directly(chunks: Iterator[bytes], handler: Any) -> Iterator[bytes]:
    """Hand the first chunk to pywsgi (which sends the headers with it), then write each later one
    to the socket ourselves: one ``writev`` per chunk, framed as pywsgi frames it, where pywsgi's
    ``sendall`` adds a ``getsockopt`` call, a copy and timeout bookkeeping to every write. A socket that
    cannot take a whole chunk at once is waited on by the event loop, as pywsgi does."""
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
            handler.response_length += _send(fd, parts, timeout)


def _send(fd: int, parts: tuple[bytes, ...], timeout: float | None = None) -> int:
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
    from gevent.socket import wait_write

    view = memoryview(b"".join(parts))[sent:]
    while view:
        wait_write(fd, timeout)
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            pass
    return size
