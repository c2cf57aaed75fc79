"""A streaming SSE response handed to the WSGI server untouched, released when its client goes.

:class:`SSEResponse` is a Flask response whose body iterator reaches the server as it is: no
werkzeug wrapper per chunk (``direct_passthrough``, and the server iterates the view's own
generator), so each coalesced chunk is one write by the server. Headers, ``after_request``
handlers and cookies work as for any response. :func:`sse_response` makes one that is also an
instance of the application's ``response_class``, which Flask would otherwise convert it to,
losing all of the below.

Under gevent's ``pywsgi`` the body is offered to the server driver (:mod:`flask_krm.pywsgi_driver`,
``KRM_SERVER_DRIVER``), which writes its chunks itself when pywsgi's own handler iterates it over
plain TCP; under any other server, behind a middleware or with the driver off, the server writes
every chunk.

Under gevent it also watches the client's socket for end of file: a client that closes its stream
is noticed at once, rather than at the next write (up to a heartbeat interval later, or never for a
stream with nothing to say), and ``on_close`` runs in a greenlet of its own. The socket is
found in the environ of gevent's ``pywsgi`` (``wsgi.input``) or gunicorn (``gunicorn.socket``); with
another server, or without gevent, the stream is released when a write fails or the server closes
the response, as before.
"""

from __future__ import annotations

import _socket
import sys
import types
import typing as t
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from flask import Response, current_app

from . import concurrency, config
from .pywsgi_driver import drive

if t.TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

__all__ = ["SSEResponse", "client_socket_fd", "sse_response"]

_PEEK = _socket.MSG_PEEK | _socket.MSG_DONTWAIT


class SSEResponse(Response):
    """A 200 stream of ``chunks`` with ``headers``.

    ``on_close`` runs when the server closes the response (also when the body was never iterated)
    and as soon as the client is seen to have closed the connection, whichever comes first; it may
    run more than once, so it must be idempotent.
    """

    def __init__(
        self,
        chunks: Iterator[bytes],
        headers: list[tuple[str, str]],
        on_close: Callable[[], None],
        *,
        driven: bool = True,
    ) -> None:
        super().__init__(chunks, status=200, headers=headers, direct_passthrough=True)
        self._chunks = chunks
        self._closing = on_close
        self._driven = driven
        """Whether the server driver may write the chunks (``KRM_SERVER_DRIVER``)."""
        self.call_on_close(on_close)  # the paths werkzeug closes itself (HEAD)

    def get_app_iter(self, environ: WSGIEnvironment) -> t.Iterable[bytes]:
        """The body for the server: the chunks themselves, with a ``close`` that stops watching."""
        if environ.get("REQUEST_METHOD") == "HEAD":
            return super().get_app_iter(environ)
        # The server keeps the environ for the stream's whole life; werkzeug's request object and
        # the environ refer to each other, a cycle only the cyclic collector could reclaim (and not
        # at all once frozen, see flask_krm.upstream.collector). The request is over: break it.
        environ.pop("werkzeug.request", None)
        return _Body(self._chunks, self._closing, _ClientWatch.start(environ, self._closing), self._driven)


def sse_response(chunks: Iterator[bytes], headers: list[tuple[str, str]], on_close: Callable[[], None]) -> SSEResponse:
    """An :class:`SSEResponse` that is also an instance of the application's ``response_class``.

    Flask turns a view's response of another class into its ``response_class`` in place (werkzeug's
    ``force_type`` reassigns ``__class__``), which would drop the stream's own body handling: a
    host, or a test plugin, with a response class of its own would get a stream that is never
    released when its client goes.
    """
    driven = bool(config.get(current_app, "SERVER_DRIVER"))
    base = current_app.response_class
    if issubclass(SSEResponse, base):
        return SSEResponse(chunks, headers, on_close, driven=driven)
    cls = _RESPONSE_CLASSES.get(base)
    if cls is None:
        cls = _RESPONSE_CLASSES[base] = t.cast("type[SSEResponse]", types.new_class("SSEResponse", (SSEResponse, base)))
    return cls(chunks, headers, on_close, driven=driven)


_RESPONSE_CLASSES: weakref.WeakKeyDictionary[type[Response], type[SSEResponse]] = weakref.WeakKeyDictionary()
"""An :class:`SSEResponse` subclass per application response class, for as long as that class lives."""


class _Body:
    """What the server iterates (the view's generator itself: nothing runs per chunk) and closes."""

    __slots__ = ("_chunks", "_on_close", "_watch", "_driven")

    def __init__(
        self, chunks: Iterator[bytes], on_close: Callable[[], None], watch: _ClientWatch | None, driven: bool
    ) -> None:
        self._chunks = chunks
        self._on_close = on_close
        self._watch = watch
        self._driven = driven

    def __iter__(self) -> Iterator[bytes]:
        if self._driven:
            written = drive(self._chunks, sys._getframe(1), self)  # the frame asking for iter(body)
            if written is not None:
                return written
        return self._chunks

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

    def __init__(self, fd: int, watcher: concurrency.IoWatcher, on_closed: Callable[[], None]) -> None:
        self._fd = fd
        self._watcher: concurrency.IoWatcher | None = watcher
        self._on_closed = on_closed

    @classmethod
    def start(cls, environ: Mapping[str, Any], on_closed: Callable[[], None]) -> _ClientWatch | None:
        if not concurrency.patched():
            return None
        fd = client_socket_fd(environ)
        if fd is None:
            return None
        watcher = concurrency.current_loop().io(fd, concurrency.READ)
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
            concurrency.spawn(self._on_closed)
