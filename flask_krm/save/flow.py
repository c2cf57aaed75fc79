"""The per-editor save state machine.

Pure: it decides, the caller performs the I/O. One :class:`SaveFlow` belongs to one editor (one
uid in one session store). A Save goes like this::

    step = flow.begin(store, live=stream_is_live)       # never yields: capture happens here
    if isinstance(step, Write):
        ...send the conditional PATCH for step.intent...
        step = flow.written(store, verdict, status=..., written_version=...)
    if isinstance(step, Read):
        ...GET the object, project it...
        step = flow.read(store, step, ReadResult(...))
    outcome = step.outcome                               # a Done

Rules it enforces:

* saves are serialized: while a write or a guarded read is in flight, ``begin`` answers ``BUSY``;
* writes happen only while the stream is live, and only without unresolved field conflicts;
* the intent (uid, resourceVersion, patch) is captured in ``begin``, before any I/O, so later
  typing stays in the draft and out of the write; given the newest object the shared watch knows
  (:class:`KnownVersions`), the intent carries that object's resourceVersion when the person's
  view of it is identical (:func:`~flask_krm.store.intents.newest_equivalent_base`), so changes
  the editor cannot see (status, bookkeeping) do not bounce the Save;
* after a lost response, a refused guard, or an accepted write whose echo has not arrived, the next
  Save is a guarded read and never a write: the old patch is never replayed;
* a guard is captured before its read starts, and an object with another uid is never handed to
  the guard (a replacement is reported, not applied).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, Protocol, TypeAlias

from ..events import Redaction
from ..store import SaveIntent, newest_equivalent_base
from ..versions import compare
from .outcomes import Outcome, OutcomeKind, Path, WriteVerdict, field_causes, status_detail, status_reason


class Guard(Protocol):
    """A reconciliation guard captured before a read (``flask_krm.store.Reconciliation``).

    After a refused call, ``refusal`` names why (``"newer-event"``, ``"snapshot"``, ...).
    """

    refusal: Any

    def __call__(self, obj: Mapping[str, Any], redacted_paths: Sequence[str] | None = None) -> bool: ...


class EditorStore(Protocol):
    """The part of ``flask_krm.store.LiveResourceStore`` the save flow uses."""

    def uids(self) -> list[str]: ...

    def server(self, uid: str) -> Mapping[str, Any] | None: ...

    def conflicts(self, uid: str) -> Sequence[Any]: ...

    def dirty(self, uid: str) -> Sequence[Path]: ...

    def capture_save(self, uid: str) -> SaveIntent | None: ...

    def capture_reconciliation(self, uid: str) -> Guard: ...

    def redactions(self, uid: str) -> Sequence[Redaction]: ...


class Phase(str, Enum):
    """Where one editor's save flow stands."""

    IDLE = "idle"
    WRITING = "writing"
    CONFIRMING = "confirming"  # accepted; waiting for the watch echo
    NEEDS_READ = "needs-read"  # the next Save is a guarded read
    READING = "reading"
    UNAVAILABLE = "unavailable"  # deleted or replaced: this editor never writes again


class ReadReason(str, Enum):
    """Why a guarded read is made; it decides how an accepted read is reported."""

    AFTER_CONFLICT = "after-conflict"  # a 409 (or a replaced uid) came back
    CONFIRM = "confirm"  # an accepted write's echo did not arrive in time
    RECOVER = "recover"  # a lost response, a failed read or a refused guard


@dataclass(frozen=True, slots=True)
class Write:
    """Send ``intent`` as a conditional merge PATCH, then call :meth:`SaveFlow.written`."""

    intent: SaveIntent


@dataclass(frozen=True, slots=True)
class Read:
    """GET the object (projected, uncached), then call :meth:`SaveFlow.read`.

    The guard was captured before this step was handed out; it is ``None`` when the object had
    already left the store (the read then only names a replacement).
    """

    reason: ReadReason
    guard: Guard | None


@dataclass(frozen=True, slots=True)
class Done:
    """The Save is over for now; tell the person ``outcome``."""

    outcome: Outcome


Step: TypeAlias = Write | Read | Done


@dataclass(frozen=True, slots=True)
class ReadResult:
    """What a guarded read returned.

    :param status: ``"object"`` (``obj`` and its ``redacted_paths``), ``"not-found"``, ``"forbidden"``,
        ``"unauthorized"`` or ``"failed"`` (timeout, 5xx, connection lost).
    :param redacted_paths: the projection's withheld RFC 6901 paths; ``None`` for a native read.
    """

    status: Literal["object", "not-found", "forbidden", "unauthorized", "failed"]
    obj: Mapping[str, Any] | None = None
    redacted_paths: tuple[str, ...] | None = None


