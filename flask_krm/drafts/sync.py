"""Keeping a session's draft stores in step with a shared draft backend.

Each store a session makes on a worker is attached (:meth:`DraftSync.attach`): what the backend
holds for it (edit records, recovery copies) is replayed into it, and from then on every change
of what the person did is written back (one round trip that also tells the other workers) and
every change another worker reports is replayed into it. The person's stores on every worker thus
converge on the same drafts, whichever worker an edit, a resolution or a Save reached.

Records are written only when they change (a server event that leaves the person's edits as they
were writes nothing). When the backend cannot be reached the records wait here, in order, and are
written when it is back (:meth:`DraftSync.flush`); meanwhile :attr:`DraftSync.unavailable` is set
and every callback of :meth:`DraftSync.on_availability` is told.

An object's edit record is written by compare-and-set (:meth:`DraftBackend.swap
<flask_krm.drafts.backend.DraftBackend.swap>`) on the version this worker last wrote or received.
A person's edit runs through :meth:`DraftSync.edit`: when another worker wrote a newer record of the
object meanwhile (two edits of one object in flight on two workers at once), the newer record is
restored and the edit made again on it, until it lands; so each edit the person was answered for
is in the record, and the edit sequence counts them in the order they landed. A record another
change (a server event) would write over a newer one is dropped for the newer one instead.
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
EDIT_ATTEMPTS: t.Final = 16
"""How many times one edit is made again on a newer record before it is refused as contended."""
EDIT_RETRY_PAUSES: t.Final = (0.1, 0.3)
"""Seconds before an edit's write that got no answer is checked and tried again, each time; after
the last, the edit's records wait on the worker until the backend is back."""
T = t.TypeVar("T")


