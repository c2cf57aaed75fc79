"""The library's one door to gevent: greenlets, their groups, events, queues, timeouts, socket
waits and the event loop, typed.

gevent is flask-krm's concurrency model. Every library module that spawns a greenlet, sleeps or
waits on an event, a queue or a socket takes the primitive from here, never from gevent, so what
the library uses of gevent is this page: gevent's public API only, with the signatures the library
relies on (gevent ships no type information; under ``mypy`` the declarations below stand for it).
At run time each name *is* gevent's own object, so using it costs nothing more than gevent does.
None of these primitives needs a monkey-patched process; :func:`patched` says whether sockets
cooperate (the upstream hub refuses to start otherwise).

gevent is imported elsewhere only where a module is a server or knows one from inside (the
project check ``tests/project/test_gevent_imports.py`` keeps the list, each with its reason): the
server entry points (``serving.py``, gevent's ``WSGIServer``; ``cli.py``, the ``StreamServer`` of
``flask krm streams``) and the test Kubernetes API server (``testing/simulator/server.py``, its
pywsgi server and handler; ``tls.py``, gevent's TLS context; ``hub_thread.py``, a native thread
with its own hub and the unpatched thread functions). The pywsgi server driver
(:mod:`flask_krm.pywsgi_driver`) reads pywsgi's handler from ``sys.modules`` and waits on sockets
through :func:`wait_writable`. The simulator's other modules (its API, watches and demo) use this
module like the rest of the library: they are request handling and greenlets of the same kind,
and one vocabulary keeps them readable side by side; only what makes it a server stays gevent's.
"""

from __future__ import annotations

import typing as t
from collections.abc import Callable, Iterable

import gevent.monkey

__all__ = [
    "AsyncResult",
    "Empty",
    "Event",
    "EventLoop",
    "Greenlet",
    "GreenletExit",
    "Group",
    "IoWatcher",
    "Queue",
    "READ",
    "Timeout",
    "Waiter",
    "current_loop",
    "getcurrent",
    "joinall",
    "patched",
    "sleep",
    "spawn",
    "spawn_later",
    "wait_readable",
    "wait_writable",
]

T = t.TypeVar("T")
P = t.ParamSpec("P")

READ: t.Final = 1
"""The event loop's read event, for :meth:`EventLoop.io`."""


