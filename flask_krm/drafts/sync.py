"""Keeping a session's draft stores in step with a shared draft backend.

Each store a session makes on a worker is attached (:meth:`DraftSync.attach`): what the backend
holds for it (edit records, recovery copies) is replayed into it, and from then on every change
of what the person did is written back (one round trip that also tells the other workers) and
every change another worker reports is replayed into it. The person's stores on every worker thus
converge on the same drafts, whichever worker an edit, a resolution or a Save reached.

Records are written only when they change (a server event that leaves the person's edits as they
were writes nothing). When the backend cannot be reached the records wait here, in order, and are
written when it is back (:meth:`DraftSync.flush`); meanwhile :attr:`DraftSync.unavailable` is set.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
import typing as t
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

from ..store import EditRecord, LiveResourceStore
from .backend import BackendUnavailable, DraftBackend, Message, Record, session_tag

logger = logging.getLogger("flask_krm.drafts")

EDIT: t.Final = "edit"
RECOVERY: t.Final = "recovery"


def field_name(kind: str, *parts: str) -> str:
    """The record field ``kind:part:part`` (parts never hold a colon of their own meaning)."""
    return ":".join((kind, *parts))


@dataclass(eq=False)
class _Attached:
    session_id: str
    store_id: str
    store: weakref.ref[LiveResourceStore]
    lifetime: float
    written: dict[str, str] = field(default_factory=dict)
    """Field -> the JSON text last written or received (what the backend holds)."""
    replaying: bool = False
    """A record another worker wrote is being replayed: it is what the backend holds already."""


class DraftSync:
    """Binds stores to ``backend`` for one worker.

    :param worker: this worker's id in change messages (a random one by default), so a worker
        ignores its own messages.
    """

    def __init__(self, backend: DraftBackend, worker: str | None = None, *, retry: float = 0.5) -> None:
        self.backend = backend
        self.worker = worker or secrets.token_hex(8)
        self.retry = retry
        self._attached: dict[tuple[str, str], _Attached] = {}
        self._pending: dict[str, tuple[dict[str, Record | None], float]] = {}
        self._mutex = threading.RLock()
        self.unavailable = False
        self.on_session_ended: Callable[[str], None] | None = None
        """Called with a session's tag when another worker ended it (this worker forgets it too)."""

    # -- stores ----------------------------------------------------------------------------------

    def attach(self, session_id: str, store_id: str, store: LiveResourceStore, lifetime: float) -> None:
        """Replay what the backend holds for ``store`` and keep it in step from now on.

        Raises :class:`BackendUnavailable` when the backend cannot be read (nothing is attached).
        """
        records = self.backend.read(session_id)
        attached = _Attached(session_id, store_id, weakref.ref(store), lifetime)
        prefix = field_name(EDIT, store_id, "")
        for name, value in records.items():
            if name.startswith(prefix):
                try:
                    record = EditRecord.from_json(value)
                except ValueError:
                    logger.warning("ignoring a malformed edit record in the draft backend")
                    continue
                attached.written[name] = _text(value)
                store.restore(record)
            elif name.startswith(field_name(RECOVERY, store_id, "")) and store.recovery is not None:
                try:
                    store.recovery.adopt(value)
                except ValueError:
                    logger.warning("ignoring a malformed recovery copy in the draft backend")
                    continue
                attached.written[name] = _text(value)
        with self._mutex:
            self._attached[(session_tag(session_id), store_id)] = attached
        store.subscribe(lambda uids: self._changed(attached, uids))

    def detach_session(self, session_id: str) -> None:
        """Stop keeping the stores of ``session_id`` in step and forget what waits to be written."""
        self._detach(session_tag(session_id))
        with self._mutex:
            self._pending.pop(session_id, None)

    def _detach(self, tag: str) -> None:
        with self._mutex:
            for key in [k for k in self._attached if k[0] == tag]:
                del self._attached[key]

    def end_session(self, session_id: str) -> None:
        """Forget ``session_id`` here, in the backend and on every other worker (sign-out).

        Raises :class:`BackendUnavailable` when the backend cannot be told (this worker forgot it).
        """
        self.detach_session(session_id)
        self.backend.drop(session_id)
        self.backend.publish({"worker": self.worker, "session": session_tag(session_id), "ended": True})

    def _changed(self, attached: _Attached, uids: frozenset[str]) -> None:
        store = attached.store()
        if store is None or attached.replaying:
            return
        records: dict[str, Record | None] = {}
        with self._mutex:
            for uid in sorted(uids):
                record = store.edit_record(uid)
                edit = field_name(EDIT, attached.store_id, uid)
                kept = record is not None and (record.edits or record.conflicts or record.sequence)
                value = record.to_json() if record is not None and kept else None
                self._note(attached, records, edit, value)
                if store.recovery is not None:
                    copy = store.recovery.export(uid) if record is None else None
                    self._note(attached, records, field_name(RECOVERY, attached.store_id, uid), copy)
        if records:
            self.write(attached.session_id, records, attached.lifetime)

    def _note(self, attached: _Attached, records: dict[str, Record | None], name: str, value: Record | None) -> None:
        text = _text(value)
        if attached.written.get(name, _text(None)) != text:
            attached.written[name] = text
            records[name] = value

    # -- writing ---------------------------------------------------------------------------------

    def write(self, session_id: str, records: dict[str, Record | None], lifetime: float) -> None:
        """Write ``records`` of ``session_id`` and tell the other workers; when the backend cannot
        be reached, keep them (after any kept before) for :meth:`flush`."""
        with self._mutex:
            waiting = self._pending.pop(session_id, None)
            if waiting is not None:
                records = {**waiting[0], **records}
            try:
                self.backend.write(session_id, records, lifetime, message=self._message(session_id, records))
                self._available()
            except BackendUnavailable as exc:
                self._pending[session_id] = (records, lifetime)
                if not self.unavailable:
                    logger.warning("drafts are temporarily unavailable (%s); keeping changes to write later", exc)
                self.unavailable = True

    def flush(self) -> bool:
        """Write what waits; whether nothing waits any more."""
        with self._mutex:
            if not self._pending:
                return True
            for session_id, (records, lifetime) in list(self._pending.items()):
                try:
                    self.backend.write(session_id, records, lifetime, message=self._message(session_id, records))
                except BackendUnavailable:
                    return False
                del self._pending[session_id]
            self._available()
            return True

    def _available(self) -> None:
        if self.unavailable:
            logger.info("drafts are available again")
        self.unavailable = False

    def _message(self, session_id: str, records: dict[str, Record | None]) -> Message:
        return {"worker": self.worker, "session": session_tag(session_id), "records": records}

    # -- receiving -------------------------------------------------------------------------------

    def receive(self, message: Message) -> None:
        """Replay another worker's change into this worker's stores of the same session."""
        tag, records = message.get("session"), message.get("records")
        if message.get("worker") == self.worker or not isinstance(tag, str):
            return
        if message.get("ended") is True:
            self._detach(tag)
            if self.on_session_ended is not None:
                self.on_session_ended(tag)
            return
        if not isinstance(records, dict):
            return
        for name, value in records.items():
            if not isinstance(name, str) or not name.startswith(EDIT + ":"):
                continue
            with self._mutex:
                attached = self._attached.get((tag, name.split(":", 2)[1]))
            if attached is not None:
                self._replay(attached, name, value)

    def catch_up(self, session_id: str, store_id: str) -> None:
        """Replay what the backend holds for the store ``store_id`` that this worker has not
        received yet: a request that changes a draft first takes the other workers' changes whose
        messages may still be on their way, so it never builds on an older draft (and its edit
        sequence counts on from theirs). Raises :class:`BackendUnavailable`.
        """
        with self._mutex:
            attached = self._attached.get((session_tag(session_id), store_id))
            if attached is None or session_id in self._pending:  # what waits here is newer
                return
            known = [name for name in attached.written if name.startswith(field_name(EDIT, store_id, ""))]
        records = self.backend.read(session_id)
        for name in {*known, *(n for n in records if n.startswith(field_name(EDIT, store_id, "")))}:
            value = records.get(name)
            if attached.written.get(name, _text(None)) != _text(value):
                self._replay(attached, name, value)

    def _replay(self, attached: _Attached, name: str, value: Record | None) -> None:
        store = attached.store()
        if store is None:
            return
        uid = name.split(":", 2)[2]
        try:
            record = EditRecord.from_json(value) if value is not None else EditRecord(uid, ())
        except ValueError:
            return
        if record.sequence < store.edit_sequence(uid):
            return  # overtaken by a newer record: what the backend holds is not this one
        with self._mutex:
            attached.written[name] = _text(value)
        attached.replaying = True
        try:
            store.restore(record)
        finally:
            attached.replaying = False

    def run(self, sleep: Callable[[float], object] = time.sleep) -> None:
        """Receive the other workers' changes until killed (this worker's one subscription); while the
        backend is unreachable, retry every ``retry`` seconds and write what waits when it is back."""
        while True:
            try:
                if self.flush():
                    for message in self.backend.messages():
                        self._available()
                        self.receive(message)
            except BackendUnavailable as exc:
                if not self.unavailable:
                    logger.warning("drafts are temporarily unavailable (%s)", exc)
                self.unavailable = True
            sleep(self.retry)


def _text(value: Record | None) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