VersionAtLeast: TypeAlias = Callable[[str, str], bool]


@dataclass(frozen=True, slots=True)
class KnownVersions:
    """Where newer versions of the edited objects may be known, and how the editor sees them.

    :param projection: the editor's projection.
    :param newest: the newest raw object known for a uid (the shared watch's cache), or ``None``.
        Only its resourceVersion can end up in an intent, and only when its projection is what
        the editor holds.
    """

    projection: str
    newest: Callable[[str], Mapping[str, Any] | None]


def decimal_at_least(version: str, floor: str) -> bool:
    """``version >= floor`` for decimal resourceVersions; otherwise only equality counts."""
    if version.isdecimal() and floor.isdecimal():
        return int(version) >= int(floor)
    return version == floor


class SaveFlow:
    """The save state machine of one editor.

    :param uid: the object this editor edits; fixed for the editor's lifetime.
    :param version_at_least: orders resourceVersions to recognise the write's echo.
    """

    def __init__(self, uid: str, *, version_at_least: VersionAtLeast = decimal_at_least) -> None:
        self.uid = uid
        self.phase = Phase.IDLE
        self.last: Outcome | None = None
        self.replacement_uid: str | None = None
        self._intent: SaveIntent | None = None
        self._written_version: str | None = None
        self._version_at_least = version_at_least

    # ---- starting a Save -------------------------------------------------------------------

    @property
    def in_flight(self) -> bool:
        """A write or a guarded read is being performed."""
        return self.phase in (Phase.WRITING, Phase.READING)

    @property
    def pending_intent(self) -> SaveIntent | None:
        """The intent of the write in flight or awaiting confirmation."""
        return self._intent

    def begin(self, store: EditorStore, *, live: bool, known: KnownVersions | None = None) -> Step:
        """Decide what a deliberate Save does now. Captures the intent or the guard; never blocks.

        With ``known``, the captured intent is based on the newest known version of the object
        whose projection equals the editor's server view, when that is newer than the one held.
        """
        if self.in_flight:
            return Done(Outcome(OutcomeKind.BUSY))
        if self.phase is Phase.UNAVAILABLE or self.uid not in store.uids():
            return self._unavailable()
        if not live:
            return self._finish(Outcome(OutcomeKind.RECONNECTING), self.phase)
        if self.phase is Phase.CONFIRMING:
            return self._start_read(store, ReadReason.CONFIRM)
        if self.phase is Phase.NEEDS_READ:
            return self._start_read(store, ReadReason.RECOVER)
        conflicts = tuple(c.path for c in store.conflicts(self.uid))
        if conflicts:
            return self._finish(Outcome(OutcomeKind.DRAFT_CONFLICT, conflicts=conflicts), Phase.IDLE)
        intent = store.capture_save(self.uid)
        if intent is None:
            return self._finish(Outcome(OutcomeKind.NOTHING_TO_SAVE), Phase.IDLE)
        if known is not None:
            intent = _newest_base(store, intent, known)
        self._intent = intent
        self._written_version = None
        self.phase = Phase.WRITING
        return Write(intent)

    def not_sent(self, outcome: Outcome) -> Done:
        """The host refused the captured intent before sending it (validation, authorization)."""
        self._require(Phase.WRITING)
        self._intent = None
        return self._finish(outcome, Phase.IDLE)

    # ---- after the write ---------------------------------------------------------------------

    def written(
        self,
        store: EditorStore,
        verdict: WriteVerdict,
        *,
        status: Mapping[str, Any] | None = None,
        code: int = 0,
        written_version: str | None = None,
        redacted_paths: tuple[str, ...] = (),
    ) -> Step:
        """Record the write's verdict. A conflict or a replacement hands out a guarded read."""
        self._require(Phase.WRITING)
        if verdict is WriteVerdict.ACCEPTED:
            self._written_version = written_version
            outcome = Outcome(OutcomeKind.SAVED_PENDING)
            self.phase = Phase.CONFIRMING
            confirmed = self.observe(store)
            return Done(confirmed or self._record(outcome))
        if verdict is WriteVerdict.UNKNOWN:  # the intent is kept: the guarded read tells if it applied
            return self._finish(Outcome(OutcomeKind.UNKNOWN, detail=status_reason(status, code)), Phase.NEEDS_READ)
        self._intent = None
        if verdict in (WriteVerdict.CONFLICT, WriteVerdict.REPLACED):
            return self._start_read(store, ReadReason.AFTER_CONFLICT)
        if verdict is WriteVerdict.NOT_FOUND:
            return self._unavailable(http_status=404)
        if verdict is WriteVerdict.INVALID:
            return self._finish(Outcome(OutcomeKind.INVALID, causes=field_causes(status, redacted_paths)), Phase.IDLE)
        detail = status_detail(status, code, withheld=bool(redacted_paths))
        if verdict is WriteVerdict.FORBIDDEN:
            return self._finish(Outcome(OutcomeKind.ACCESS_DENIED, detail=detail), Phase.IDLE)
        if verdict is WriteVerdict.UNAUTHORIZED:
            return self._finish(Outcome(OutcomeKind.SIGNED_OUT), Phase.IDLE)
        return self._finish(Outcome(OutcomeKind.REJECTED, detail=detail, http_status=code or None), Phase.IDLE)

    def observe(self, store: EditorStore) -> Outcome | None:
        """Check the store after it changed: the echo of a pending write, or the object's removal.

        Returns the new outcome when there is one, else ``None``: ``SAVED``; ``DRAFT_CONFLICT`` when
        the echo conflicts with later typing; ``NOT_APPLIED`` when the echo lacks part of the patch
        (a mutating webhook restored it); ``UNAVAILABLE``.
        """
        if self.phase is Phase.UNAVAILABLE:
            return None
        if self.uid not in store.uids():
            if self.phase in (Phase.WRITING, Phase.READING):
                return None  # the request in flight reports it
            return self._unavailable().outcome
        if self.phase is not Phase.CONFIRMING or self._intent is None:
            return None
        version = _resource_version(store.server(self.uid))
        if version is None or version == self._intent.resource_version:
            return None
        if compare(version, self._intent.resource_version) == -1:
            return None  # the view still holds a version older than the intent's newer base
        if self._written_version is not None and not self._version_at_least(version, self._written_version):
            return None
        intent, self._intent = self._intent, None
        conflicts = tuple(c.path for c in store.conflicts(self.uid))
        if conflicts:
            return self._finish(Outcome(OutcomeKind.DRAFT_CONFLICT, conflicts=conflicts), Phase.IDLE).outcome
        if not kept(store, self.uid, intent.patch):  # a mutating webhook restored part of it
            return self._finish(Outcome(OutcomeKind.NOT_APPLIED), Phase.IDLE).outcome
        return self._finish(Outcome(OutcomeKind.SAVED), Phase.IDLE).outcome

    def confirm(self, store: EditorStore) -> Read | Done | None:
        """The host stopped waiting for the echo: a guarded read decides. ``None`` if nothing is pending."""
        if self.phase is not Phase.CONFIRMING:
            return None
        return self._start_read(store, ReadReason.CONFIRM)

    # ---- after the guarded read ---------------------------------------------------------------

    def read(self, store: EditorStore, step: Read, result: ReadResult) -> Done:
        """Apply a guarded read's result through the step's guard, unless it is for another uid.

        A guard refused because a newer event for the object arrived counts as refreshed: the live
        stream already advanced the base. Any other refusal leaves the flow recovering.
        """
        self._require(Phase.READING)
        if result.status == "not-found":
            return self._unavailable(http_status=404)
        if result.status == "forbidden":
            return self._finish(Outcome(OutcomeKind.ACCESS_DENIED), Phase.NEEDS_READ)
        if result.status == "unauthorized":
            return self._finish(Outcome(OutcomeKind.SIGNED_OUT), Phase.NEEDS_READ)
        if result.status == "failed" or result.obj is None:
            return self._finish(Outcome(OutcomeKind.RECOVERING), Phase.NEEDS_READ)
        read_uid = _uid(result.obj)
        if read_uid != self.uid:
            self.replacement_uid = read_uid
            return self._unavailable(replacement_uid=read_uid)
        if step.guard is None or self.uid not in store.uids():
            return self._unavailable()
        if not step.guard(result.obj, result.redacted_paths):
            refusal = getattr(step.guard, "refusal", None)
            if refusal == "removed":
                return self._unavailable()
            if refusal != "newer-event":
                return self._finish(Outcome(OutcomeKind.RECOVERING), Phase.NEEDS_READ)
        return self._refreshed(store, step.reason)

    def _refreshed(self, store: EditorStore, reason: ReadReason) -> Done:
        intent, self._intent = self._intent, None
        conflicts = tuple(c.path for c in store.conflicts(self.uid))
        if conflicts:
            return self._finish(Outcome(OutcomeKind.DRAFT_CONFLICT, conflicts=conflicts), Phase.IDLE)
        if intent is not None and kept(store, self.uid, intent.patch):
            return self._finish(Outcome(OutcomeKind.SAVED), Phase.IDLE)
        if reason is ReadReason.CONFIRM:
            return self._finish(Outcome(OutcomeKind.NOT_APPLIED), Phase.IDLE)
        if not store.dirty(self.uid):
            return self._finish(Outcome(OutcomeKind.NOTHING_TO_SAVE), Phase.IDLE)
        return self._finish(Outcome(OutcomeKind.VERSION_STALE), Phase.IDLE)

    # ---- internals ---------------------------------------------------------------------------

    def _start_read(self, store: EditorStore, reason: ReadReason) -> Read | Done:
        if self.uid not in store.uids():
            if reason is not ReadReason.AFTER_CONFLICT:
                return self._unavailable()
            guard = None  # removed meanwhile: read once anyway, to name a replacement
        else:
            guard = store.capture_reconciliation(self.uid)
        self.phase = Phase.READING
        if reason is ReadReason.AFTER_CONFLICT:
            self._intent = None
        return Read(reason, guard)

    def _unavailable(self, *, replacement_uid: str | None = None, http_status: int | None = None) -> Done:
        self._intent = None
        replacement_uid = replacement_uid or self.replacement_uid
        return self._finish(
            Outcome(OutcomeKind.UNAVAILABLE, replacement_uid=replacement_uid, http_status=http_status),
            Phase.UNAVAILABLE,
        )

    def _finish(self, outcome: Outcome, phase: Phase) -> Done:
        self.phase = phase
        return Done(self._record(outcome))

    def _record(self, outcome: Outcome) -> Outcome:
        self.last = outcome
        return outcome

    def _require(self, phase: Phase) -> None:
        if self.phase is not phase:
            raise RuntimeError(f"save flow for {self.uid} is {self.phase.value}, not {phase.value}")