class EditContended(Exception):
    """An edit found a newer record of its object every time it was made again (the draft holds the
    newest record, without this edit)."""


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
    versions: dict[str, int] = field(default_factory=dict)
    """Edit record field -> the version of it last written or received here."""
    replaying: bool = False
    """A record another worker wrote is being replayed: it is what the backend holds already."""
    collecting: dict[str, Record | None] | None = None
    """While an edit runs (:meth:`DraftSync.edit`): the records it changed, written when it ends."""
    tag: str = field(init=False)
    """The session's tag (:func:`~flask_krm.drafts.backend.session_tag`)."""

    def __post_init__(self) -> None:
        self.tag = session_tag(self.session_id)


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
        self._touched: dict[str, float] = {}
        self._mutex = threading.RLock()
        self.unavailable = False
        self._availability: list[Callable[[bool], None]] = []
        self.on_session_ended: Callable[[str], None] | None = None
        """Called with a session's tag when another worker ended it (this worker forgets it too)."""

    # -- stores ----------------------------------------------------------------------------------

    def attach(self, session_id: str, store_id: str, store: LiveResourceStore, lifetime: float) -> None:
        """Replay what the backend holds for ``store`` and keep it in step from now on.

        Raises :class:`BackendUnavailable` when the backend cannot be read (nothing is attached).
        """
        held = self.backend.read_versioned(session_id, "", lifetime=lifetime)
        attached = _Attached(session_id, store_id, weakref.ref(store), lifetime)
        prefix, copies = field_name(EDIT, store_id, ""), field_name(RECOVERY, store_id, "")
        for name, (value, version) in held.items():
            if name.startswith(prefix):
                attached.versions[name] = version
                if value is None:
                    continue
                try:
                    record = EditRecord.from_json(value)
                except ValueError:
                    logger.warning("ignoring a malformed edit record in the draft backend")
                    continue
                attached.written[name] = _text(value)
                store.restore(record)
            elif name.startswith(copies) and store.recovery is not None and value is not None:
                try:
                    store.recovery.adopt(value)
                except ValueError:
                    logger.warning("ignoring a malformed recovery copy in the draft backend")
                    continue
                attached.written[name] = _text(value)
        with self._mutex:
            self._attached[(attached.tag, store_id)] = attached
        store.subscribe(lambda uids: self._changed(attached, uids))

    def detach_session(self, session_id: str) -> None:
        """Stop keeping the stores of ``session_id`` in step and forget what waits to be written."""
        self._detach(session_tag(session_id))
        with self._mutex:
            self._pending.pop(session_id, None)
            self._touched.pop(session_id, None)

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

    def touch(self, session_id: str, lifetime: float) -> None:
        """Keep the session's records ``lifetime`` more seconds (a page of it is open); at most once
        per tenth of ``lifetime``. Nothing while the backend cannot be reached."""
        now = time.monotonic()
        if now - self._touched.get(session_id, -lifetime) < lifetime / 10:
            return  # touched lately (read without the mutex: most calls end here)
        with self._mutex:
            if now - self._touched.get(session_id, -lifetime) < lifetime / 10:
                return
            self._touched[session_id] = now
        try:
            self.backend.touch(session_id, lifetime)
        except BackendUnavailable:
            self._touched.pop(session_id, None)

    def _changed(self, attached: _Attached, uids: frozenset[str]) -> None:
        store = attached.store()
        if store is None or attached.replaying:
            return
        if all(self._untouched(attached, store, uid) for uid in uids):
            return  # the server changed objects this session never touched: nothing to write
        records: dict[str, Record | None] = {}
        with self._mutex:
            if self._attached.get((attached.tag, attached.store_id)) is not attached:
                return  # detached: its session ended (a store still shown writes nothing more)
            for uid in sorted(uids):
                record = store.edit_record(uid)
                edit = field_name(EDIT, attached.store_id, uid)
                kept = record is not None and (record.edits or record.conflicts or record.sequence)
                value = record.to_json() if record is not None and kept else None
                self._note(attached, records, edit, value)
                if store.recovery is not None:
                    copy = store.recovery.export(uid) if record is None else None
                    self._note(attached, records, field_name(RECOVERY, attached.store_id, uid), copy)
            if not records:
                return
            if attached.collecting is not None:
                attached.collecting.update(records)
                return
            if self._swap(attached, records) is False:
                self._refresh(attached, [name for name in records if name.startswith(EDIT + ":")])

    @staticmethod
    def _untouched(attached: _Attached, store: LiveResourceStore, uid: str) -> bool:
        """Whether nothing of ``uid`` was written for the store, and it holds nothing to write."""
        written = attached.written
        return (
            field_name(EDIT, attached.store_id, uid) not in written
            and field_name(RECOVERY, attached.store_id, uid) not in written
            and store.holds_nothing_of(uid)
        )

    def _note(self, attached: _Attached, records: dict[str, Record | None], name: str, value: Record | None) -> None:
        if value is None and name not in attached.written:
            return  # nothing written, nothing to write: a clean object costs no encoding
        text = _text(value)
        if attached.written.get(name, _text(None)) != text:
            attached.written[name] = text
            records[name] = value

    # -- edits -----------------------------------------------------------------------------------

    def edit(self, session_id: str, store_id: str, apply: Callable[[], T]) -> T:
        """Make the person's edit ``apply()`` on the store ``store_id`` and write what it changed by
        compare-and-set; when another worker wrote a newer record of the object meanwhile, restore
        that record and make the edit again on it (see the module doc). ``apply`` may be called more
        than once and raises as it would alone (a newer record may refuse it: its key exists now).

        Raises :class:`EditContended` after :data:`EDIT_ATTEMPTS` attempts.
        """
        with self._mutex:
            attached = self._attached.get((session_tag(session_id), store_id))
            if attached is None or attached.store() is None:
                return apply()
            for _ in range(EDIT_ATTEMPTS):
                attached.collecting = {}
                try:
                    result = apply()
                finally:
                    collected, attached.collecting = attached.collecting, None
                if not collected or self._swap_retrying(attached, collected) is not False:
                    return result
                self._refresh(attached, [name for name in collected if name.startswith(EDIT + ":")])
            raise EditContended()

    def _swap_retrying(self, attached: _Attached, records: dict[str, Record | None]) -> bool | None:
        """:meth:`_swap` for an edit: a write that failed for want of an answer (a timeout: it may
        have landed) is tried again shortly, after checking whether it landed, before it is kept
        for :meth:`flush` (``None``)."""
        for pause in EDIT_RETRY_PAUSES:
            try:
                return self._swap(attached, records, keep=False)
            except BackendUnavailable:
                time.sleep(pause)
                if self._landed(attached, records):
                    return True
        return self._swap(attached, records)

    def _landed(self, attached: _Attached, records: dict[str, Record | None]) -> bool:
        """Whether the backend holds exactly ``records``' edit records (a write whose answer was lost)."""
        try:
            held = self.backend.read_versioned(attached.session_id, field_name(EDIT, attached.store_id, ""))
        except BackendUnavailable:
            return False
        names = [name for name in records if name.startswith(EDIT + ":")]
        if any(_text(held.get(name, (None, 0))[0]) != _text(records[name]) for name in names):
            return False
        attached.versions.update({name: held[name][1] for name in names if name in held})
        return True

    def _swap(self, attached: _Attached, records: dict[str, Record | None], *, keep: bool = True) -> bool | None:
        """Write ``records`` expecting the versions of their edit records known here: whether they
        were written (``None``: the backend cannot be reached, they wait for :meth:`flush`; without
        ``keep``, :class:`BackendUnavailable` is raised instead)."""
        session_id = attached.session_id
        if session_id in self._pending:  # what waits is older: written first, in order
            self.write(session_id, records, attached.lifetime)
            return None
        expect = {name: attached.versions.get(name, 0) for name in records if name.startswith(EDIT + ":")}
        try:
            versions = self.backend.swap(
                session_id, records, expect, attached.lifetime, message=self._message(session_id, records)
            )
        except BackendUnavailable as exc:
            if not keep:
                raise
            self._keep(session_id, records, attached.lifetime, exc)
            return None
        self._available()
        if versions is None:
            return False
        attached.versions.update(versions)
        return True

    def _refresh(self, attached: _Attached, names: list[str]) -> None:
        """Take the newer records of ``names`` from the backend: each replaces the draft here."""
        prefix = field_name(EDIT, attached.store_id, "")
        try:
            held = self.backend.read_versioned(attached.session_id, prefix)
        except BackendUnavailable:
            return
        for name in names:
            value, version = held.get(name, (None, 0))
            self._replay(attached, name, value, version)

    # -- writing ---------------------------------------------------------------------------------

    def write(self, session_id: str, records: dict[str, Record | None], lifetime: float) -> None:
        """Write ``records`` of ``session_id`` and tell the other workers; when the backend cannot
        be reached, keep them (after any kept before) for :meth:`flush`."""
        with self._mutex:
            waiting = self._pending.pop(session_id, None)
            if waiting is not None:
                records = {**waiting[0], **records}
            try:
                versions = self.backend.swap(
                    session_id, records, {}, lifetime, message=self._message(session_id, records)
                )
            except BackendUnavailable as exc:
                self._keep(session_id, records, lifetime, exc)
                return
            self._learn(session_id, versions or {})
            self._available()

    def _keep(self, session_id: str, records: dict[str, Record | None], lifetime: float, exc: Exception) -> None:
        waiting = self._pending.pop(session_id, None)
        self._pending[session_id] = ({**waiting[0], **records} if waiting else records, lifetime)
        if not self.unavailable:
            logger.warning("drafts are temporarily unavailable (%s); keeping changes to write later", exc)
        self._set_unavailable(True)

    def _learn(self, session_id: str, versions: dict[str, int]) -> None:
        tag = session_tag(session_id)
        for name, version in versions.items():
            attached = self._attached.get((tag, name.split(":", 2)[1])) if name.count(":") >= 2 else None
            if attached is not None and name.startswith(EDIT + ":"):
                attached.versions[name] = version

    def flush(self) -> bool:
        """Write what waits; whether nothing waits any more."""
        with self._mutex:
            if not self._pending:
                return True
            for session_id, (records, lifetime) in list(self._pending.items()):
                try:
                    versions = self.backend.swap(
                        session_id, records, {}, lifetime, message=self._message(session_id, records)
                    )
                except BackendUnavailable:
                    return False
                del self._pending[session_id]
                self._learn(session_id, versions or {})
            self._available()
            return True

    def on_availability(self, callback: Callable[[bool], None]) -> Callable[[], None]:
        """Call ``callback(available)`` whenever the backend becomes unreachable or reachable again;
        returns the function that stops it."""
        with self._mutex:
            self._availability.append(callback)

        def stop() -> None:
            with self._mutex:
                if callback in self._availability:
                    self._availability.remove(callback)

        return stop

    def _set_unavailable(self, unavailable: bool) -> None:
        if self.unavailable == unavailable:
            return
        self.unavailable = unavailable
        for callback in list(self._availability):
            callback(not unavailable)

    def _available(self) -> None:
        if self.unavailable:
            logger.info("drafts are available again")
        self._set_unavailable(False)

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
        versions = message.get("versions")
        if not isinstance(records, dict) or not isinstance(versions, dict):
            return
        for name, value in records.items():
            version = versions.get(name)
            if not isinstance(name, str) or not name.startswith(EDIT + ":") or type(version) is not int:
                continue
            with self._mutex:
                attached = self._attached.get((tag, name.split(":", 2)[1]))
                if attached is not None:
                    self._replay(attached, name, value, version)

    def catch_up(self, session_id: str, store_id: str) -> None:
        """Replay the records of the store ``store_id`` newer than what this worker holds: a request
        that changes a draft first takes the other workers' changes whose messages may still be on
        their way, so it builds on the newest draft (an edit's compare-and-set would make it again
        on it otherwise). Reading renews the session's records. Raises :class:`BackendUnavailable`.
        """
        with self._mutex:
            attached = self._attached.get((session_tag(session_id), store_id))
            if attached is None or session_id in self._pending:  # what waits here is newer
                return
        held = self.backend.read_versioned(session_id, field_name(EDIT, store_id, ""), lifetime=attached.lifetime)
        with self._mutex:
            for name, (value, version) in held.items():
                self._replay(attached, name, value, version)

    def resync(self) -> None:
        """Replay into every attached store the records newer than what this worker holds (after its
        subscription was lost: the other workers' changes meanwhile were published to nobody here).
        Stops at the first store whose records cannot be read (the next resubscription tries again)."""
        with self._mutex:
            attached = list(self._attached.values())
        for each in attached:
            try:
                self.catch_up(each.session_id, each.store_id)
            except BackendUnavailable:
                return

    def _replay(self, attached: _Attached, name: str, value: Record | None, version: int) -> None:
        """Make the record ``value`` at ``version`` the draft of its object, unless this worker
        already holds that version or a newer one."""
        store = attached.store()
        if store is None or version <= attached.versions.get(name, 0):
            return
        uid = name.split(":", 2)[2]
        try:
            record = EditRecord.from_json(value) if value is not None else EditRecord(uid, ())
        except ValueError:
            return
        attached.versions[name] = version
        attached.written[name] = _text(value)
        attached.replaying = True
        try:
            store.restore(_not_older(record, store.edit_sequence(uid)))
        finally:
            attached.replaying = False

    def run(self, sleep: Callable[[float], object] = time.sleep) -> None:
        """Receive the other workers' changes until killed (this worker's one subscription); while the
        backend is unreachable, retry every ``retry`` seconds and write what waits when it is back."""
        subscribed = False
        while True:
            try:
                if self.flush():
                    for message in self.backend.messages():
                        self._available()
                        if not message and subscribed:  # subscribed again: what was published meanwhile
                            self.resync()  # never reached this worker
                        subscribed = subscribed or not message
                        self.receive(message)
            except BackendUnavailable as exc:
                if not self.unavailable:
                    logger.warning("drafts are temporarily unavailable (%s)", exc)
                self._set_unavailable(True)
            sleep(self.retry)


def _not_older(record: EditRecord, sequence: int) -> EditRecord:
    """``record`` with at least ``sequence`` as its edit sequence: a newer version of a record is
    what the object's draft is now, whatever sequence this worker counted to."""
    if record.sequence >= sequence:
        return record
    return EditRecord(record.uid, record.edits, record.conflicts, sequence)


def _text(value: Record | None) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
