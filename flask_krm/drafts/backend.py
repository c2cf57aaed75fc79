"""The draft backend seam: what every place that keeps drafts between requests offers.

A backend keeps, per browser session, JSON records of what the person did (edit records, save
flow states, staged creates and deletes, recovery copies, the pages shown), each under a field name
the caller chooses, versioned for compare-and-set. It also gives short per-editor locks with fencing
tokens, and carries change messages between the subscriptions of a deployment (one per worker).

Every backend keeps the whole contract, and the library uses all of it whichever backend it has:
:class:`~flask_krm.drafts.memory_backend.MemoryBackend`, the default, within the process;
:class:`~flask_krm.drafts.redis_backend.RedisBackend` in Redis, for every worker and across
restarts. What differs between them is a property of the backend
(:attr:`DraftBackend.outlives_process`), never a question of which one it is. A backend that cannot
be reached raises :class:`BackendUnavailable`, and nothing else, from any call that says so.
"""

from __future__ import annotations

import hashlib
import json
import typing as t
from collections.abc import Collection, Iterator, Mapping

Record: t.TypeAlias = t.Any
"""A JSON value (``dict``, ``list``, ``str``, numbers, ``bool``, ``None``)."""

Message: t.TypeAlias = dict[str, t.Any]
"""A change message between workers (a JSON object)."""

Versioned: t.TypeAlias = tuple[Record | None, int]
"""A record (``None``: removed, or kept nowhere) and its version: how many times it was written."""

PAGE_KIND: t.Final = "page"
"""The kind of the fields (``page:<page id>``) that hold what a page showed: many per session, each
cheap to make again, so a backend keeps them apart from the person's records and at most
:data:`MAX_PAGE_RECORDS` of them per session, the least recently used dropped first."""

MAX_PAGE_RECORDS: t.Final = 64
"""Page records one session keeps (as many as a worker keeps page states per session)."""


def is_page_field(name: str) -> bool:
    """Whether the field ``name`` is a page record (:data:`PAGE_KIND`)."""
    return name.startswith(PAGE_KIND + ":")


def session_tag(session_id: str) -> str:
    """The name of ``session_id`` in a backend: a digest, so no backend ever holds a session id."""
    return hashlib.sha256(session_id.encode()).hexdigest()[:32]


class BackendUnavailable(Exception):
    """The backend cannot be reached now (a connection refused or timed out, a server loading)."""


class DraftBackend(t.Protocol):
    """What keeps drafts between requests, processes and workers."""

    outlives_process: bool
    """Whether what is written here outlives this process: other processes (the other workers of a
    deployment, the next process after a restart) read it. The one property callers may act on:
    when it is false every request of a session reaches this process and its drafts end with it."""

    def read(
        self, session_id: str, fields: Collection[str] | None = None, *, lifetime: float | None = None
    ) -> dict[str, Record]:
        """The records of ``session_id`` named ``fields`` that are held, by field; without ``fields``
        every record but the page records. Reading a page record marks it used. With ``lifetime``,
        the session's records are kept that many more seconds from now (reading is using them).
        Raises :class:`BackendUnavailable`."""
        ...

    def read_versioned(self, session_id: str, prefix: str, *, lifetime: float | None = None) -> dict[str, Versioned]:
        """Every record of ``session_id`` whose field starts with ``prefix`` (page records aside), and
        every such field written before and removed since, with its version: what a
        :meth:`swap` expects. ``lifetime`` as for :meth:`read`. Raises :class:`BackendUnavailable`."""
        ...

    def swap(
        self,
        session_id: str,
        records: Mapping[str, Record | None],
        expect: Mapping[str, int],
        lifetime: float,
        *,
        message: Message | None = None,
    ) -> dict[str, int] | None:
        """Compare and set: when every field of ``expect`` is still at the version given (0: never
        written), set ``records`` as :meth:`write` does, all at once, and return the new version of
        each field written; otherwise write nothing and return ``None`` (the caller reads the newer
        records and does its change again on them). Of two swaps expecting the same version of a
        field, exactly one succeeds. ``message`` is published with a ``versions`` member added (the
        new versions). Raises :class:`BackendUnavailable`."""
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
        returned when a newer token for that lock was handed out since. Every field written gets
        its next version (:meth:`swap`); a page record is marked used, and past
        :data:`MAX_PAGE_RECORDS` the least recently used ones are dropped. Raises
        :class:`BackendUnavailable`.
        """
        ...

    def touch(self, session_id: str, lifetime: float) -> None:
        """Keep the records of ``session_id`` ``lifetime`` more seconds from now (they are in use).
        Raises :class:`BackendUnavailable`."""
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
        """An empty message once subscribed, then the messages workers publish, as they arrive
        (blocks; one subscription). Raises :class:`BackendUnavailable` when the subscription is lost."""
        ...

    def ping(self) -> str:
        """Whether the backend answers now: a short description of where drafts are kept. Raises
        :class:`BackendUnavailable`."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def dump(value: Record) -> str:
    """``value`` as compact JSON text (raises ``ValueError`` for what JSON cannot hold)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
