"""The draft backend seam: what every place that keeps drafts between requests offers.

A backend keeps, per browser session, JSON records of what the person did (edit records, save
flow states, staged creates and deletes, recovery copies), each under a field name the caller
chooses. It also gives short per-editor locks with fencing tokens, and carries change messages
between the workers of one deployment (one subscription per worker).

:class:`MemoryBackend`, the default, keeps nothing outside the process: the process's own draft
registry is the only copy, so drafts last as long as the process, and locks and messages stay
within it. :class:`~flask_krm.drafts.redis_backend.RedisBackend` keeps everything in Redis.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
import typing as t
from collections.abc import Callable, Iterator, Mapping

Record: t.TypeAlias = t.Any
"""A JSON value (``dict``, ``list``, ``str``, numbers, ``bool``, ``None``)."""

Message: t.TypeAlias = dict[str, t.Any]
"""A change message between workers (a JSON object)."""


def session_tag(session_id: str) -> str:
    """The name of ``session_id`` in a backend: a digest, so no backend ever holds a session id."""
    return hashlib.sha256(session_id.encode()).hexdigest()[:32]


class BackendUnavailable(Exception):
    """The backend cannot be reached now (a connection refused or timed out, a server loading)."""


class DraftBackend(t.Protocol):
    """What keeps drafts between requests, processes and workers."""

    shared: bool
    """Whether other processes see what this one writes (and drafts survive a restart)."""

    def read(self, session_id: str) -> dict[str, Record]:
        """Every record of ``session_id``, by field. Raises :class:`BackendUnavailable`."""
        ...

    def write(
        self,
        session_id: str,
        records: Mapping[str, Record | None],
        lifetime: float,
        *,
        fence: tuple[str, int] | None = None,
        message: Message | None = None,
    ) -> bool:
        """Set each record (``None`` removes it), keep the session's records ``lifetime`` more
        seconds from now, and publish ``message`` to the other workers, all at once.

        With ``fence`` (a lock name and the token it gave), nothing is written and ``False`` is
        returned when a newer token for that lock was handed out since. Raises
        :class:`BackendUnavailable`.
        """
        ...

    def drop(self, session_id: str) -> None:
        """Forget every record of ``session_id``. Raises :class:`BackendUnavailable`."""
        ...

    def lock(self, session_id: str, name: str, ttl: float) -> int | None:
        """Take the lock ``name`` of ``session_id`` for at most ``ttl`` seconds.

        Returns its fencing token (larger than every token given for ``name`` before), or ``None``
        when someone else holds it. Raises :class:`BackendUnavailable`.
        """
        ...

    def unlock(self, session_id: str, name: str, token: int) -> None:
        """Release the lock ``name`` if ``token`` still holds it."""
        ...

    def publish(self, message: Message) -> None:
        """Send ``message`` to every other worker's :meth:`messages`. Raises :class:`BackendUnavailable`."""
        ...

    def messages(self) -> Iterator[Message]:
        """The messages other workers publish, as they arrive (blocks; one subscription)."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class MemoryBackend:
    """Drafts in this process only: the default, with nothing to install.

    Records are not kept here (the process's draft registry is the copy); locks are in-process
    with fencing tokens; messages go nowhere (every page of a session is served by this process).
    """

    shared = False

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._locks: dict[tuple[str, str], tuple[int, float]] = {}
        self._latest: dict[tuple[str, str], int] = {}
        self._tokens = itertools.count(1)
        self._mutex = threading.Lock()

    def read(self, session_id: str) -> dict[str, Record]:
        return {}

    def write(
        self,
        session_id: str,
        records: Mapping[str, Record | None],
        lifetime: float,
        *,
        fence: tuple[str, int] | None = None,
        message: Message | None = None,
    ) -> bool:
        if fence is None:
            return True
        with self._mutex:
            return self._latest.get((session_id, fence[0])) == fence[1]

    def drop(self, session_id: str) -> None:
        with self._mutex:
            for key in [k for k in self._locks if k[0] == session_id]:
                del self._locks[key]
            for key in [k for k in self._latest if k[0] == session_id]:
                del self._latest[key]

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

    def publish(self, message: Message) -> None:
        return None

    def messages(self) -> Iterator[Message]:
        return iter(())

    def close(self) -> None:
        return None


def backend_from_url(url: str | None) -> DraftBackend:
    """The backend ``KRM_DRAFTS_URL`` names: ``None`` or ``memory://`` keep drafts in the process;
    ``redis://``, ``rediss://`` and ``unix://`` URLs keep them in Redis (needs the ``redis`` package:
    ``pip install flask-krm[redis]``). Raises ``ValueError`` for any other URL."""
    if url is None or url == "memory://":
        return MemoryBackend()
    scheme, separator, _ = url.partition("://")
    if not separator or scheme.lower() not in ("redis", "rediss", "unix"):
        raise ValueError(f"KRM_DRAFTS_URL must be a redis://, rediss:// or unix:// URL (or memory://), got {scheme!r}")
    from .redis_backend import RedisBackend

    return RedisBackend.from_url(url)