class IoWatcher(t.Protocol):
    """An event-loop watcher of one file descriptor (:meth:`EventLoop.io`)."""

    def start(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` from the event loop each time the descriptor is ready."""

    def stop(self) -> None:
        """Stop calling back."""

    def close(self) -> None:
        """Release the watcher (after :meth:`stop`)."""


class EventLoop(t.Protocol):
    """The running thread's event loop (:func:`current_loop`)."""

    def now(self) -> float:
        """The loop's clock: seconds, updated once per turn of the loop."""

    def run_callback(self, callback: Callable[P, object], *args: P.args, **kwargs: P.kwargs) -> object:
        """Call ``callback(*args)`` from the loop at its next turn (in the hub, not a greenlet)."""

    def io(self, fd: int, events: int) -> IoWatcher:
        """A watcher of ``fd`` for ``events`` (:data:`READ`), not started."""


def patched() -> bool:
    """Whether gevent has monkey-patched this process's sockets (so that blocking libraries, ssl,
    urllib3 and the Kubernetes client, cooperate with other greenlets)."""
    return bool(gevent.monkey.is_module_patched("socket"))


def current_loop() -> EventLoop:
    """The event loop of this thread's gevent hub."""
    return t.cast(EventLoop, gevent.get_hub().loop)


if t.TYPE_CHECKING:

    class GreenletExit(BaseException):
        """Raised in a greenlet that is killed (by default)."""

    class Timeout(BaseException):
        """``with Timeout(seconds, False):`` leaves the block silently after ``seconds``; with no
        second argument it raises itself (catch ``Timeout``). ``None`` seconds: never."""

        def __init__(self, seconds: float | None = None, exception: bool | BaseException | None = None) -> None: ...
        def __enter__(self) -> Timeout: ...
        def __exit__(self, *exc_info: object) -> bool | None: ...
        def start(self) -> None: ...
        def cancel(self) -> None: ...

    class Greenlet:
        """A greenlet running ``run(*args, **kwargs)`` once started."""

        dead: bool
        value: t.Any
        """What ``run`` returned, once it did."""
        exception: BaseException | None
        """What ``run`` raised, once it did."""

        def __init__(self, run: Callable[..., object], *args: t.Any, **kwargs: t.Any) -> None: ...
        def start(self) -> None: ...
        def start_later(self, seconds: float) -> None: ...
        def ready(self) -> bool: ...
        def successful(self) -> bool: ...
        def join(self, timeout: float | None = None) -> None: ...
        def kill(
            self, exception: type[BaseException] = GreenletExit, block: bool = True, timeout: float | None = None
        ) -> None: ...

    class Group:
        """Greenlets that are joined and killed together."""

        def spawn(self, run: Callable[P, object], *args: P.args, **kwargs: P.kwargs) -> Greenlet: ...
        def add(self, greenlet: Greenlet) -> None: ...
        def discard(self, greenlet: Greenlet) -> None: ...
        def join(self, timeout: float | None = None, raise_error: bool = False) -> bool: ...
        def kill(
            self, exception: type[BaseException] = GreenletExit, block: bool = True, timeout: float | None = None
        ) -> None: ...
        def __len__(self) -> int: ...
        def __iter__(self) -> t.Iterator[Greenlet]: ...
        def __contains__(self, greenlet: object) -> bool: ...

    class Event:
        """A flag greenlets wait on."""

        def set(self) -> None: ...
        def clear(self) -> None: ...
        def is_set(self) -> bool: ...
        def wait(self, timeout: float | None = None) -> bool: ...

    class AsyncResult(t.Generic[T]):
        """A value (or an exception) set once, waited for."""

        def set(self, value: T) -> None: ...
        def set_exception(self, exception: BaseException) -> None: ...
        def ready(self) -> bool: ...
        def get(self, block: bool = True, timeout: float | None = None) -> T: ...

    class Empty(Exception):
        """:meth:`Queue.get` found nothing (without blocking, or within its timeout)."""

    class Queue(t.Generic[T]):
        """A FIFO queue of greenlets' messages, bounded by ``maxsize`` (``None``: unbounded)."""

        def __init__(self, maxsize: int | None = None) -> None: ...
        def put(self, item: T, block: bool = True, timeout: float | None = None) -> None: ...
        def put_nowait(self, item: T) -> None: ...
        def get(self, block: bool = True, timeout: float | None = None) -> T: ...
        def get_nowait(self) -> T: ...
        def empty(self) -> bool: ...
        def qsize(self) -> int: ...

    class Waiter(t.Generic[T]):
        """One greenlet's wait for one value, switched to it from another greenlet or the loop."""

        def get(self) -> T: ...
        def switch(self, value: T) -> None: ...

    def sleep(seconds: float = 0) -> None:
        """Let the other greenlets run for ``seconds`` (``0``: one turn)."""

    def spawn(run: Callable[P, object], *args: P.args, **kwargs: P.kwargs) -> Greenlet:
        """A started greenlet running ``run(*args, **kwargs)``."""

    def spawn_later(seconds: float, run: Callable[P, object], *args: P.args, **kwargs: P.kwargs) -> Greenlet:
        """A greenlet running ``run(*args, **kwargs)`` in ``seconds``."""

    def joinall(greenlets: Iterable[Greenlet], timeout: float | None = None) -> list[Greenlet]:
        """Wait up to ``timeout`` seconds for ``greenlets`` to end; those that did."""

    def getcurrent() -> object:
        """The running greenlet (compare it with ``is``)."""

    def wait_readable(fd: int, timeout: float | None = None) -> None:
        """Wait (on the event loop) until ``fd`` is readable; ``TimeoutError`` after ``timeout`` seconds."""

    def wait_writable(fd: int, timeout: float | None = None) -> None:
        """Wait (on the event loop) until ``fd`` is writable; ``TimeoutError`` after ``timeout`` seconds."""

else:
    from gevent import Greenlet, GreenletExit, Timeout, getcurrent, joinall, sleep, spawn, spawn_later
    from gevent.event import AsyncResult, Event
    from gevent.hub import Waiter
    from gevent.pool import Group
    from gevent.queue import Empty, Queue
    from gevent.socket import wait_read as wait_readable
    from gevent.socket import wait_write as wait_writable
