"""Edit records: what the person did to an object, to keep elsewhere and restore (another worker,
a reload). Recovery copies of drafts whose objects disappear are kept by :class:`StoreCore`.
Pure: no Flask, no gevent.
"""

from __future__ import annotations

from .held import StoreCore
from .journal import Edit, EditRecord
from .patch import changes
from .paths import MISSING
from .values import json_copy


class EditRecords(StoreCore):
    """Read and restore records of what the person did."""

    def edit_record(self, uid: str) -> EditRecord | None:
        """What the person did to ``uid`` (edits with their bases, open conflicts), or None when
        ``uid`` is not held. A clean object gives a record without edits."""
        with self._lock:
            held = self._resources.get(uid)
            if held is None:  # clean: nothing done here, so no need to read the truth's object
                return self._restoring.get(uid) if self._visible(uid) is None else EditRecord(uid, (), (), 0)
            edits = tuple(
                Edit(
                    c.path,
                    MISSING if c.kind == "add" else json_copy(c.old),
                    MISSING if c.kind == "delete" else json_copy(c.new),
                )
                for c in changes(held.regions, held.server, held.draft)
            )
            return EditRecord(uid, edits, tuple(c.path for c in self._open_conflicts(held)), held.sequence)

    def restore(self, record: EditRecord) -> None:
        """Make ``record`` the person's draft of its object: at once when the object is held,
        otherwise when it arrives (a snapshot cycle that ends without it forgets the record).

        The record replaces the draft held. Its edits merge three-way into the server object: an
        edit whose base the server has since changed becomes a conflict (or converges), and the
        conflicts it names stay open while the draft and the server still disagree there. A record
        older than the draft held (a lower :meth:`edit_sequence`) changes nothing.
        """
        with self._lock:
            held = self._find(record.uid)
            if held is None:
                waiting = self._restoring.get(record.uid)
                if waiting is None or waiting.sequence <= record.sequence:
                    self._restoring[record.uid] = record
                return
            if record.sequence < held.sequence:
                return
            self._resources[record.uid] = held
            changed = self._replay(record.uid, held, record)
        self._notify(changed)
