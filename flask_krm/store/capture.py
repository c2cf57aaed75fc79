"""Save capture: what a Save sends, and the server objects a save or a guarded read brings back.

A save intent holds the uid, the resourceVersion the draft was merged against and the merge patch
of the person's changes; a save's result is adopted for this store only (the watch echo of it
then changes nothing); a read started after :meth:`SaveCapture.capture_reconciliation` is adopted
only when no newer delivery or snapshot came meanwhile. Pure: no Flask, no gevent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..events import Redaction
from .errors import (
    InvalidEventError,
    UnversionedResourceError,
)
from .held import StoreCore
from .intents import SaveIntent
from .reconcile import Reconciliation, Refusal, resolve_redactions
from .truth import uid_of


class SaveCapture(StoreCore):
    """Capture save intents and adopt what saves and guarded reads bring back."""

    def adopt_saved(self, obj: Mapping[str, Any], redacted: Sequence[Redaction] | None = None) -> None:
        """Adopt a projected object synchronously: a created object, or a save's result.

        A known uid is merged like a server event (later edits survive) and keeps its redactions
        unless ``redacted`` is given; the watch echo of the same object is then a no-op. Unguarded:
        never pass a delayed response (use :meth:`capture_reconciliation`) or a raw object.
        """
        uid = uid_of(obj)
        with self._lock:
            held = self._resources.get(uid)
            if held is None:
                server = self._visible(uid)
                held = None if server is None else self._materialized(server)
            if redacted is not None:
                redactions = tuple(redacted)
            else:
                redactions = held.redactions if held is not None else ()
            changed = self._upsert(uid, obj, redactions)
        self._notify(changed)

    def remove_resource(self, uid: str) -> bool:
        """Drop ``uid`` and its draft now (an optimistic delete); False when it was not held."""
        with self._lock:
            if uid in self._hidden or (uid not in self._resources and uid not in self._truth):
                return False
            self._drop(uid)
            if uid in self._truth:
                self._hidden.add(uid)
        self._notify({uid})
        return True

    def capture_save(self, uid: str) -> SaveIntent | None:
        """The save intent for ``uid``: uid, held resourceVersion and patch, or None when clean."""
        with self._lock:
            held = self._get(uid)
            patch = self._patch_of(held)
            if patch is None:
                return None
            version = held.server.get("metadata", {}).get("resourceVersion")
            if not isinstance(version, str) or not version:
                raise UnversionedResourceError(uid)
            return SaveIntent(uid, version, patch)

    def capture_reconciliation(self, uid: str) -> Reconciliation:
        """A guard for a read of ``uid`` started after this call; see :class:`Reconciliation`."""
        with self._lock:
            tick = self._get(uid).tick
            epoch = self._truth.epoch

        def accept(obj: Any, paths: Sequence[str] | None, redacted: Sequence[Redaction] | None) -> Refusal | None:
            with self._lock:
                refusal = self._refusal(uid, tick, epoch, obj)
                if refusal is not None:
                    return refusal
                held = self._get(uid)
                redactions = resolve_redactions(held.redactions, paths, redacted)
                if redactions is None:
                    return Refusal.UNKNOWN_REDACTION
                try:
                    self._upsert(uid, obj, redactions)
                except InvalidEventError:
                    return Refusal.UNKNOWN_REDACTION
            self._notify({uid})
            return None

        return Reconciliation(uid, accept)

    def _refusal(self, uid: str, tick: int, epoch: int, obj: Any) -> Refusal | None:
        if self._truth.epoch != epoch:
            return Refusal.SNAPSHOT
        held = self._find(uid)
        if held is None:
            return Refusal.REMOVED
        if held.tick != tick:
            return Refusal.NEWER_EVENT
        try:
            read_uid = uid_of(obj)
        except InvalidEventError:
            return Refusal.INVALID_OBJECT
        return Refusal.REPLACED if read_uid != uid else None
