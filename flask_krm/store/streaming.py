"""Stream application: protocol events and shared-truth changes merged into the person's drafts.

A store with a private truth applies events itself (:meth:`StreamApplication.apply`); one that
follows a shared truth is told what changed by the truth's writer (``truth_changed``) and can
stop following it for a while (``detach``/``reattach``). Every server change is merged three-way
into the drafts held, so an edit is kept, converges, or becomes a conflict holding the server's
value. Pure: no Flask, no gevent.
"""

from __future__ import annotations

from ..events import Event
from .held import Held, StoreCore
from .merge import three_way_merge
from .truth import ServerObject, TruthChange
from .values import share


class StreamApplication(StoreCore):
    """Apply the stream's server changes to what the person holds."""

    def detach(self) -> None:
        """Stop following the shared truth: the store keeps the objects it holds now (the same
        immutable objects, no copies) and takes no more server changes, as a store whose stream
        ended. Edits go on. Nothing for a store with a private truth, or one already detached."""
        with self._lock:
            if not self._shared or self._followed is not None:
                return
            self._followed, self._truth = self._truth, self._truth.frozen()

    def reattach(self) -> None:
        """Follow the shared truth again after :meth:`detach`: what changed on the server meanwhile
        is merged as one snapshot cycle would be, and notified."""
        with self._lock:
            shared, held = self._followed, self._truth
            if shared is None:
                return
            self._followed, self._truth = None, shared
            now = {uid: shared.get(uid) for uid in shared.uids()}
            moved = frozenset(uid for uid, server in now.items() if server is not held.get(uid))
            dropped = {uid: server for uid in held.uids() if uid not in now and (server := held.get(uid)) is not None}
            changed = self._absorb(TruthChange(moved, moved, dropped, cycle_ended=True))
        self._notify(changed)

    def diverged(self) -> bool:
        """Whether this store shows a server object other than the truth's: one it removed (an
        optimistic delete) or adopted (a save's result, a guarded read) before the truth caught up."""
        if not self._hidden and not self._resources:
            return False  # holds nothing of its own (read without the lock: each is replaced whole or read once)
        with self._lock:
            if self._hidden:
                return True
            truth = self._truth
            for uid, held in self._resources.items():
                server = truth.get(uid)
                if server is None or server.object is not held.server:
                    return True
            return False

    def apply(self, event: Event) -> set[str]:
        """Apply one protocol event; return the uids whose state changed (and notify subscribers).

        ``reset`` opens a snapshot cycle (prunes nothing); ``added``/``modified`` replace the server
        object and merge it into the draft; ``deleted`` drops the uid; ``synced`` prunes every uid
        the cycle did not resend; errors change nothing. Re-applying an event changes nothing.
        A store following a shared truth applies the event to the truth, for every store of it.
        """
        if self._shared:
            change = (self._followed or self._truth).apply(event)
            return set(change.changed) | set(change.dropped)
        with self._lock:
            changed = self._absorb(self._truth.apply(event, notify=False))
        self._notify(changed)
        return changed

    def truth_changed(self, change: TruthChange) -> None:
        """The shared truth changed (called by its writer): merge into the drafts, notify."""
        with self._lock:
            if self._followed is not None:
                return  # detached: :meth:`reattach` catches up
            changed = self._absorb(change)
        self._notify(changed)

    @property
    def snapshot_complete(self) -> bool:
        """A snapshot cycle has reached ``synced`` and no newer one is open."""
        return self._truth.snapshot_complete

    def _absorb(self, change: TruthChange) -> set[str]:
        """Bring what the person did in line with ``change`` of the truth; the uids to notify."""
        changed: set[str] = set()
        truth = self._truth
        for uid in change.touched:
            server = truth.get(uid)
            if server is None:
                continue
            if uid in self._hidden:
                self._hidden.discard(uid)
                changed.add(uid)
            held = self._resources.get(uid)
            if held is None:
                record = self._restoring.pop(uid, None)
                if record is not None:
                    held = self._resources[uid] = self._materialized(server)
                    self._replay(uid, held, record)
                    changed.add(uid)
                elif uid in change.changed:
                    changed.add(uid)
                continue
            if self._merge(held, server):
                changed.add(uid)
        for uid in change.dropped:
            if uid in self._hidden:
                self._hidden.discard(uid)
                continue
            self._drop(uid)
            changed.add(uid)
        if change.cycle_ended:
            for uid in [uid for uid in self._resources if uid not in truth]:
                changed |= self._drop(uid)
            for uid in [uid for uid in self._restoring if uid not in truth]:
                del self._restoring[uid]
            self._hidden &= set(truth.uids())
        return changed

    def _merge(self, held: Held, server: ServerObject) -> bool:
        """Merge the truth's newer ``server`` object into ``held``'s draft three-way."""
        held.tick = server.tick
        if share(server.object, held.server) is held.server and server.redactions == held.redactions:
            if held.draft is held.server:
                held.draft = server.object
            held.server = server.object  # the same content: read the truth's copy, keep none
            return False
        theirs = server.object
        regions = server.regions(self.policy)
        lists = self._keyed_lists(theirs)
        merged = three_way_merge(held.server, held.draft, theirs, regions, lists, held.conflicts)
        held.previous = (held.server, held.draft)
        held.server, held.draft, held.redactions = theirs, merged.draft, server.redactions
        held.regions, held.lists, held.conflicts = regions, lists, merged.conflicts
        return True