def _newest_base(store: EditorStore, intent: SaveIntent, known: KnownVersions) -> SaveIntent:
    view = store.server(intent.uid)
    if view is None:
        return intent
    newest = known.newest(intent.uid)
    return newest_equivalent_base(intent, view, store.redactions(intent.uid), newest, known.projection)


def patch_applied(obj: Mapping[str, Any], patch: Mapping[str, Any]) -> bool:
    """Whether ``obj`` already holds every value of the RFC 7386 merge ``patch``.

    ``null`` means the key must be absent; objects recurse; anything else must be equal.
    ``metadata.uid`` and ``metadata.resourceVersion`` (preconditions) are not compared.
    """
    return _holds(obj, patch, top=True)


def kept(store: EditorStore, uid: str, patch: Mapping[str, Any]) -> bool:
    """Whether the server object ``store`` holds for ``uid`` shows the change ``patch`` wrote.

    It does when it holds every value of the patch, or when the draft no longer differs from it
    anywhere the patch wrote (Kubernetes normalized or defaulted a value, and the merge settled
    it). A patched value the server lacks while the draft still differs there did not stick.
    """
    if patch_applied(store.server(uid) or {}, patch):
        return True
    written = _leaf_paths(patch, ())
    return not any(_overlap(path, leaf) for path in store.dirty(uid) for leaf in written)


