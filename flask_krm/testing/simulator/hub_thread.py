"""A native thread running its own gevent hub, callable from any thread.

The simulator serves from such a thread so the official client in the calling thread can talk to
it whether or not that process is monkey-patched: the thread and its locks are the originals
saved by ``gevent.monkey``, and every call into the server's world is marshalled onto its hub.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import gevent
import gevent.monkey

from ... import concurrency

T = TypeVar("T")

_start_new_thread = gevent.monkey.get_original("_thread", "start_new_thread")
_allocate_lock = gevent.monkey.get_original("_thread", "allocate_lock")
_get_ident = gevent.monkey.get_original("_thread", "get_ident")


class HubThread:
    """Runs ``setup`` then waits for ``stop()``, then runs ``teardown``, all on one hub in one thread."""

    def __init__(self, setup: Callable[[], None], teardown: Callable[[], None], timeout: float = 10.0) -> None:
        self._setup = setup
        self._teardown = teardown
        self._timeout = timeout
        self._ident: int | None = None
        self._loop: Any = None
        self._stopping: concurrency.Event | None = None
        self._error: BaseException | None = None
        self._exited = _allocate_lock()

    def start(self) -> None:
        """Start the thread and return once ``setup`` has finished (re-raising its error)."""
        ready = _allocate_lock()
        ready.acquire()
        self._exited.acquire()

        def run() -> None:
            self._ident = _get_ident()
            hub = gevent.get_hub()
            self._loop = hub.loop
            self._stopping = concurrency.Event()
            try:
                self._setup()
            except BaseException as error:  # reported to the starting thread
                self._error = error
            ready.release()
            try:
                if self._error is None:
                    self._stopping.wait()
                    self._teardown()
            finally:
                hub.destroy(destroy_loop=True)
                self._exited.release()

        _start_new_thread(run, ())
        ready.acquire()
        if self._error is not None:
            self._exited.acquire()
            raise self._error

    def call(self, function: Callable[[], T]) -> T:
        """Run ``function`` in a greenlet on this hub and return its result (directly if already there)."""
        if _get_ident() == self._ident:
            return function()
        done = _allocate_lock()
        done.acquire()
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["value"] = function()
            except BaseException as error:  # re-raised in the calling thread
                outcome["error"] = error
            finally:
                done.release()

        self._loop.run_callback_threadsafe(lambda: concurrency.spawn(run))
        if not done.acquire(timeout=self._timeout):
            raise TimeoutError(f"the simulator did not answer within {self._timeout} s")
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]  # type: ignore[no-any-return]

    def stop(self) -> None:
        """Run ``teardown`` on the hub and wait for the thread to end."""
        stopping = self._stopping
        if stopping is None:
            return
        self.call(stopping.set)
        self._exited.acquire(timeout=self._timeout)
        self._stopping = None
