"""Drafts in this process: the default backend, with nothing to install.

:class:`MemoryBackend` keeps the whole :class:`~flask_krm.drafts.backend.DraftBackend` contract in
the process: records (as JSON text, so a reader never shares an object with a writer), their
versions, page records apart and capped, expiry with the session lifetime, locks with fencing
tokens, and messages delivered to every subscription of the process. What is written here ends
with the process (:attr:`MemoryBackend.outlives_process` is false), and it is never unreachable.

Messages wait in a gevent queue (:class:`~flask_krm.concurrency.Queue`) per subscription, so a
subscription's greenlet waits cooperatively whether or not the process is monkey-patched.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import typing as t
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field

from ..concurrency import Queue
from .backend import MAX_PAGE_RECORDS, Message, Record, Versioned, dump, is_page_field

SWEEP_EVERY: t.Final = 60.0
"""Seconds between sweeps of the sessions whose lifetime ran out (each read also checks its own)."""


@dataclass(eq=False, slots=True)
class _Session:
    expires: float
    records: dict[str, str] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    pages: dict[str, str] = field(default_factory=dict)
    """Page field -> JSON text, least recently used first."""


class MemoryBackend:
    """Drafts in this process only.

    :param clock: monotonic seconds (expiry of records and locks); tests substitute a fake clock.
    :param max_pages: page records kept per session.
    """

    outlives_process = False

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, max_pages: int = MAX_PAGE_RECORDS) -> None:
        self._clock = clock
        self.max_pages = max_pages
        self._sessions: dict[str, _Session] = {}
        self._locks: dict[tuple[str, str], tuple[int, float]] = {}
        self._latest: dict[tuple[str, str], int] = {}
        self._tokens = itertools.count(1)
        self._subscribers: list[Queue[str]] = []
        self._swept = clock()
        self._mutex = threading.Lock()

    # -- records ---------------------------------------------------------------------------------

    def _held(self, session_id: str, lifetime: float | None) -> _Session | None:
        """The live records of ``session_id`` (expired ones forgotten), renewed with ``lifetime``."""
        now = self._clock()
        if now - self._swept > SWEEP_EVERY:
            self._swept = now
            for gone in [s for s, held in self._sessions.items() if held.expires <= now]:
                del self._sessions[gone]
        held = self._sessions.get(session_id)
        if held is not None and held.expires <= now:
            del self._sessions[session_id]
            held = None
        if held is not None and lifetime is not None:
            held.expires = now + lifetime
        return held

    def read(
        self, session_id: str, fields: Collection[str] | None = None, *, lifetime: float | None = None
    ) -> dict[str, Record]:
        with self._mutex:
            held = self._held(session_id, lifetime)
            if held is None:
                return {}
            if fields is None:
                return {name: json.loads(text) for name, text in held.records.items()}
            found: dict[str, Record] = {}
            for name in fields:
                if is_page_field(name):
                    text = held.pages.pop(name, None)
                    if text is not None:
                        held.pages[name] = text  # used: the most recent now
                else:
                    text = held.records.get(name)
                if text is not None:
                    found[name] = json.loads(text)
            return found

    def read_versioned(self, session_id: str, prefix: str, *, lifetime: float | None = None) -> dict[str, Versioned]:
        with self._mutex:
            held = self._held(session_id, lifetime)
            if held is None:
                return {}
            found: dict[str, Versioned] = {}
            for name, version in held.versions.items():
                if name.startswith(prefix):
                    text = held.records.get(name)
                    found[name] = (json.loads(text) if text is not None else None, version)
            return found

    def write(
        self,
        session_id: str,
        records: Mapping[str, Record | None],
        lifetime: float,
        *,
        fence: tuple[str, int] | None = None,
        message: Message | None = None,
    ) -> bool:
        with self._mutex:
            if fence is not None and self._latest.get((session_id, fence[0])) != fence[1]:
                return False
            self._set(session_id, records, lifetime, message)
            return True

    def swap(
        self,
        session_id: str,
        records: Mapping[str, Record | None],
        expect: Mapping[str, int],
        lifetime: float,
        *,
        message: Message | None = None,
    ) -> dict[str, int] | None:
        with self._mutex:
            held = self._held(session_id, None)
            versions = held.versions if held is not None else {}
            if any(versions.get(name, 0) != version for name, version in expect.items()):
                return None
            return self._set(session_id, records, lifetime, message)

    def _set(
        self, session_id: str, records: Mapping[str, Record | None], lifetime: float, message: Message | None
    ) -> dict[str, int]:
        texts = {name: None if value is None else dump(value) for name, value in records.items()}
        held = self._held(session_id, lifetime)
        if held is None:
            held = self._sessions[session_id] = _Session(self._clock() + lifetime)
        written: dict[str, int] = {}
        for name, text in texts.items():
            if is_page_field(name):
                held.pages.pop(name, None)
                if text is not None:
                    held.pages[name] = text
                continue
            if text is None:
                held.records.pop(name, None)
            else:
                held.records[name] = text
            written[name] = held.versions[name] = held.versions.get(name, 0) + 1
        while len(held.pages) > self.max_pages:
            del held.pages[next(iter(held.pages))]
        if message is not None:
            self._deliver({"versions": written, **message})
        return written

    def touch(self, session_id: str, lifetime: float) -> None:
        with self._mutex:
            self._held(session_id, lifetime)

    def drop(self, session_id: str) -> None:
        with self._mutex:
            self._sessions.pop(session_id, None)
            for key in [k for k in self._locks if k[0] == session_id]:
                del self._locks[key]

    # -- locks -----------------------------------------------------------------------------------

    def lock(self, session_id: str, name: str, ttl: float) -> int | None:
        now = self._clock()
        with self._mutex:
            held = self._locks.get((session_id, name))
            if held is not None and held[1] > now:
                return None
            token = next(self._tokens)
            self._locks[(session_id, name)] = (token, now + ttl)
            self._latest[(session_id, name)] = token
            return token

    def unlock(self, session_id: str, name: str, token: int) -> None:
        with self._mutex:
            held = self._locks.get((session_id, name))
            if held is not None and held[0] == token:
                del self._locks[(session_id, name)]

    # -- messages --------------------------------------------------------------------------------

    def publish(self, message: Message) -> None:
        with self._mutex:
            self._deliver(message)

    def _deliver(self, message: Message) -> None:
        text = dump(message)
        for queue in self._subscribers:
            queue.put(text)

    def messages(self) -> Iterator[Message]:
        queue: Queue[str] = Queue()
        with self._mutex:
            self._subscribers.append(queue)
        try:
            yield {}
            while True:
                yield t.cast(Message, json.loads(queue.get()))
        finally:
            with self._mutex:
                self._subscribers.remove(queue)

    # -- the rest of the contract ----------------------------------------------------------------

    def ping(self) -> str:
        return "in this process"

    def close(self) -> None:
        return None