def _leaf_paths(patch: Mapping[str, Any], at: Path) -> list[Path]:
    out: list[Path] = []
    for key, value in patch.items():
        if at == () and key == "metadata" and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if k not in ("uid", "resourceVersion")}
            if not value:
                continue
        if isinstance(value, Mapping) and value:
            out += _leaf_paths(value, (*at, key))
        else:
            out.append((*at, key))
    return out


def _overlap(a: Path, b: Path) -> bool:
    n = min(len(a), len(b))
    return tuple(a[:n]) == tuple(b[:n])


def _holds(obj: Mapping[str, Any], patch: Mapping[str, Any], *, top: bool = False) -> bool:
    for key, value in patch.items():
        if value is None:
            if key in obj:
                return False
        elif isinstance(value, Mapping):
            current = obj.get(key)
            if top and key == "metadata":
                value = {k: v for k, v in value.items() if k not in ("uid", "resourceVersion")}
            if not isinstance(current, Mapping):
                if value:
                    return False
                continue
            if not _holds(current, value):
                return False
        elif obj.get(key, _ABSENT) != value:
            return False
    return True


_ABSENT = object()


def _uid(obj: Mapping[str, Any]) -> str | None:
    metadata = obj.get("metadata")
    uid = metadata.get("uid") if isinstance(metadata, Mapping) else None
    return uid if isinstance(uid, str) else None


def _resource_version(obj: Mapping[str, Any] | None) -> str | None:
    metadata = obj.get("metadata") if obj else None
    version = metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None
    return version if isinstance(version, str) else None
